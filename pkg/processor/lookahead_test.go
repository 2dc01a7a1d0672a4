package processor_test

import (
	"context"
	"errors"
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

// TestNoReadAheadBesideAMessageAlone: the run behind a message that runs alone is not read ahead
// while it runs, so a death during that attempt (which is charged to the message: attemptMark) is
// never the read-ahead's. Here: a head that ran alone when the process died, and a FAILED head's
// retry, each with a backlog behind it.
func TestNoReadAheadBesideAMessageAlone(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name  string
		setUp func(t *testing.T, b *bundle, rec *recorder)
	}{
		{"died alone", func(t *testing.T, b *bundle, _ *recorder) {
			_, err := b.db.Pool.Exec(context.Background(),
				`UPDATE proc_state SET processing_started_at = $1, processing_through = 1 WHERE msg_id = 1`, b.clock.Now())
			require.NoError(t, err)
		}},
		{"FAILED", func(t *testing.T, b *bundle, rec *recorder) {
			rec.fail = func(m processor.Message) error {
				if m.ID == 1 && b.row(t, 1).Attempts == 0 {
					return errors.New("connection reset by peer")
				}
				return nil
			}
			p, _ := readAheadPump(t, b, false)
			res, err := p.Step(context.Background(), b.lease)
			require.NoError(t, err)
			require.True(t, res.Failed)
			require.Equal(t, "FAILED", b.row(t, 1).Status)
			b.clock.Advance(b.cfg.BackoffMax)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			rec := &recorder{}
			b.procs[sis.KindFlightUpdate] = rec
			b.enqueueSeq(t, 1, 7, func(id int64) string { return flop(int(id), 15, "S1") })
			c.setUp(t, b, rec)
			p, m := readAheadPump(t, b, true)
			res, err := p.Step(context.Background(), b.lease)
			require.NoError(t, err)
			require.Equal(t, 1, res.Processed, "the head alone")
			b.drain(t, p)
			require.Equal(t, []int64{1, 2, 3, 4, 5, 6, 7}, rec.order[len(rec.order)-7:])
			require.Equal(t, 2.0, testutil.ToFloat64(m.ReadAhead("used")),
				"only the runs behind batches of two were read ahead (4–5 and 6–7), none beside 1 alone")
		})
	}
}
