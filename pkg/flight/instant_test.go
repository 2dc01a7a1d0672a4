package flight_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/flight"
)

func zone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	require.NoError(t, err)
	return loc
}

// TestInstant: a wall-clock time names the instant the airport's clock shows it at, with the
// airport's offset then; on the days the clocks change, a wall time they skip or repeat names
// none (docs/events.md).
func TestInstant(t *testing.T) {
	t.Parallel()
	berlin, shanghai, saoPaulo := zone(t, "Europe/Berlin"), zone(t, "Asia/Shanghai"), zone(t, "America/Sao_Paulo")
	wall := func(s string) time.Time {
		w, err := time.Parse(flight.TimeLayout, s)
		require.NoError(t, err)
		return w
	}
	for _, c := range []struct {
		loc  *time.Location
		wall string
		want string // "" : none
	}{
		{shanghai, "2021-01-23T08:00:00", "2021-01-23T08:00:00+08:00"},
		{shanghai, "2021-01-23T00:00:00", "2021-01-23T00:00:00+08:00"},
		{time.UTC, "2021-01-23T08:00:00", "2021-01-23T08:00:00Z"},
		{berlin, "2026-01-10T12:00:00", "2026-01-10T12:00:00+01:00"},
		{berlin, "2026-07-10T12:00:00", "2026-07-10T12:00:00+02:00"},
		// Summer time starts on 2026-03-29: 02:00 becomes 03:00.
		{berlin, "2026-03-29T01:59:00", "2026-03-29T01:59:00+01:00"},
		{berlin, "2026-03-29T02:00:00", ""},
		{berlin, "2026-03-29T02:30:00", ""},
		{berlin, "2026-03-29T02:59:00", ""},
		{berlin, "2026-03-29T03:00:00", "2026-03-29T03:00:00+02:00"},
		// It ends on 2026-10-25: 03:00 becomes 02:00, so 02:00 to 02:59 occur twice.
		{berlin, "2026-10-25T01:59:00", "2026-10-25T01:59:00+02:00"},
		{berlin, "2026-10-25T02:00:00", ""},
		{berlin, "2026-10-25T02:30:00", ""},
		{berlin, "2026-10-25T02:59:00", ""},
		{berlin, "2026-10-25T03:00:00", "2026-10-25T03:00:00+01:00"},
		// A change at midnight (Sao Paulo 2018-11-04: 00:00 became 01:00).
		{saoPaulo, "2018-11-04T00:30:00", ""},
		{saoPaulo, "2018-11-04T01:00:00", "2018-11-04T01:00:00-02:00"},
		{saoPaulo, "2018-11-03T23:59:00", "2018-11-03T23:59:00-03:00"},
	} {
		got, ok := flight.Instant(wall(c.wall), c.loc)
		if c.want == "" {
			require.False(t, ok, "%s in %s names %s", c.wall, c.loc, got)
			continue
		}
		require.True(t, ok, "%s in %s", c.wall, c.loc)
		require.Equal(t, c.want, got.Format(flight.InstantLayout), "%s in %s", c.wall, c.loc)
	}
}

// TestStateInstants: with a zone, every time field and time column of the published state has
// its instant beside it (null beside a null time and beside a wall time of a clock change);
// without one (the console's view) there are none.
func TestStateInstants(t *testing.T) {
	t.Parallel()
	berlin := zone(t, "Europe/Berlin")
	s := flight.State{FLID: 7, Status: flight.Active, Version: 1, OperationDay: "2026-10-25"}
	s.F[flight.SODT] = flight.Time(time.Date(2026, 10, 25, 8, 0, 0, 0, time.UTC))
	s.F[flight.ESTT] = flight.Time(time.Date(2026, 10, 25, 2, 30, 0, 0, time.UTC))
	s.C[flight.ROUT] = []flight.Row{{flight.Int(1), flight.Text("PEK"), flight.Time(time.Date(2026, 10, 24, 23, 5, 0, 0, time.UTC))}}
	got := string(s.AppendJSONIn(nil, berlin))
	require.Contains(t, got, `"sodt":"2026-10-25T08:00:00","sodt_instant":"2026-10-25T08:00:00+01:00"`)
	require.Contains(t, got, `"estt":"2026-10-25T02:30:00","estt_instant":null`, "02:30 occurs twice that night")
	require.Contains(t, got, `"actt":null,"actt_instant":null`)
	require.Contains(t, got, `"rout":[{"rtno":1,"apcd":"PEK","scat":"2026-10-24T23:05:00","scat_instant":"2026-10-24T23:05:00+02:00","scdt":null,"scdt_instant":null}]`,
		"a route time at another airport is in the home airport's clock")
	require.NotContains(t, string(s.AppendJSON(nil)), flight.InstantSuffix)
}
