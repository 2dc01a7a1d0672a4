package dispatch_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/dev/testdb"
	"github.com/msgx/msgx/pkg/leader"
	"github.com/msgx/msgx/pkg/outbox"
)

// TestHeartbeatProgressWaitsForNoLeaseWrite: the heartbeat's progress read does not queue behind
// a write of the lease row in flight (a renewal, a takeover): it reads the committed epoch. A
// takeover once committed fences it.
func TestHeartbeatProgressWaitsForNoLeaseWrite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	_, err := db.Pool.Exec(ctx, `INSERT INTO leader_lease (role, epoch, holder, backend_pid, acquired_at, renewed_at) VALUES ('dispatcher', 7, 'test', 0, now(), now())`)
	require.NoError(t, err)
	store, err := outbox.New(db.Pool, outbox.Policy{MaxAttempts: 3, BackoffBase: time.Second, BackoffMax: 4 * time.Second})
	require.NoError(t, err)
	lease := leader.Lease{Role: "dispatcher", Epoch: 7}

	tx, err := db.Pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = tx.Exec(ctx, `UPDATE leader_lease SET epoch = epoch + 1 WHERE role = 'dispatcher'`)
	require.NoError(t, err)
	// Bounded only so that a read that does wait fails the test instead of hanging it.
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err = store.Progress(rctx, lease)
	require.NoError(t, err, "the committed epoch is still 7")

	require.NoError(t, tx.Commit(ctx))
	_, err = store.Progress(ctx, lease)
	require.ErrorIs(t, err, leader.ErrFenced)
}
