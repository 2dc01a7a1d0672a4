package processor_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/clock"
	"github.com/msgx/msgx/pkg/processor"
	"github.com/msgx/msgx/pkg/procstate"
	"github.com/msgx/msgx/pkg/sis"
)

// holdMailboxRow locks a mailbox row from another MySQL session, as the AODB may, until the
// returned release is called (also at the test's end).
func holdMailboxRow(t *testing.T, b *bundle, id int64) (release func()) {
	t.Helper()
	ctx := context.Background()
	conn, err := b.mb.SQL.Conn(ctx)
	require.NoError(t, err)
	_, err = conn.ExecContext(ctx, `BEGIN`)
	require.NoError(t, err)
	_, err = conn.ExecContext(ctx, `SELECT CMINMSGS_ID FROM cminmsgs WHERE CMINMSGS_ID = ? FOR UPDATE`, id)
	require.NoError(t, err)
	var done atomic.Bool
	release = func() {
		if done.CompareAndSwap(false, true) {
			_, err := conn.ExecContext(ctx, `ROLLBACK`)
			require.NoError(t, err)
			require.NoError(t, conn.Close())
		}
	}
	t.Cleanup(release)
	return release
}

// lockWaiter waits until a statement on cminmsgs runs in another session of the test's mailbox
// database (the immediate marker: with a row locked by holdMailboxRow, it cannot end) and
// returns its MySQL thread id. The holder is idle in its transaction; nothing else runs there.
// (INNODB_TRX does not list every lock waiter: a transaction waiting at its first statement may
// be missing.)
func lockWaiter(t *testing.T, b *bundle) int64 {
	t.Helper()
	var thread int64
	require.Eventually(t, func() bool {
		err := b.mb.SQL.QueryRowContext(context.Background(), `SELECT ID FROM information_schema.PROCESSLIST
			WHERE DB = ? AND ID <> CONNECTION_ID() AND INFO LIKE '%cminmsgs%'`, b.mb.Name).Scan(&thread)
		return err == nil
	}, 10*time.Second, 5*time.Millisecond, "no mailbox statement runs")
	return thread
}

// markedAt is a mailbox row's processed marker (nil: not marked).
func markedAt(t *testing.T, b *bundle, id int64) *time.Time {
	t.Helper()
	var at sql.NullTime
	require.NoError(t, b.mb.SQL.QueryRowContext(context.Background(),
		`SELECT CMINMSGS_DATE_PROCESSED FROM cminmsgs WHERE CMINMSGS_ID = ?`, id).Scan(&at))
	if !at.Valid {
		return nil
	}
	return &at.Time
}

// setupReplayable is setupMailbox with two messages, 1 and 2, in one batch: 1 succeeds and 2
// ends DEAD EXHAUSTED (one attempt allowed; replayable) while failing is set.
func setupReplayable(t *testing.T) (*bundle, *atomic.Bool) {
	t.Helper()
	b := setupMailbox(t, 2)
	b.cfg.MaxAttempts = 1
	var failing atomic.Bool
	failing.Store(true)
	b.procs[sis.KindFlightUpdate] = &recorder{fail: func(m processor.Message) error {
		if m.ID == 2 && failing.Load() {
			return errors.New("connection reset by peer")
		}
		return nil
	}}
	b.enqueueSeq(t, 1, 2, func(id int64) string { return flop(int(id), 15, "S") })
	return b, &failing
}

func replay(t *testing.T, b *bundle, ids ...int64) {
	t.Helper()
	rep, err := procstate.Replay(context.Background(), b.db.Pool, procstate.ReplayRequest{IDs: ids, Actor: "ops", Reason: "upstream fixed", Now: b.clock.Now()})
	require.NoError(t, err)
	require.Equal(t, int64(len(ids)), rep.Requeued)
}

// No marker for an open row (INV-8c): the immediate marker of a batch waits on a mailbox row lock
// (held by the AODB) while an operator's replay reopens that row in PostgreSQL. Once the lock
// goes, the mailbox is written for the rows still terminal only; the replayed message, finished
// again, is marked then, once.
func TestNoMarkerForAReplayedRow(t *testing.T) {
	t.Parallel()
	b, failing := setupReplayable(t)
	release := holdMailboxRow(t, b, 2)
	p := b.pump(t)
	b.drain(t, p)
	require.Equal(t, "SUCCEEDED", b.row(t, 1).Status)
	require.Equal(t, "DEAD", b.row(t, 2).Status)

	lockWaiter(t, b) // the batch's immediate marker waits for row 2
	replay(t, b, 2)  // committed while it waits
	release()
	p.WaitMarkers()

	require.NotNil(t, markedAt(t, b, 1), "the row still terminal is marked")
	require.Nil(t, markedAt(t, b, 2), "the mailbox says processed for a message open again")
	require.Equal(t, "PENDING", b.row(t, 2).Status)
	require.False(t, b.row(t, 2).Owed)

	// Finished again, it is marked with the time of its new terminal commit.
	failing.Store(false)
	b.clock.Advance(time.Minute)
	b.drain(t, p)
	p.WaitMarkers()
	require.Equal(t, "SUCCEEDED", b.row(t, 2).Status)
	at := markedAt(t, b, 2)
	require.NotNil(t, at)
	require.Equal(t, clock.WallClock(b.clock.Now(), time.UTC), *at)
}

