package processor_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/dev/corpus"
	"github.com/msgx/msgx/pkg/processor"
	"github.com/msgx/msgx/pkg/procstate"
	"github.com/msgx/msgx/pkg/roles"
	"github.com/msgx/msgx/pkg/sis"
)

// outcomes lists a message's attempts as "OUTCOME CLASS" strings.
func outcomes(t *testing.T, b *bundle, id int64) []string {
	t.Helper()
	as, err := procstate.Attempts(context.Background(), b.db.Pool, id)
	require.NoError(t, err)
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = strings.TrimSpace(a.Outcome + " " + a.Class)
	}
	return out
}

// Every attempt of a message is kept with its time, epoch, outcome, class and reason, written
// with the outcome; a message that failed to decode keeps the META it carried.
func TestAttemptHistory(t *testing.T) {
	t.Parallel()
	b := setup(t)
	fails := 0
	b.procs[sis.KindFlightUpdate] = &recorder{fail: func(m processor.Message) error {
		if m.ID == 2 && fails < 2 {
			fails++
			return fmt.Errorf("database hiccup %d", fails)
		}
		return nil
	}}
	sample, err := os.ReadFile(corpus.File("FLOP/01_FDIV.xml"))
	require.NoError(t, err)
	protocolS := strings.Replace(string(sample), `DDIR="TO"`, `DDIR="TOO"`, 1)
	dupSeqn := strings.Replace(flop(3, 15, "S"), "<SEQN>3</SEQN>", "<SEQN>3</SEQN><SEQN>4</SEQN>", 1)
	good := flop(2, 15, "S")
	b.enqueue(t, map[int64]*string{1: &protocolS, 2: &good, 3: &dupSeqn})
	p := b.pump(t)
	for range 3 {
		b.drain(t, p)
		b.clock.Advance(time.Minute)
	}

	// The DEAD PROTOCOL row keeps the META read: TYPE/STYP on the row, all of it on the attempt.
	var typ, styp *string
	require.NoError(t, b.db.Pool.QueryRow(context.Background(), `SELECT msg_type, msg_styp FROM proc_state WHERE msg_id = 1`).Scan(&typ, &styp))
	require.Equal(t, "FLOP", *typ)
	require.Equal(t, "FDIV", *styp)
	as, err := procstate.Attempts(context.Background(), b.db.Pool, 1)
	require.NoError(t, err)
	require.Len(t, as, 1)
	require.Equal(t, "DEAD", as[0].Outcome)
	require.Equal(t, "PROTOCOL", as[0].Class)
	require.Contains(t, as[0].Reason, "DDIR")
	require.Equal(t, "FLOP", as[0].Meta["TYPE"])
	require.NotEmpty(t, as[0].Meta["SEQN"])
	require.Equal(t, as[0].Meta["SNDR"]+"|FLOP|FDIV|"+as[0].Meta["SEQN"], as[0].Meta["identity"], "the identity it would have, shown (never bound)")
	var bound int
	require.NoError(t, b.db.Pool.QueryRow(context.Background(), `SELECT count(*) FROM msg_identity WHERE msg_id = 1`).Scan(&bound))
	require.Zero(t, bound)

	// A META-level rejection keeps what was read before it.
	as, err = procstate.Attempts(context.Background(), b.db.Pool, 3)
	require.NoError(t, err)
	require.Len(t, as, 1)
	require.Equal(t, "DEAD PROTOCOL", as[0].Outcome+" "+as[0].Class)
	require.Equal(t, "AODB", as[0].Meta["SNDR"])
	require.Equal(t, "3", as[0].Meta["SEQN"])

	// Two failures then a success: three attempts, each with its own reason, time and epoch.
	as, err = procstate.Attempts(context.Background(), b.db.Pool, 2)
	require.NoError(t, err)
	require.Equal(t, []string{"FAILED INFRA", "FAILED INFRA", "SUCCEEDED"}, outcomes(t, b, 2))
	require.Equal(t, "database hiccup 1", as[0].Reason)
	require.Equal(t, "database hiccup 2", as[1].Reason)
	require.Equal(t, []int{1, 2, 3}, []int{as[0].Attempt, as[1].Attempt, as[2].Attempt})
	require.True(t, as[0].At.Before(as[1].At) && as[1].At.Before(as[2].At), "each attempt has its own time")
	for _, a := range as {
		require.Equal(t, int64(1), a.Epoch)
	}
	require.Equal(t, "SUCCEEDED", b.row(t, 2).Status)
}

