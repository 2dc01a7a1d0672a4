package jobs_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/clock"
	"github.com/msgx/msgx/pkg/dev/sisbuild"
	"github.com/msgx/msgx/pkg/jobs"
	"github.com/msgx/msgx/pkg/mailbox"
	"github.com/msgx/msgx/pkg/processor"
	"github.com/msgx/msgx/pkg/procstate"
	"github.com/msgx/msgx/pkg/sis"
)

func ptr[T any](v T) *T { return &v }

// INV-7 outcome 1: the marker is NULL and gets written (with the configured STATUS value).
func TestBackfillMarked(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.cfg.ProcessedValue = "PROCESSED"
	b.terminal(t, 1, t0, t0, nil)
	b.mailboxRow(t, 1, nil)
	j := b.jobs(t)

	// Not due before BackoffBase: the processor's immediate attempt has not reported yet.
	res, err := j.RunOnce(ctx, jobs.Backfill, b.lease)
	require.NoError(t, err)
	require.Zero(t, res.Selected)

	b.clock.Advance(30 * time.Second)
	res, err = j.RunOnce(ctx, jobs.Backfill, b.lease)
	require.NoError(t, err)
	require.Equal(t, 1, res.Selected)
	r := b.backfillRow(t, 1)
	require.Equal(t, jobs.OutcomeMarked, *r.Outcome)
	require.Equal(t, b.clock.Now(), r.DoneAt.UTC())
	require.Nil(t, r.AbandonedAt)
	at, status := b.mark(t, 1)
	require.Equal(t, clock.WallClock(b.clock.Now(), time.UTC), *at)
	require.Equal(t, "PROCESSED", status)
	require.Equal(t, 1, b.marker.writes(1))
}

// INV-7 outcome 2: the marker is already set: success, the value is not overwritten, and the
// outcome is never changed afterwards.
func TestBackfillAlreadyMarked(t *testing.T) {
	t.Parallel()
	b := setup(t)
	earlier := time.Date(2026, 12, 2, 7, 59, 0, 0, time.UTC)
	b.terminal(t, 1, t0, t0, nil)
	b.mailboxRow(t, 1, &earlier)
	j := b.jobs(t)

	b.clock.Advance(time.Minute)
	_, err := j.RunOnce(ctx, jobs.Backfill, b.lease)
	require.NoError(t, err)
	r := b.backfillRow(t, 1)
	require.Equal(t, jobs.OutcomeAlreadyMarked, *r.Outcome)
	require.NotNil(t, r.DoneAt)
	at, status := b.mark(t, 1)
	require.Equal(t, earlier, *at)
	require.Equal(t, "VALID", status)
	require.Zero(t, b.marker.writes(1))

	// Settled for good: later sweeps do not select it again.
	b.clock.Advance(time.Hour)
	res, err := j.RunOnce(ctx, jobs.Backfill, b.lease)
	require.NoError(t, err)
	require.Zero(t, res.Selected)
	require.Equal(t, jobs.OutcomeAlreadyMarked, *b.backfillRow(t, 1).Outcome)
}

