package migrate_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// markerDebtGuardVersion is the migration whose trigger takes a reopened row out of its debts
// (db/migrations).
const markerDebtGuardVersion = "20270114120000"

// The marker debt guard migration on a populated database, up then down: up, any statement that
// reopens a terminal row takes it out of the debts naming it (a debt left naming none is
// deleted), while a terminal row changed to another terminal status and the other rows keep
// their debts; down, the trigger is gone and debts are as the statements leave them.
func TestMarkerDebtGuardMigration(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, exec, up := populated(t)
	t0 := time.Date(2026, 12, 7, 8, 0, 0, 0, time.UTC)
	debts := func() [][]int64 {
		t.Helper()
		var out [][]int64
		rows, err := db.Pool.Query(ctx, `SELECT ids FROM marker_debt ORDER BY debt_id`)
		require.NoError(t, err)
		defer rows.Close()
		for rows.Next() {
			var ids []int64
			require.NoError(t, rows.Scan(&ids))
			out = append(out, ids)
		}
		require.NoError(t, rows.Err())
		return out
	}
	reopen := func(id int64) {
		t.Helper()
		exec(`UPDATE proc_state SET status = 'PENDING', finished_at = NULL WHERE msg_id = $1`, id)
	}

	rollbackTo(t, db, markerDebtGuardVersion)
	for id := int64(1); id <= 5; id++ {
		exec(`INSERT INTO proc_state (msg_id, status, attempts, enqueued_at, finished_at, error_class, reason)
		      VALUES ($1, 'DEAD', 1, $2, $2, 'INFRA', 'test')`, id, t0)
	}
	exec(`INSERT INTO marker_debt (ids, finished_at) VALUES ('{1,2,3}', $1), ('{4}', $1), ('{3,5}', $1)`, t0)

	require.Contains(t, up(), markerDebtGuardVersion)
	require.Equal(t, [][]int64{{1, 2, 3}, {4}, {3, 5}}, debts(), "up changes no debt")
	reopen(3)
	require.Equal(t, [][]int64{{1, 2}, {4}, {5}}, debts(), "a reopened row leaves every debt naming it")
	reopen(4)
	require.Equal(t, [][]int64{{1, 2}, {5}}, debts(), "a debt left naming no row is deleted")
	exec(`UPDATE proc_state SET status = 'SKIPPED', reason = 'skipped' WHERE msg_id = 1`)
	require.Equal(t, [][]int64{{1, 2}, {5}}, debts(), "terminal to terminal: still owed")

	rollbackTo(t, db, markerDebtGuardVersion)
	reopen(5)
	require.Equal(t, [][]int64{{1, 2}, {5}}, debts(), "down: no trigger")
}