// The other order (INV-8c, INV-8d): a replay that comes while the immediate marker writes the
// mailbox waits until that write has committed, since the marker holds its batch's debt row
// locked until then and a reopened row leaves its debt first; the row was terminal when its
// marker was written. A trigger on cminmsgs holds the marker's write open: it waits for a user
// lock the test holds.
func TestReplayWaitsForTheMarkersWrite(t *testing.T) {
	t.Parallel()
	b, p, open := writingReplayable(t)
	ctx := context.Background()
	require.Equal(t, "DEAD", b.row(t, 2).Status)

	// The replay runs on a pool of one connection, whose backend the test watches.
	cfg, err := pgxpool.ParseConfig(b.db.URL)
	require.NoError(t, err)
	cfg.MaxConns = 1
	rp, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(t, err)
	defer rp.Close()
	var pid int32
	require.NoError(t, rp.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid))
	done := make(chan error, 1)
	go func() {
		_, err := procstate.Replay(ctx, rp, procstate.ReplayRequest{IDs: []int64{2}, Actor: "ops", Reason: "upstream fixed", Now: b.clock.Now()})
		done <- err
	}()
	var finished bool
	require.Eventually(t, func() bool {
		select {
		case err := <-done:
			require.NoError(t, err)
			finished = true
			return true
		default:
		}
		var blocked bool
		err := b.db.Pool.QueryRow(ctx, `SELECT cardinality(pg_blocking_pids($1)) > 0`, pid).Scan(&blocked)
		return err == nil && blocked
	}, 10*time.Second, 5*time.Millisecond)
	require.False(t, finished, "the replay committed while the marker was writing the row to the mailbox")

	open()
	require.NoError(t, <-done)
	p.WaitMarkers()
	require.NotNil(t, markedAt(t, b, 2), "marked while it was terminal")
	require.Equal(t, "PENDING", b.row(t, 2).Status, "then replayed")
}

// holdMarkerWrite makes the mailbox's processed-marker writes of b wait, once they have started,
// until the returned open is called (also at the test's end, before p's markers are waited for):
// a trigger on cminmsgs waits for a user lock the test holds.
func holdMarkerWrite(t *testing.T, b *bundle, p *processor.Engine) (open func()) {
	t.Helper()
	ctx := context.Background()
	gate := b.mb.Name + "_gate" // t_<hex>_gate
	_, err := b.mb.SQL.ExecContext(ctx, `CREATE TRIGGER hold_marker BEFORE UPDATE ON cminmsgs FOR EACH ROW
		SET @gate = GET_LOCK('`+gate+`', 30) + RELEASE_LOCK('`+gate+`')`)
	require.NoError(t, err)
	conn, err := b.mb.SQL.Conn(ctx)
	require.NoError(t, err)
	var got int
	require.NoError(t, conn.QueryRowContext(ctx, `SELECT GET_LOCK(?, 0)`, gate).Scan(&got))
	require.Equal(t, 1, got)
	t.Cleanup(p.WaitMarkers)
	var opened atomic.Bool
	open = func() {
		if opened.CompareAndSwap(false, true) {
			_, err := conn.ExecContext(ctx, `DO RELEASE_LOCK(?)`, gate)
			require.NoError(t, err)
			require.NoError(t, conn.Close())
		}
	}
	t.Cleanup(open) // runs before WaitMarkers
	return open
}

// writingReplayable is setupReplayable drained, with the batch's immediate marker holding in
// its mailbox write (holdMarkerWrite) until open is called.
func writingReplayable(t *testing.T) (b *bundle, p *processor.Engine, open func()) {
	t.Helper()
	b, _ = setupReplayable(t)
	p = b.pump(t)
	open = holdMarkerWrite(t, b, p)
	b.drain(t, p)
	require.Eventually(t, func() bool { // the marker's mailbox update waits in the trigger
		var n int
		err := b.mb.SQL.QueryRowContext(context.Background(), `SELECT count(*) FROM information_schema.PROCESSLIST
			WHERE DB = ? AND STATE = 'User lock'`, b.mb.Name).Scan(&n)
		return err == nil && n == 1
	}, 10*time.Second, 5*time.Millisecond)
	return b, p, open
}