// INV-7 outcome 3: the mailbox row does not exist: abandoned at once (never taken as marked),
// counted, listed; a retry after reconciliation selects it again.
func TestBackfillMissingRow(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.terminal(t, 7, t0, t0, nil)
	j := b.jobs(t)

	b.clock.Advance(time.Minute)
	_, err := j.RunOnce(ctx, jobs.Backfill, b.lease)
	require.NoError(t, err)
	r := b.backfillRow(t, 7)
	require.Equal(t, jobs.OutcomeMissingRow, *r.Outcome)
	require.NotNil(t, r.AbandonedAt)
	require.Nil(t, r.DoneAt)

	list, err := jobs.ListAbandoned(ctx, b.db.Pool, 100)
	require.NoError(t, err)
	require.Len(t, list, 1)
	require.Equal(t, int64(7), list[0].MsgID)
	require.Equal(t, jobs.OutcomeMissingRow, list[0].Outcome)

	// Not retried automatically.
	b.clock.Advance(time.Hour)
	res, err := j.RunOnce(ctx, jobs.Backfill, b.lease)
	require.NoError(t, err)
	require.Zero(t, res.Selected)

	// The AODB restores the row; the operator retries.
	b.mailboxRow(t, 7, nil)
	rep, err := jobs.RetryBackfill(ctx, b.db.Pool, jobs.RetryRequest{IDs: []int64{7, 8}, Actor: "ops", Reason: "row restored", Now: b.clock.Now()})
	require.NoError(t, err)
	require.Equal(t, []int64{7}, rep.Retried)
	require.Equal(t, []int64{8}, rep.Refused)
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM replay_audit WHERE action = 'backfill-retry' AND ids = '{7}'`))
	_, err = j.RunOnce(ctx, jobs.Backfill, b.lease)
	require.NoError(t, err)
	require.Equal(t, jobs.OutcomeMarked, *b.backfillRow(t, 7).Outcome)
}

// INV-7 outcome 4: the mailbox keeps failing: retried with backoff (30s doubling, cap 15m) and
// abandoned OVERDUE only once R has passed since enqueued_at — the local clock; a NULL
// received_at, or a mailbox DATE_RECEIVED far in the past, changes nothing.
func TestBackfillOverdue(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.cfg.Overdue = 2 * time.Hour
	long := t0.Add(-48 * time.Hour)
	b.terminal(t, 1, t0, t0, nil)   // received_at NULL
	b.terminal(t, 2, t0, t0, &long) // the mailbox says received two days ago
	b.mailboxRow(t, 1, nil)
	b.mailboxRow(t, 2, nil)
	b.marker.outage(t, true)
	j := b.jobs(t)

	var delays []time.Duration
	for b.clock.Now().Before(t0.Add(2 * time.Hour)) {
		b.clock.Advance(30 * time.Second)
		res, err := j.RunOnce(ctx, jobs.Backfill, b.lease)
		if res.Selected == 0 {
			require.NoError(t, err)
			continue
		}
		require.Error(t, err)
		for _, id := range []int64{1, 2} {
			r := b.backfillRow(t, id)
			require.Nil(t, r.AbandonedAt, "abandoned before R at %s", b.clock.Now())
			require.Nil(t, r.Outcome)
			require.NotEmpty(t, *r.Error)
		}
		r := b.backfillRow(t, 1)
		delays = append(delays, r.NextAt.Sub(b.clock.Now()))
	}
	require.Equal(t, []time.Duration{
		30 * time.Second, time.Minute, 2 * time.Minute, 4 * time.Minute, 8 * time.Minute,
		15 * time.Minute, 15 * time.Minute, 15 * time.Minute, 15 * time.Minute,
	}, delays[:9])

	// The first attempt at or after enqueued_at + R that fails abandons the row.
	for b.backfillRow(t, 1).AbandonedAt == nil {
		b.clock.Advance(30 * time.Second)
		_, _ = j.RunOnce(ctx, jobs.Backfill, b.lease)
		require.True(t, b.clock.Now().Before(t0.Add(3*time.Hour)))
	}
	for _, id := range []int64{1, 2} {
		r := b.backfillRow(t, id)
		require.Equal(t, jobs.OutcomeOverdue, *r.Outcome)
		require.False(t, r.AbandonedAt.Before(t0.Add(2*time.Hour)))
		at, _ := b.mark(t, id)
		require.Nil(t, at, "an abandoned row is never taken as marked")
	}
	list, err := jobs.ListAbandoned(ctx, b.db.Pool, 100)
	require.NoError(t, err)
	require.Len(t, list, 2)

	// The mailbox is back; the operator retries; the sweep writes both once.
	b.marker.outage(t, false)
	_, err = jobs.RetryBackfill(ctx, b.db.Pool, jobs.RetryRequest{IDs: []int64{1, 2}, Actor: "ops", Reason: "mailbox restored", Now: b.clock.Now()})
	require.NoError(t, err)
	_, err = j.RunOnce(ctx, jobs.Backfill, b.lease)
	require.NoError(t, err)
	for _, id := range []int64{1, 2} {
		require.Equal(t, jobs.OutcomeMarked, *b.backfillRow(t, id).Outcome)
		require.Equal(t, 1, b.marker.writes(id))
	}
}

// A mailbox error is recorded on the row bounded in characters, never cut inside one: an error
// text cut inside a multi-byte character is not valid UTF-8, and PostgreSQL would refuse the
// whole record of the chunk's outcomes.
func TestBackfillErrorBoundedInCharacters(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.terminal(t, 1, t0, t0, nil)
	b.mailboxRow(t, 1, nil)
	// 200 characters of three bytes each: a cut at 500 bytes would fall inside a character.
	b.marker.failWith(errors.New("mailbox: " + strings.Repeat("航班取消", 50)))
	j := b.jobs(t)

	b.clock.Advance(30 * time.Second)
	res, err := j.RunOnce(ctx, jobs.Backfill, b.lease)
	require.ErrorContains(t, err, "mailbox unavailable")
	require.NotContains(t, err.Error(), "record marker outcomes")
	require.Equal(t, 1, res.Selected)
	r := b.backfillRow(t, 1)
	require.NotNil(t, r.Error)
	require.True(t, utf8.ValidString(*r.Error))
	require.Equal(t, "mailbox: "+strings.Repeat("航班取消", 50), *r.Error, "209 characters are within the bound")
	require.NotNil(t, r.NextAt, "rescheduled with backoff")

	// Past the bound of 500 characters: cut to it, ending in an ellipsis.
	b.marker.failWith(errors.New(strings.Repeat("航班取消", 150)))
	b.clock.Advance(time.Hour)
	_, err = j.RunOnce(ctx, jobs.Backfill, b.lease)
	require.ErrorContains(t, err, "mailbox unavailable")
	r = b.backfillRow(t, 1)
	require.Equal(t, 500, utf8.RuneCountInString(*r.Error))
	require.True(t, strings.HasSuffix(*r.Error, "…"))
}

// PENDING and FAILED rows are never marked, and shadow mode writes nothing to MySQL.
func TestBackfillOnlyTerminalAndShadow(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.open(t, 1, "PENDING")
	b.open(t, 2, "FAILED")
	b.terminal(t, 3, t0, t0, nil)
	for id := int64(1); id <= 3; id++ {
		b.mailboxRow(t, id, nil)
	}
	b.cfg.Shadow = true
	shadow := b.jobs(t)
	b.clock.Advance(time.Hour)
	res, err := shadow.RunOnce(ctx, jobs.Backfill, b.lease)
	require.NoError(t, err)
	require.Zero(t, res.Selected)
	for id := int64(1); id <= 3; id++ {
		at, _ := b.mark(t, id)
		require.Nil(t, at)
	}
	require.Nil(t, b.backfillRow(t, 3).Outcome)

	b.cfg.Shadow = false
	live := b.jobs(t)
	res, err = live.RunOnce(ctx, jobs.Backfill, b.lease)
	require.NoError(t, err)
	require.Equal(t, 1, res.Selected)
	for id := int64(1); id <= 2; id++ {
		at, _ := b.mark(t, id)
		require.Nil(t, at, "non-terminal row %d marked", id)
	}
	at, _ := b.mark(t, 3)
	require.NotNil(t, at)
}

// A batch's marker debt (marker_debt) that the processor's immediate marker did not pay is moved
// onto its terminal rows once the sweep's grace has passed, and paid there; a younger debt is
// the immediate marker's; a row open again (replayed) owes nothing.
func TestBackfillPaysBatchDebts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for id := int64(1); id <= 3; id++ {
		_, err := b.db.Pool.Exec(ctx, `INSERT INTO proc_state (msg_id, raw, status, attempts, enqueued_at, finished_at)
			VALUES ($1, 'x', 'SUCCEEDED', 1, $2, $2)`, id, t0)
		require.NoError(t, err)
	}
	b.open(t, 4, "PENDING")
	for id := int64(1); id <= 4; id++ {
		b.mailboxRow(t, id, nil)
	}
	_, err := b.db.Pool.Exec(ctx, `INSERT INTO marker_debt (ids, finished_at) VALUES ('{1,2,4}', $1), ('{3}', $2)`,
		t0, t0.Add(40*time.Second))
	require.NoError(t, err)
	j := b.jobs(t)

	b.clock.Set(t0.Add(45 * time.Second)) // grace 30 s: the first debt is due, the second is not
	res, err := j.RunOnce(ctx, jobs.Backfill, b.lease)
	require.NoError(t, err)
	require.Equal(t, 2, res.Selected)
	for _, id := range []int64{1, 2} {
		require.Equal(t, jobs.OutcomeMarked, *b.backfillRow(t, id).Outcome, "message %d", id)
		at, _ := b.mark(t, id)
		require.NotNil(t, at, "message %d", id)
	}
	for _, id := range []int64{3, 4} {
		r := b.backfillRow(t, id)
		require.Nil(t, r.NextAt, "message %d owes nothing on its own", id)
		at, _ := b.mark(t, id)
		require.Nil(t, at, "message %d marked", id)
	}
	var left [][]int64
	rows, err := b.db.Pool.Query(ctx, `SELECT ids FROM marker_debt`)
	require.NoError(t, err)
	left, err = pgx.CollectRows(rows, pgx.RowTo[[]int64])
	require.NoError(t, err)
	require.Equal(t, [][]int64{{3}}, left, "the younger debt stays the immediate marker's")

	b.clock.Advance(30 * time.Second)
	_, err = j.RunOnce(ctx, jobs.Backfill, b.lease)
	require.NoError(t, err)
	require.Equal(t, jobs.OutcomeMarked, *b.backfillRow(t, 3).Outcome)
	require.Zero(t, b.count(t, `SELECT count(*) FROM marker_debt`))
	at, _ := b.mark(t, 4)
	require.Nil(t, at, "an open row is never marked")
}

// flop is a FLOP STND message for flid with sequence number seqn.
func flop(seqn int, flid int64, stand string) string {
	return sisbuild.Stand(int64(seqn), sisbuild.DTTM, flid, stand)
}

// enqueue inserts a PENDING proc_state row as ingest does and moves W up to it.
func (b *bundle) enqueue(t *testing.T, id int64, raw string) {
	t.Helper()
	_, err := b.db.Pool.Exec(ctx, `INSERT INTO proc_state (msg_id, raw, raw_sha256, enqueued_at)
		VALUES ($1, $2, sha256(convert_to($2::text, 'UTF8')), $3)`, id, raw, b.clock.Now())
	require.NoError(t, err)
	_, err = b.db.Pool.Exec(ctx, `UPDATE inbox_cursor SET watermark = GREATEST(watermark, $1)`, id)
	require.NoError(t, err)
}

// procFunc is a processor made of a function.
type procFunc func(ctx context.Context, tx pgx.Tx, m processor.Message) (processor.Outcome, error)

func (f procFunc) Apply(ctx context.Context, tx pgx.Tx, m processor.Message) (processor.Outcome, error) {
	return f(ctx, tx, m)
}

func (b *bundle) pump(proc processor.Handler, marker processor.Marker) *processor.Engine {
	return processor.New(processor.Config{
		Batch: 100, MaxAttempts: 5, BackoffBase: time.Second, BackoffMax: time.Minute,
		HeadDeadline: 10 * time.Minute, IdlePoll: time.Millisecond, Location: time.UTC, IdentityWindow: 7 * 24 * time.Hour,
	}, b.db.Pool, map[sis.Kind]processor.Handler{sis.KindFlightUpdate: proc}, marker, b.clock, nil, zerolog.Nop())
}

// INV-8c: the marker is never written before the terminal commit; when the processor dies between
// its commit and its immediate marker attempt, the sweep writes the marker, once.
func TestBackfillAfterKillBetweenCommitAndMarker(t *testing.T) {
	t.Parallel()
	b := setup(t)
	j := b.jobs(t)
	b.mailboxRow(t, 1, nil)
	b.enqueue(t, 1, flop(1, 15, "S1"))
	var sweptInside jobs.Result
	proc := procFunc(func(ctx context.Context, tx pgx.Tx, m processor.Message) (processor.Outcome, error) {
		// The sweep runs while the processor's transaction is open, at a time the row would be
		// due if it were terminal: nothing is terminal yet.
		b.clock.Advance(time.Minute)
		res, err := j.RunOnce(ctx, jobs.Backfill, b.lease)
		sweptInside = res
		return processor.Outcome{}, err
	})
	// marker nil: the process "dies" right after its commit, before the immediate attempt.
	res, err := b.pump(proc, nil).Step(ctx, b.please)
	require.NoError(t, err)
	require.Equal(t, 1, res.Processed)
	require.Zero(t, sweptInside.Selected)
	at, _ := b.mark(t, 1)
	require.Nil(t, at)

	// finished_at is the pump's batch time (t0): due BackoffBase after it, so now.
	res2, err := j.RunOnce(ctx, jobs.Backfill, b.lease)
	require.NoError(t, err)
	require.Equal(t, 1, res2.Selected)
	for range 5 {
		b.clock.Advance(30 * time.Second)
		_, err := j.RunOnce(ctx, jobs.Backfill, b.lease)
		require.NoError(t, err)
	}
	require.Equal(t, jobs.OutcomeMarked, *b.backfillRow(t, 1).Outcome)
	require.Equal(t, 1, b.marker.writes(1))
	require.Equal(t, 1, b.marker.calls[1])
}

// A mailbox outage of 10 minutes: markers resume afterwards, none is written twice, none for a
// non-terminal row.
func TestBackfillMailboxOutage(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const n = 60
	for id := int64(1); id <= n; id++ {
		b.mailboxRow(t, id, nil)
		switch {
		case id%10 == 0:
			b.open(t, id, "PENDING")
		case id%10 == 5:
			b.open(t, id, "FAILED")
		default:
			b.terminal(t, id, b.clock.Now(), b.clock.Now(), nil)
		}
		b.clock.Advance(time.Second)
	}
	j := b.jobs(t)
	real, err := mailbox.Open(b.mb.DSN)
	require.NoError(t, err)
	defer real.Close()

	b.marker.outage(t, true)
	outageEnd := b.clock.Now().Add(10 * time.Minute)
	for b.clock.Now().Before(outageEnd) {
		b.clock.Advance(30 * time.Second)
		_, _ = j.RunOnce(ctx, jobs.Backfill, b.lease) // fails while rows are due: expected
	}
	var marked int
	require.NoError(t, b.mb.SQL.QueryRowContext(ctx, `SELECT count(*) FROM cminmsgs WHERE CMINMSGS_DATE_PROCESSED IS NOT NULL`).Scan(&marked))
	require.Zero(t, marked)
	require.Equal(t, 48, b.count(t, `SELECT count(*) FROM proc_state WHERE backfill_attempts > 0 AND backfill_error IS NOT NULL AND backfill_abandoned_at IS NULL`))

	b.marker.outage(t, false)
	for range 40 { // 20 minutes: beyond the longest backoff reached during the outage
		b.clock.Advance(30 * time.Second)
		_, err := j.RunOnce(ctx, jobs.Backfill, b.lease)
		require.NoError(t, err)
	}
	for id := int64(1); id <= n; id++ {
		at, _ := b.mark(t, id)
		if id%5 == 0 {
			require.Nil(t, at, "non-terminal row %d marked", id)
			continue
		}
		require.NotNil(t, at, "row %d not marked after the outage", id)
		require.Equal(t, 1, b.marker.writes(id))
		require.Equal(t, jobs.OutcomeMarked, *b.backfillRow(t, id).Outcome)
	}
	require.Zero(t, b.count(t, `SELECT count(*) FROM proc_state WHERE backfill_abandoned_at IS NOT NULL`))
}

// A message replayed while an older batch's marker_debt still names it (INV-8c, INV-8d): the
// replay takes it out of that debt, so the sweep never marks it while it is open, and once it is
// terminal again it is marked exactly once — message 1 finishes again before the sweep and only
// its new debt names it; message 2 is still open when the sweep moves the old debts.
func TestReplayAgainstAnOldDebt(t *testing.T) {
	t.Parallel()
	b := setup(t)
	j := b.jobs(t)
	var fixed sync.Map // msg_id → true: it succeeds from now on
	proc := procFunc(func(ctx context.Context, tx pgx.Tx, m processor.Message) (processor.Outcome, error) {
		if _, ok := fixed.Load(m.ID); !ok {
			return processor.Outcome{}, errors.New("connection reset by peer")
		}
		return processor.Outcome{}, nil
	})
	// One message per batch, one attempt allowed: a failure ends DEAD EXHAUSTED (replayable). No
	// immediate marker: every batch debt is the sweep's.
	drain := func() {
		t.Helper()
		p := processor.New(processor.Config{
			Batch: 1, MaxAttempts: 1, BackoffBase: time.Second, BackoffMax: time.Minute,
			HeadDeadline: 10 * time.Minute, IdlePoll: time.Millisecond, Location: time.UTC, IdentityWindow: 7 * 24 * time.Hour,
		}, b.db.Pool, map[sis.Kind]processor.Handler{sis.KindFlightUpdate: proc}, nil, b.clock, nil, zerolog.Nop())
		for {
			res, err := p.Step(ctx, b.please)
			require.NoError(t, err)
			if res.Idle {
				return
			}
		}
	}
	status := func(id int64) string {
		t.Helper()
		var s string
		require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT status FROM proc_state WHERE msg_id = $1`, id).Scan(&s))
		return s
	}
	replay := func(id int64) {
		t.Helper()
		rep, err := procstate.Replay(ctx, b.db.Pool, procstate.ReplayRequest{IDs: []int64{id}, Actor: "ops", Reason: "fixed", Now: b.clock.Now()})
		require.NoError(t, err)
		require.Equal(t, int64(1), rep.Requeued)
	}
	debtsNaming := func(id int64) int {
		t.Helper()
		return b.count(t, `SELECT count(*) FROM marker_debt WHERE $1 = ANY (ids)`, id)
	}
	for id := int64(1); id <= 2; id++ {
		b.mailboxRow(t, id, nil)
		b.enqueue(t, id, flop(int(id), 15, "S1"))
	}
	drain()
	require.Equal(t, "DEAD", status(1))
	require.Equal(t, "DEAD", status(2))

	replay(1)
	fixed.Store(int64(1), true)
	drain()
	require.Equal(t, "SUCCEEDED", status(1))
	require.Equal(t, 1, debtsNaming(1), "the new debt only: a reopened row leaves its old one")
	replay(2)
	require.Zero(t, debtsNaming(2), "an open message left its debt")

	b.clock.Advance(time.Minute) // every debt past the sweep's grace
	_, err := j.RunOnce(ctx, jobs.Backfill, b.lease)
	require.NoError(t, err)
	require.Equal(t, "PENDING", status(2))
	at, _ := b.mark(t, 2)
	require.Nil(t, at, "an open message was marked")
	require.Zero(t, b.marker.calls[2], "an open message was handed to the mailbox")
	require.Nil(t, b.backfillRow(t, 2).NextAt, "an open message owes a marker")
	at, _ = b.mark(t, 1)
	require.NotNil(t, at)
	require.Equal(t, 1, b.marker.writes(1), "message 1, named by two debts, marked once")
	require.Equal(t, 1, b.marker.calls[1])

	fixed.Store(int64(2), true)
	drain()
	require.Equal(t, "SUCCEEDED", status(2))
	for range 3 {
		b.clock.Advance(time.Minute)
		_, err := j.RunOnce(ctx, jobs.Backfill, b.lease)
		require.NoError(t, err)
	}
	at, _ = b.mark(t, 2)
	require.NotNil(t, at, "message 2, terminal again, is marked")
	require.Equal(t, 1, b.marker.writes(2), "message 2 marked once")
	require.Equal(t, 1, b.marker.writes(1))
	require.Zero(t, b.count(t, `SELECT count(*) FROM marker_debt`))
	require.Zero(t, b.count(t, `SELECT count(*) FROM proc_state WHERE backfill_next_at IS NOT NULL AND backfill_done_at IS NULL`))
}

