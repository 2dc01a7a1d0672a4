package ingest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The compat entry commits its mailbox row, then enqueues it in PostgreSQL. A poll that read the
// row in between inserts its batch while the compat entry's insert is not committed yet: its
// plain insert sees no row of the range, waits on the compat entry's key and, when that commits,
// meets a unique violation; the poll then enqueues by ON CONFLICT DO NOTHING and succeeds.
func TestPollRacingTheCompatEnqueue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, testConfig)
	id := b.insert(t, sampleMsg) // the compat entry's mailbox insert, committed
	tx, err := b.pg.Pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = tx.Exec(ctx, compatEnqueueSQL, id, sampleMsg, sha(sampleMsg), receivedAt(t0), t0) // its enqueue, in flight
	require.NoError(t, err)

	done := make(chan error, 1)
	go func() { _, err := b.ing.Step(ctx); done <- err }()
	require.Eventually(t, func() bool {
		var n int
		err := b.pg.Pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'
			AND query LIKE '%INSERT INTO proc_state (msg_id, raw, raw_bytes%'`).Scan(&n)
		return err == nil && n == 1
	}, 10*time.Second, 5*time.Millisecond, "the poll's insert waits on the compat entry's row")
	require.NoError(t, tx.Commit(ctx))
	err = <-done
	require.NoError(t, err, "a poll failed because the compat entry enqueued its row meanwhile")
	require.Zero(t, metric(t, b.reg, "msgx_ingest_poll_errors_total", "store", "postgres"))
	require.Equal(t, []int64{id}, b.ids(t))
	require.Equal(t, id, b.cursor(t).W)
}