// While the immediate marker writes the mailbox, what holds a replay back is its batch's debt row,
// locked until that write has committed; the batch's message rows themselves stay unlocked (a lock
// on each would cost a write per message: INV-8d).
func TestTheMarkersGuardIsItsDebtRow(t *testing.T) {
	t.Parallel()
	b, p, open := writingReplayable(t)
	ctx := context.Background()

	tx, err := b.db.Pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = tx.Exec(ctx, `SELECT 1 FROM proc_state WHERE msg_id IN (1, 2) FOR UPDATE NOWAIT`)
	require.NoError(t, err, "the marker holds a message row locked")
	require.NoError(t, tx.Rollback(ctx))
	tx, err = b.db.Pool.Begin(ctx)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `SELECT 1 FROM marker_debt WHERE ids = '{1,2}' FOR UPDATE NOWAIT`)
	require.Error(t, err, "the batch's debt row is not locked while its marker is written")
	require.NoError(t, tx.Rollback(ctx))

	open()
	p.WaitMarkers()
	require.NotNil(t, markedAt(t, b, 1))
	require.NotNil(t, markedAt(t, b, 2))
	var debts int
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT count(*) FROM marker_debt`).Scan(&debts))
	require.Zero(t, debts, "paid in full, the debt is gone")
}

// The immediate marker never waits for a PostgreSQL row lock while it holds mailbox row locks
// (the sweep locks the other way round): a batch whose debt row someone else holds when the
// mailbox is written — a replay under way, the jobs stage moving it — is not written, and its
// debt stays for the sweep.
func TestMarkerLeavesALockedDebtToTheSweep(t *testing.T) {
	t.Parallel()
	b := setupMailbox(t, 2)
	ctx := context.Background()
	b.enqueueSeq(t, 1, 2, func(id int64) string { return flop(int(id), 15, "S") })
	release := holdMailboxRow(t, b, 2)
	p := b.pump(t)
	b.drain(t, p)
	lockWaiter(t, b) // the marker waits for the mailbox lock; it has locked nothing in PostgreSQL
	tx, err := b.db.Pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = tx.Exec(ctx, `SELECT 1 FROM marker_debt WHERE ids = '{1,2}' FOR UPDATE`)
	require.NoError(t, err)
	release()
	p.WaitMarkers() // returns although the debt is still locked

	require.Nil(t, markedAt(t, b, 1), "a batch whose debt someone else holds was written")
	require.Nil(t, markedAt(t, b, 2))
	require.NoError(t, tx.Rollback(ctx))
	require.True(t, b.row(t, 2).Owed, "its batch's debt stays for the jobs stage")
	var debts int
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT count(*) FROM marker_debt WHERE ids = '{1,2}'`).Scan(&debts))
	require.Equal(t, 1, debts)
}

// A failed immediate marker moves its batch's debt onto the rows that are still terminal
// (markerFailedSQL; INV-8c): a row replayed while the mailbox write waited owes nothing, the
// other owes on its own, due 30 s later with the failure counted, and nothing is lost.
func TestFailedMarkerMovesTheDebtOntoTerminalRowsOnly(t *testing.T) {
	t.Parallel()
	b, _ := setupReplayable(t)
	ctx := context.Background()
	release := holdMailboxRow(t, b, 2)
	p := b.pump(t)
	b.drain(t, p)
	thread := lockWaiter(t, b)
	replay(t, b, 2)
	_, err := b.mb.SQL.ExecContext(ctx, fmt.Sprintf(`KILL QUERY %d`, thread)) // the mailbox write fails
	require.NoError(t, err)
	p.WaitMarkers()
	release()

	var next *time.Time
	var attempts int
	var msg *string
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT backfill_next_at, backfill_attempts, backfill_error FROM proc_state WHERE msg_id = 1`).
		Scan(&next, &attempts, &msg))
	require.NotNil(t, next, "the terminal row owes its marker on its own")
	require.Equal(t, t0.Add(30*time.Second), next.UTC())
	require.Equal(t, 1, attempts)
	require.NotNil(t, msg)
	require.Contains(t, *msg, "interrupted")
	r := b.row(t, 2)
	require.Equal(t, "PENDING", r.Status)
	require.False(t, r.Owed, "the replayed row owes a marker")
	var debts int
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT count(*) FROM marker_debt`).Scan(&debts))
	require.Zero(t, debts, "the batch's debt moved onto its terminal row")
	require.Nil(t, markedAt(t, b, 1))
	require.Nil(t, markedAt(t, b, 2))
}
