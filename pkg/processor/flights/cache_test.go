package flights_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/flight"
	"github.com/msgx/msgx/pkg/flightstore"
	"github.com/msgx/msgx/pkg/processor"
)

// INV-11b: the processor's flight cache is a source for writes (a batch merges onto the state it
// hands out), validated row by row: an entry is used only when its flight row is still the one it
// was read or written as (xmin, read in the batch's transaction under PIPELINE_LOCK). Leader A
// caches a flight, leader B (its own cache) changes it while A stands by, and A's next message
// applies on top of B's change: no version is written twice, B's value and provenance stay.
func TestStaleCacheEntryIsNeverWrittenBack(t *testing.T) {
	t.Parallel()
	e := setup(t, 10)
	const flid = 7010
	e.run(t, headerAt("SCHD", "DNLD", "20261202060000")+fmt.Sprintf(`<SCHD><RECS>1</RECS><FLTR>%s</FLTR></SCHD></MSG>`,
		fltr(flid, "YG9028", "02DEC261135", "<ESTT>02DEC261135</ESTT>")))
	require.Equal(t, 1, e.cache.Len(), "A keeps the flight it wrote")

	b := processor.New(processor.Config{
		Batch: 10, MaxAttempts: 5, BackoffBase: time.Second, BackoffMax: time.Minute,
		HeadDeadline: 10 * time.Minute, IdlePoll: 10 * time.Millisecond, Location: airport,
	}, e.db.Pool, processors(flightstore.NewCache(100)), nil, e.clock, nil, zerolog.Nop())
	byB := e.enqueue(t, esttAt(flid, "20261202102200", "02DEC261240"))[0]
	stepAll(t, b, e)
	require.Equal(t, "SUCCEEDED", e.outcome(t, byB).Status)
	afterB := e.state(t, flid)
	require.Equal(t, int64(2), afterB.Version)

	byA := e.enqueue(t, flop("STND", flid, "<STND>G12</STND>"))[0]
	stepAll(t, e.pump, e) // A, its entry of version 1 stale
	require.Equal(t, "SUCCEEDED", e.outcome(t, byA).Status)
	s := e.state(t, flid)
	require.Equal(t, int64(3), s.Version, "A wrote a version over B's from its stale entry")
	j := stateJSON(t, s)
	require.Equal(t, "2026-12-02T12:40:00", j["estt"], "B's value")
	require.Equal(t, "G12", j["stnd"])
	require.Equal(t, afterB.P.F[flight.ESTT], s.P.F[flight.ESTT], "B's provenance of ESTT")
	var versions []int64
	for _, ev := range e.msgEvents(t, flid) {
		versions = append(versions, ev.Version)
	}
	require.Equal(t, []int64{1, 2, 3}, versions, "one event per version")
	require.NoError(t, pgx.BeginFunc(context.Background(), e.db.Pool, func(tx pgx.Tx) error {
		return e.cache.Verify(context.Background(), tx)
	}), "A's cache differs from the database")
}

// stepAll steps p until idle (without the cache check of env.drain).
func stepAll(t *testing.T, p *processor.Engine, e *env) {
	t.Helper()
	for {
		res, err := p.Step(context.Background(), e.lease)
		require.NoError(t, err)
		if res.Idle {
			return
		}
	}
}