// INV-6: a terminal status is final whatever becomes of its marker. SUCCEEDED and DEAD messages
// whose immediate marker fails, whose sweep fails until R abandons them (OVERDUE), and one whose
// mailbox row turns out missing (MISSING_ROW) keep every column but the marker's as their
// terminal commit wrote it.
func TestFailedMarkersLeaveTheStatus(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.cfg.Overdue = time.Hour
	j := b.jobs(t)
	b.mailboxRow(t, 1, nil)
	b.mailboxRow(t, 2, nil) // 3 has no mailbox row
	for id := int64(1); id <= 3; id++ {
		b.enqueue(t, id, flop(int(id), 15, "S1"))
	}
	proc := procFunc(func(ctx context.Context, tx pgx.Tx, m processor.Message) (processor.Outcome, error) {
		if m.ID == 2 {
			return processor.Outcome{}, errors.New("connection reset by peer") // DEAD: one attempt
		}
		return processor.Outcome{}, nil
	})
	down, err := mailbox.Open("root@tcp(127.0.0.1:1)/nowhere?timeout=1s") // the immediate marker fails
	require.NoError(t, err)
	t.Cleanup(func() { _ = down.Close() })
	marker := gatedMarker{Marker: down, gate: make(chan struct{})}
	p := processor.New(processor.Config{
		Batch: 100, MaxAttempts: 1, BackoffBase: time.Second, BackoffMax: time.Minute,
		HeadDeadline: 10 * time.Minute, IdlePoll: time.Millisecond, Location: time.UTC, IdentityWindow: 7 * 24 * time.Hour,
	}, b.db.Pool, map[sis.Kind]processor.Handler{sis.KindFlightUpdate: proc}, marker, b.clock, nil, zerolog.Nop())
	t.Cleanup(p.WaitMarkers)
	var opened sync.Once
	open := func() { opened.Do(func() { close(marker.gate) }) }
	t.Cleanup(open) // runs before WaitMarkers
	for {
		res, err := p.Step(ctx, b.please)
		require.NoError(t, err)
		if res.Idle {
			break
		}
	}

	// Each row as its terminal commit left it, the marker's columns aside.
	committed := func() map[int64]string {
		t.Helper()
		rows, err := b.db.Pool.Query(ctx, `SELECT msg_id, (to_jsonb(p) - ARRAY['backfill_next_at', 'backfill_attempts',
			'backfill_error', 'backfill_outcome', 'backfill_done_at', 'backfill_abandoned_at'])::text FROM proc_state p ORDER BY msg_id`)
		require.NoError(t, err)
		out := map[int64]string{}
		var id int64
		var s string
		_, err = pgx.ForEachRow(rows, []any{&id, &s}, func() error { out[id] = s; return nil })
		require.NoError(t, err)
		return out
	}
	want := committed() // the immediate marker waits for open
	require.Len(t, want, 3)
	require.Contains(t, want[1], `"status": "SUCCEEDED"`)
	require.Contains(t, want[2], `"status": "DEAD"`)
	open()
	p.WaitMarkers()
	require.Equal(t, 1, b.backfillRow(t, 1).Attempts, "the immediate marker failed")
	require.Equal(t, want, committed(), "after the immediate marker failed")

	b.marker.outage(t, true)
	for b.clock.Now().Before(t0.Add(2 * time.Hour)) {
		b.clock.Advance(5 * time.Minute)
		_, _ = j.RunOnce(ctx, jobs.Backfill, b.lease) // fails while rows are due: expected
		require.Equal(t, want, committed(), "at %s", b.clock.Now())
	}
	for id := int64(1); id <= 3; id++ {
		r := b.backfillRow(t, id)
		require.NotNil(t, r.AbandonedAt, "message %d", id)
		require.Equal(t, jobs.OutcomeOverdue, *r.Outcome, "message %d", id)
	}

	// The mailbox is back; retried by hand, 3 has no mailbox row.
	b.marker.outage(t, false)
	_, err = jobs.RetryBackfill(ctx, b.db.Pool, jobs.RetryRequest{IDs: []int64{3}, Actor: "ops", Reason: "mailbox back", Now: b.clock.Now()})
	require.NoError(t, err)
	_, err = j.RunOnce(ctx, jobs.Backfill, b.lease)
	require.NoError(t, err)
	require.Equal(t, jobs.OutcomeMissingRow, *b.backfillRow(t, 3).Outcome)
	require.Equal(t, want, committed())
}

// gatedMarker is an immediate marker that waits until gate is closed: the test reads what the
// terminal commit wrote before the marker runs.
type gatedMarker struct {
	processor.Marker
	gate chan struct{}
}

func (g gatedMarker) MarkIf(ctx context.Context, ids []int64, at time.Time, status string,
	guard func(ctx context.Context, unmarked []int64) ([]int64, error)) (int64, error) {
	<-g.gate
	return g.Marker.MarkIf(ctx, ids, at, status, guard)
}
