package console_test

import (
	"context"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/dev/simulate"
	"github.com/msgx/msgx/pkg/leader"
)

// TestRatesFromTheDatabaseUnderLoad: while the processor works through a second simulated day
// (small batches, its clock moving), every reading of the pipeline's finished-per-minute lies
// within 10% of what proc_state counts just before and just after it; once it is idle, each
// outcome's rate and the ingested rate are what proc_state counts. Every console replica reads
// the same: the figures come from the database, not a process's memory.
func TestRatesFromTheDatabaseUnderLoad(t *testing.T) {
	t.Parallel()
	w := setup(t)
	w.clk.Advance(2 * time.Minute) // the first day's messages out of the 1-minute window
	day := simulate.Generate(simulate.Config{Seed: 3, Flights: 150, BadShare: 0.05, Location: w.loc,
		Date: time.Date(2026, 3, 16, 0, 0, 0, 0, time.UTC), FirstFLID: 300001, FirstSEQN: 600000})
	for _, m := range day.Messages {
		w.lastID++
		w.insert(t, w.lastID, string(m.Raw))
	}
	_, err := w.db.Pool.Exec(ctx, `UPDATE inbox_cursor SET watermark = $1`, w.lastID)
	require.NoError(t, err)

	// The load: small batches, the clock 100 ms on after each (the day stays within the window).
	eng := w.engine(10)
	load, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan error, 1)
	go func() {
		lease := leader.Lease{Role: "processor", Epoch: 1}
		for load.Err() == nil {
			res, err := eng.Step(load, lease)
			if err != nil || res.Idle {
				done <- err
				return
			}
			w.clk.Advance(100 * time.Millisecond)
		}
		done <- load.Err()
	}()

	op := w.login(t, operatorToken)
	finished := func() float64 {
		return float64(w.count(t, `SELECT count(*) FROM proc_state WHERE status IN ('SUCCEEDED', 'SKIPPED', 'DEAD')
			AND finished_at > $1::timestamptz - interval '1 minute' AND finished_at <= $1`, w.clk.Now()))
	}
	readings := 0
	for idle := false; !idle; {
		select {
		case err := <-done:
			require.NoError(t, err)
			idle = true
		default:
		}
		before := finished()
		page := pipelinePage(t, w, op)
		after := finished()
		shown := rateOf(t, page, "rate-finished")
		require.GreaterOrEqual(t, shown, 0.9*before, "the page's finished/min against proc_state's before it")
		require.LessOrEqual(t, shown, 1.1*after, "and after it")
		if !idle && before > 0 {
			readings++
		}
	}
	require.Positive(t, readings, "read while the processor worked")

	page := pipelinePage(t, w, op)
	for _, st := range []string{"SUCCEEDED", "SKIPPED", "DEAD"} {
		n := w.count(t, `SELECT count(*) FROM proc_state WHERE status = $2 AND finished_at > $1::timestamptz - interval '1 minute' AND finished_at <= $1`, w.clk.Now(), st)
		require.InDelta(t, float64(n), rateOf(t, page, "rate-"+st), 0.05, st)
	}
	require.InDelta(t, float64(len(day.Messages)), rateOf(t, page, "rate-ingested"), 0.05, "every message of the day was enqueued within the minute")
	require.NotZero(t, rateOf(t, page, "rate-DEAD"), "the day's bad messages")
}

// pipelinePage is the pipeline page over the last minute.
func pipelinePage(t *testing.T, w *world, op *http.Client) string {
	t.Helper()
	code, body := get(t, op, w.srv.URL+"/?window=1m0s")
	require.Equal(t, http.StatusOK, code)
	return body
}

func rateOf(t *testing.T, body, id string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(text(byID(parseHTML(t, body), id)), 64)
	require.NoError(t, err, id)
	return v
}