// flushFails is a Batcher whose Flush fails when its batch holds the message bad: the failure
// of a whole batch, caused by one message.
type flushFails struct {
	processor.Handler
	bad int64
}

type flushSession struct {
	recorder *recorder
	tx       pgx.Tx
	bad      bool
}

func (f flushFails) Begin(_ context.Context, tx pgx.Tx, msgs []processor.Message) (processor.Session, error) {
	s := &flushSession{recorder: f.Handler.(*recorder), tx: tx}
	for _, m := range msgs {
		s.bad = s.bad || m.ID == f.bad
	}
	return s, nil
}

func (s *flushSession) Apply(ctx context.Context, m processor.Message) (processor.Outcome, error) {
	return s.recorder.Apply(ctx, s.tx, m)
}

func (s *flushSession) Flush(context.Context) error {
	if s.bad {
		return errors.New("flush: value too long for column")
	}
	return nil
}

// failWhole enqueues messages 1..last and runs them as one batch that fails as a whole, because
// of message 3 (flushFails), and returns the engine.
func (b *bundle) failWhole(t *testing.T, last int64) *processor.Engine {
	t.Helper()
	b.procs[sis.KindFlightUpdate] = flushFails{Handler: &recorder{}, bad: 3}
	b.enqueueSeq(t, 1, last, func(id int64) string { return flop(int(id), 15, "S") })
	p := b.pump(t)
	res, err := p.Step(context.Background(), b.lease)
	require.NoError(t, err)
	require.True(t, res.Failed)
	return p
}

// A batch that fails as a whole charges nobody: each of its messages then runs alone, and only
// the one that causes the failure is charged (FAILED, its own attempt and start mark); the head
// is not charged for a later message's failure, and every message's history says what happened.
func TestBatchFailureIsChargedToItsCause(t *testing.T) {
	t.Parallel()
	b := setup(t)
	p := b.failWhole(t, 4)
	require.Empty(t, effects(t, b))
	for id := int64(1); id <= 4; id++ {
		r := b.row(t, id)
		require.Equal(t, "PENDING", r.Status, "msg %d: nobody charged", id)
		require.Zero(t, r.Attempts, "msg %d", id)
	}

	b.clock.Advance(time.Second)
	b.drain(t, p)
	require.Equal(t, []int64{1, 2}, effects(t, b), "the innocent messages before the cause applied, alone and in order")
	for _, id := range []int64{1, 2} {
		r := b.row(t, id)
		require.Equal(t, "SUCCEEDED", r.Status)
		require.Equal(t, 1, r.Attempts)
		require.Equal(t, []string{"BATCH_FAILED", "SUCCEEDED"}, outcomes(t, b, id))
	}
	r := b.row(t, 3)
	require.Equal(t, "FAILED", r.Status, "the cause is charged")
	require.Equal(t, "INFRA", r.Class)
	require.Equal(t, 1, r.Attempts)
	require.Contains(t, r.Reason, "value too long")
	require.Equal(t, []string{"BATCH_FAILED", "FAILED INFRA"}, outcomes(t, b, 3))
	require.Equal(t, []string{"BATCH_FAILED"}, outcomes(t, b, 4), "4 waits behind 3")
	as, err := procstate.Attempts(context.Background(), b.db.Pool, 3)
	require.NoError(t, err)
	require.Contains(t, as[0].Reason, "the batch 1..4 failed as a whole (flush processor_test.flushFails: flush: value too long for column)")

	// Each message has its own start mark: the head's is the batch's, 3's its own attempt's.
	var head, cause time.Time
	require.NoError(t, b.db.Pool.QueryRow(context.Background(),
		`SELECT (SELECT processing_started_at FROM proc_state WHERE msg_id = 1), (SELECT processing_started_at FROM proc_state WHERE msg_id = 3)`).Scan(&head, &cause))
	require.True(t, head.Equal(t0), "head %s", head)
	require.True(t, cause.Equal(t0.Add(time.Second)), "cause %s", cause)
}

