package sis_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/sis"
)

// TestWallTimesKeepTheirClock: a SIS time is the airport's wall clock as the AODB wrote it, also
// in the hour the clocks skip (where time.Date would move it) or repeat.
func TestWallTimesKeepTheirClock(t *testing.T) {
	t.Parallel()
	berlin, err := time.LoadLocation("Europe/Berlin")
	require.NoError(t, err)
	saoPaulo, err := time.LoadLocation("America/Sao_Paulo")
	require.NoError(t, err)
	for _, c := range []struct {
		in   string
		loc  *time.Location
		wall string
	}{
		{"29MAR260230", berlin, "2026-03-29 02:30"},
		{"29MAR260300", berlin, "2026-03-29 03:00"},
		{"25OCT260230", berlin, "2026-10-25 02:30"},
		{"04NOV180030", saoPaulo, "2018-11-04 00:30"},
	} {
		got, ok := sis.ParseDateTime(c.in, c.loc)
		require.True(t, ok, c.in)
		require.Equal(t, c.wall, got.Format("2006-01-02 15:04"), c.in)
	}
	day, ok := sis.ParseDate("04NOV18", saoPaulo)
	require.True(t, ok)
	require.Equal(t, "2018-11-04 00:00", day.Format("2006-01-02 15:04"), "a day whose midnight is skipped")
	stamp, ok := sis.ParseStamp("20260329023000", berlin)
	require.True(t, ok)
	require.Equal(t, "2026-03-29 02:30:00", stamp.Format(time.DateTime))
}
