package jobs_test

import (
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/jobs"
	"github.com/msgx/msgx/pkg/procstate"
)

// A replay and the jobs stage's move of an old debt lock the debt, then its rows (INV-8d): a
// replay that locked a row first and then, through the trigger, the debt naming it would wait
// for the move while the move waits for that row. The test pins that interleaving: rows 1 and 2
// are held as a previous release's immediate marker holds them during its mailbox write (its
// guard: FOR UPDATE SKIP LOCKED on the batch's terminal rows, as while the Deployments roll); the
// move deletes the debt and waits for row 1; a replay of message 2 starts; the old marker's
// write ends. Both end without a deadlock.
func TestReplayAndTheDebtMoveLockInOneOrder(t *testing.T) {
	t.Parallel()
	b := setup(t)
	j := b.jobs(t)
	b.clock.Set(t0)
	finished := t0.Add(-time.Minute) // past the sweep's grace
	for id := int64(1); id <= 2; id++ {
		_, err := b.db.Pool.Exec(ctx, `INSERT INTO proc_state (msg_id, raw, status, error_class, reason, attempts, enqueued_at, finished_at)
			VALUES ($1, 'x', 'DEAD', 'EXHAUSTED', 'test', 1, $2, $2)`, id, finished)
		require.NoError(t, err)
		b.mailboxRow(t, id, nil)
	}
	_, err := b.db.Pool.Exec(ctx, `INSERT INTO marker_debt (ids, finished_at) VALUES ('{1,2}', $1)`, finished)
	require.NoError(t, err)

	old, err := b.db.Pool.Begin(ctx) // the previous release's immediate marker guard
	require.NoError(t, err)
	_, err = old.Exec(ctx, `
SELECT p.msg_id
  FROM unnest($1::bigint[]) AS u(id) JOIN proc_state p ON p.msg_id = u.id
 WHERE p.status IN ('SUCCEEDED', 'SKIPPED', 'DEAD')
   FOR UPDATE OF p SKIP LOCKED`, []int64{1, 2})
	require.NoError(t, err)

	waiting := func(like string) func() bool {
		return func() bool {
			var n int
			err := b.db.Pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
				WHERE wait_event_type = 'Lock' AND query LIKE $1`, like).Scan(&n)
			return err == nil && n == 1
		}
	}
	moveErr := make(chan error, 1)
	go func() {
		_, err := j.RunOnce(ctx, jobs.Backfill, b.lease)
		moveErr <- err
	}()
	require.Eventually(t, waiting(`%DELETE FROM marker_debt WHERE debt_id IN%`), 10*time.Second, 5*time.Millisecond)
	replayErr := make(chan error, 1)
	go func() {
		_, err := procstate.Replay(ctx, b.db.Pool, procstate.ReplayRequest{IDs: []int64{2}, Actor: "ops", Reason: "fixed", Now: t0})
		replayErr <- err
	}()
	// The replay waits behind the move; then the old marker's mailbox write is over.
	require.Eventually(t, waiting(`%msgx_lock_debts%`), 10*time.Second, 5*time.Millisecond)
	require.NoError(t, old.Rollback(ctx))

	errM, errR := <-moveErr, <-replayErr
	for _, err := range []error{errM, errR} {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) {
			require.NotEqual(t, "40P01", pgErr.Code, "deadlock between a replay and the debt move: %v", err)
		}
		require.NoError(t, err)
	}
}