// A message that succeeds or is skipped at its first attempt writes no msg_attempt row: its one
// attempt is read from its own row (outcome_epoch), live or archived, and a replay of a SKIPPED
// no-match message writes it to msg_attempt before requeueing, so the history keeps it.
func TestFirstAttemptKeptOnTheRow(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.procs[sis.KindFlightUpdate] = processor.HandlerFunc(func(_ context.Context, _ pgx.Tx, m processor.Message) (processor.Outcome, error) {
		if m.ID == 2 {
			return processor.Outcome{Skipped: true, Reason: procstate.NoMatch().String()}, nil
		}
		return processor.Outcome{}, nil
	})
	b.enqueueSeq(t, 1, 3, func(id int64) string { return flop(int(id), 15, "S") })
	b.drain(t, b.pump(t))
	rows := func() int {
		var n int
		require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT count(*) FROM msg_attempt`).Scan(&n))
		return n
	}
	require.Zero(t, rows(), "no attempt row for a first-attempt outcome")
	as, err := procstate.Attempts(ctx, b.db.Pool, 1)
	require.NoError(t, err)
	require.Len(t, as, 1)
	require.Equal(t, procstate.Attempt{Attempt: 1, At: as[0].At, Epoch: 1, Outcome: "SUCCEEDED"}, as[0])
	require.True(t, as[0].At.Equal(t0), "the outcome's time")
	require.Equal(t, []string{"SKIPPED"}, outcomes(t, b, 2))

	// Archived, the row still answers.
	_, err = b.db.Pool.Exec(ctx, `WITH moved AS (DELETE FROM proc_state WHERE msg_id = 3 RETURNING *)
		INSERT INTO proc_state_hst (msg_id, status, attempts, enqueued_at, finished_at, outcome_epoch, archived_at)
		SELECT msg_id, status, attempts, enqueued_at, finished_at, outcome_epoch, $1 FROM moved`, t0)
	require.NoError(t, err)
	require.Equal(t, []string{"SUCCEEDED"}, outcomes(t, b, 3))

	// Replayed, the SKIPPED attempt moves to msg_attempt, then the new round's attempt follows.
	b.procs[sis.KindFlightUpdate] = &recorder{}
	_, err = procstate.Replay(ctx, b.db.Pool, procstate.ReplayRequest{IDs: []int64{2}, Actor: "ops", Reason: "flight known", Now: t0})
	require.NoError(t, err)
	require.Equal(t, 1, rows())
	require.Equal(t, []string{"SKIPPED"}, outcomes(t, b, 2), "requeued: the history keeps the skip")
	b.drain(t, b.pump(t))
	require.Equal(t, []string{"SKIPPED", "SUCCEEDED"}, outcomes(t, b, 2))
	as, err = procstate.Attempts(ctx, b.db.Pool, 2)
	require.NoError(t, err)
	require.Equal(t, procstate.NoMatch().String(), as[0].Reason)
	require.Equal(t, []int{1, 1}, []int{as[0].Attempt, as[1].Attempt}, "the count restarts after a replay")
}

// Careful mode covers the batch it isolates a culprit in, not the messages after it: the batch
// that died (its head's processing_through) or failed as a whole runs one message per
// transaction, and the messages that came after it are batched again.
func TestCarefulModeEndsWithItsBatch(t *testing.T) {
	t.Parallel()
	t.Run("died", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ctx, cancel := context.WithCancel(context.Background())
		b.procs[sis.KindFlightUpdate] = &recorder{fail: func(m processor.Message) error {
			if m.ID == 2 && ctx.Err() == nil {
				cancel()
				return ctx.Err()
			}
			return nil
		}}
		b.enqueueSeq(t, 1, 3, func(id int64) string { return flop(int(id), 15, "S") })
		_, err := b.pump(t).Step(ctx, b.lease)
		require.Error(t, err)
		b.enqueueSeq(t, 4, 10, func(id int64) string { return flop(int(id), 15, "S") })

		require.Equal(t, []int{1, 1, 1, 7}, b.steps(t, b.pump(t)), "1..3 alone (the batch that died), then 4..10 in one batch")
		require.Equal(t, []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, effects(t, b))
		for id := int64(1); id <= 10; id++ {
			r := b.row(t, id)
			require.Equal(t, 1, r.Attempts, "msg %d", id)
			require.Zero(t, b.db.Int64s(t, `SELECT deaths + crashes FROM proc_state WHERE msg_id = $1`, id)[0], "msg %d: nobody charged", id)
		}
		require.Equal(t, []string{"INTERRUPTED", "SUCCEEDED"}, outcomes(t, b, 2), "the batch that died is in its messages' history")
	})
	t.Run("failed as a whole", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		p := b.failWhole(t, 4)
		b.enqueueSeq(t, 5, 10, func(id int64) string { return flop(int(id), 15, "S") })

		b.clock.Advance(time.Second)
		require.Equal(t, []int{1, 1, 0}, b.steps(t, p), "1 and 2 alone, then 3 alone FAILED: it holds the head")
		require.Equal(t, "FAILED", b.row(t, 3).Status)
		b.procs[sis.KindFlightUpdate] = &recorder{} // the cause is gone
		b.clock.Advance(b.cfg.BackoffMax)
		require.Equal(t, []int{1, 1, 6}, b.steps(t, p), "3 (the FAILED head) and 4 alone, then 5..10 in one batch")
		require.Equal(t, []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, effects(t, b))
	})
}

// Careful mode also ends when the message at its bound has its outcome committed outside a
// batch that applied: DEAD by its head deadline (expireHead), or FAILED or DEAD by a lone
// attempt that failed as a whole (failBatch). The message after it is batched again, not run
// alone.
func TestCarefulModeEndsWithADeadHead(t *testing.T) {
	t.Parallel()
	t.Run("head deadline", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.cfg.MaxAttempts = 1000
		b.cfg.HeadDeadline = b.cfg.BackoffMax
		p := b.failWhole(t, 3) // careful through 3
		b.clock.Advance(time.Second)
		require.Equal(t, []int{1, 1, 0}, b.steps(t, p), "1 and 2 alone, then 3 alone FAILED")
		// 3's retry is refused by the database (not its failure), which keeps the bound; then
		// its head deadline passes (without an outage: at most BackoffMax past its due time) and
		// the next Step ends it DEAD (expireHead).
		h := &refusing{role: b.db.Roles(t).Name(roles.Ingest)}
		h.refuse.Store(true)
		b.procs[sis.KindFlightUpdate] = h
		b.clock.Set(*b.row(t, 3).Next)
		_, err := p.Step(context.Background(), b.lease)
		var pe *pgconn.PgError
		require.ErrorAs(t, err, &pe, "the refused retry")
		h.refuse.Store(false)
		b.clock.Advance(b.cfg.BackoffMax)
		res, err := p.Step(context.Background(), b.lease)
		require.NoError(t, err)
		require.Equal(t, 1, res.Processed)
		require.Equal(t, "EXHAUSTED", b.row(t, 3).Class)
		require.Contains(t, b.row(t, 3).Reason, "head deadline")
		b.enqueueSeq(t, 4, 10, func(id int64) string { return flop(int(id), 15, "S") })
		require.Equal(t, []int{7}, b.steps(t, p), "4..10 in one batch: careful mode ended with 3, the last of the batch that failed as a whole")
	})
	t.Run("failed alone on its last attempt", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.cfg.MaxAttempts = 1
		p := b.failWhole(t, 3)
		b.enqueueSeq(t, 4, 10, func(id int64) string { return flop(int(id), 15, "S") })
		require.Equal(t, []int{1, 1, 1, 7}, b.steps(t, p), "1, 2 and 3 alone (3 DEAD), then 4..10 in one batch")
		require.Equal(t, "DEAD", b.row(t, 3).Status)
		require.Equal(t, []int64{1, 2, 4, 5, 6, 7, 8, 9, 10}, effects(t, b))
	})
}

// Careful mode ends when the last message of its batch has an outcome, not when its attempt
// starts: an attempt of it that the database refused (not the message's failure) is retried
// alone too, so a message that kills the process is never batched again before it ran alone.
func TestCarefulModeOutlastsARefusedAttempt(t *testing.T) {
	t.Parallel()
	b := setup(t)
	h := b.refused(t, 10)
	h.refuse.Store(false)
	_, err := b.db.Pool.Exec(context.Background(),
		`UPDATE proc_state SET processing_started_at = $1, processing_through = 3 WHERE msg_id = 1`, b.clock.Now())
	require.NoError(t, err)
	p := b.pump(t)
	for range 2 {
		res, err := p.Step(context.Background(), b.lease)
		require.NoError(t, err)
		require.Equal(t, 1, res.Processed)
	}
	h.refuse.Store(true)
	_, err = p.Step(context.Background(), b.lease)
	var pe *pgconn.PgError
	require.ErrorAs(t, err, &pe, "3's attempt refused")
	h.refuse.Store(false)
	require.Equal(t, []int{1, 7}, b.steps(t, p), "3 alone again, then 4..10 in one batch")
	require.Equal(t, []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, effects(t, b))
}
