package flights_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/dev/simulate"
	"github.com/msgx/msgx/pkg/dev/testdb"
	"github.com/msgx/msgx/pkg/dev/verify"
)

// TestSimulatedDayInstants runs a simulated day through the processor in an airport zone
// and reads every event it wrote: beside each wall-clock time is the instant it names in that
// zone (MSGX_AIRPORT_TZ), and on the days Europe/Berlin changes its clocks the wall times of
// the skipped or repeated hour have a null instant (docs/events.md, "Times").
func TestSimulatedDayInstants(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, zone string
		date       time.Time
		clockMoves bool
	}{
		{"Shanghai", "Asia/Shanghai", time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC), false},
		{"Berlin summer time starts", "Europe/Berlin", time.Date(2026, 3, 29, 0, 0, 0, 0, time.UTC), true},
		{"Berlin summer time ends", "Europe/Berlin", time.Date(2026, 10, 25, 0, 0, 0, 0, time.UTC), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			loc, err := time.LoadLocation(c.zone)
			require.NoError(t, err)
			day := simulate.Generate(simulate.Config{Seed: 43, Flights: 120, Additions: 4, Date: c.date, Location: loc})
			raws := make([]string, len(day.Messages))
			for i, m := range day.Messages {
				raws[i] = string(m.Raw)
			}
			db := testdb.New(t)
			e := setupOn(t, db, db.Pool, db.Pool, 200, loc)
			e.run(t, raws...)

			if c.clockMoves {
				// The AODB's own clock may name a time in the changing hour, which the
				// simulator (working in the zone) never writes: 02:30 is skipped in March,
				// repeated in October.
				var flid int64
				require.NoError(t, db.Pool.QueryRow(context.Background(), `SELECT min(flid) FROM flight WHERE state = 'ACTIVE'`).Scan(&flid))
				at := strings.ToUpper(time.Date(c.date.Year(), c.date.Month(), c.date.Day(), 2, 30, 0, 0, time.UTC).Format("02Jan061504"))
				e.run(t, flop("ESTT", flid, "<ESTT>"+at+"</ESTT>"))
			}

			var n verify.InstantCount
			bodies := 0
			rows, _ := db.Pool.Query(context.Background(), `SELECT COALESCE(body, payload::text) FROM `+testdb.AllEvents+` WHERE COALESCE(body, payload::text) IS NOT NULL ORDER BY event_id`)
			values, err := pgx.CollectRows(rows, pgx.RowTo[string])
			require.NoError(t, err)
			for _, v := range values {
				require.Empty(t, verify.ValueInstants([]byte(v), loc, &n), "event %s", v)
				bodies++
			}
			t.Logf("%d events: %d instants named, %d wall times of a clock change", bodies, n.Named, n.Unnamed)
			require.Positive(t, n.Named)
			if c.clockMoves {
				require.Positive(t, n.Unnamed, "the day should have wall times in the hour the clocks change")
			} else {
				require.Zero(t, n.Unnamed)
			}
		})
	}
}
