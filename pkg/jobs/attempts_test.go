package jobs_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/jobs"
)

// A message's attempt history lives as long as its row: archiving keeps it, a row moved back to
// proc_state (backfill retry) keeps it, and deleting the archived row deletes it (the trigger
// msg_attempt_cascade, docs/spec.md §5).
func TestAttemptHistoryFollowsItsMessage(t *testing.T) {
	t.Parallel()
	b := setup(t)
	now := t0.Add(40 * 24 * time.Hour)
	b.clock.Set(now)
	old := now.Add(-35 * 24 * time.Hour)
	for _, q := range []string{
		`INSERT INTO proc_state (msg_id, raw, status, attempts, enqueued_at, finished_at, backfill_next_at, backfill_done_at, backfill_outcome)
		 VALUES (1, 'raw', 'SUCCEEDED', 1, $1, $1, $1, $1, 'MARKED')`,
		`INSERT INTO proc_state (msg_id, raw, status, attempts, enqueued_at, finished_at, backfill_next_at, backfill_abandoned_at, backfill_outcome)
		 VALUES (2, 'raw', 'SUCCEEDED', 1, $1, $1, $1, $1, 'OVERDUE')`,
		`INSERT INTO msg_attempt (msg_id, attempt, at, epoch, outcome, error_class, reason)
		 VALUES (1, 1, $1, 1, 'FAILED', 'INFRA', 'x'), (1, 2, $1, 1, 'SUCCEEDED', NULL, NULL), (2, 1, $1, 1, 'SUCCEEDED', NULL, NULL)`,
	} {
		_, err := b.db.Pool.Exec(ctx, q, old)
		require.NoError(t, err)
	}
	_, err := b.jobs(t).RunOnce(ctx, jobs.Retention, b.lease)
	require.NoError(t, err)
	require.Equal(t, 2, b.count(t, `SELECT count(*) FROM proc_state_hst`))
	require.Equal(t, 3, b.count(t, `SELECT count(*) FROM msg_attempt`), "archiving keeps the history")

	_, err = jobs.RetryBackfill(ctx, b.db.Pool, jobs.RetryRequest{IDs: []int64{2}, Actor: "ops", Reason: "reconciled", Now: now})
	require.NoError(t, err)
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM proc_state WHERE msg_id = 2`))
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM msg_attempt WHERE msg_id = 2`), "a row moved back keeps its history")

	_, err = b.db.Pool.Exec(ctx, `DELETE FROM proc_state_hst WHERE msg_id = 1`)
	require.NoError(t, err)
	require.Zero(t, b.count(t, `SELECT count(*) FROM msg_attempt WHERE msg_id = 1`), "the history goes with the archived row")
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM msg_attempt WHERE msg_id = 2`))
}
