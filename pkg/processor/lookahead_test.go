package processor_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/processor"
	"github.com/msgx/msgx/pkg/procstate"
	"github.com/msgx/msgx/pkg/sis"
)

// readAheadPump is b's pump with its metrics, batches of two, reading ahead when ahead.
func readAheadPump(t *testing.T, b *bundle, ahead bool) (*processor.Engine, *processor.Metrics) {
	t.Helper()
	b.cfg.Batch, b.cfg.ReadAhead = 2, ahead
	m := processor.NewMetrics(nil)
	return processor.New(b.cfg, b.db.Pool, b.procs, nil, b.clock, m, zerolog.Nop()), m
}

// TestNextBatchIsReadWhileOneCommits: each batch after the first of a backlog comes from the run
// read and decoded while the batch before it committed, in msg_id order.
func TestNextBatchIsReadWhileOneCommits(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rec := &recorder{}
	b.procs[sis.KindFlightUpdate] = rec
	b.enqueueSeq(t, 1, 7, func(id int64) string { return flop(int(id), 15, "S1") })
	p, m := readAheadPump(t, b, true)
	b.drain(t, p)
	require.Equal(t, []int64{1, 2, 3, 4, 5, 6, 7}, rec.order)
	require.Equal(t, 3.0, testutil.ToFloat64(m.ReadAhead("used")), "batches 3–4, 5–6 and 7 were read ahead")
	require.Equal(t, 0.0, testutil.ToFloat64(m.ReadAhead("dropped")))
}

// TestLateRowBelowTheBacklogIsNext: a late row that appears below the open rows left after a
// batch (after the run behind it was read ahead, when the engine reads ahead) is the head: it is
// processed first, and a run read ahead is read again.
func TestLateRowBelowTheBacklogIsNext(t *testing.T) {
	t.Parallel()
	for _, ahead := range []bool{false, true} {
		t.Run(fmt.Sprintf("read ahead %v", ahead), func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			rec := &recorder{}
			b.procs[sis.KindFlightUpdate] = rec
			raws := map[int64]*string{}
			for _, id := range []int64{1, 2, 5, 6, 7, 8} {
				s := flop(int(id), 15, "S1")
				raws[id] = &s
			}
			b.enqueue(t, raws) // W = 8; 3 and 4 are gaps
			p, m := readAheadPump(t, b, ahead)
			ctx := context.Background()
			res, err := p.Step(ctx, b.lease)
			require.NoError(t, err)
			require.Equal(t, 2, res.Processed)
			p.WaitAhead() // 5 and 6 read ahead, when the engine reads ahead

			late := flop(3, 15, "S3")
			_, err = b.db.Pool.Exec(ctx, `INSERT INTO proc_state (msg_id, raw, raw_sha256, enqueued_at, late)
				VALUES (3, $1, sha256(convert_to($1::text, 'UTF8')), $2, true)`, late, b.clock.Now())
			require.NoError(t, err)
			b.drain(t, p)
			require.Equal(t, []int64{1, 2, 3, 5, 6, 7, 8}, rec.order, "the late row first, as a head read finds it")
			moved := 0.0
			if ahead {
				moved = 1
			}
			require.Equal(t, moved, testutil.ToFloat64(m.ReadAhead("moved")))
		})
	}
}

// TestReadAheadIsDroppedAfterAFailure: a FAILED message holds the head, so the run read behind
// it is not the next batch; after its retry every message is processed once, in order.
func TestReadAheadIsDroppedAfterAFailure(t *testing.T) {
	t.Parallel()
	b := setup(t)
	failed := false
	rec := &recorder{fail: func(m processor.Message) error {
		if m.ID == 2 && !failed {
			failed = true
			return processor.Errorf(procstate.ClassInfra, "down for a moment")
		}
		return nil
	}}
	b.procs[sis.KindFlightUpdate] = rec
	b.enqueueSeq(t, 1, 6, func(id int64) string { return flop(int(id), 15, "S1") })
	p, m := readAheadPump(t, b, true)
	b.drain(t, p)
	require.Equal(t, "FAILED", b.row(t, 2).Status)
	require.Equal(t, 1.0, testutil.ToFloat64(m.ReadAhead("dropped")))
	b.clock.Advance(b.cfg.BackoffMax)
	b.drain(t, p)
	require.Equal(t, []int64{1, 2, 3, 4, 5, 6}, effects(t, b))
}
