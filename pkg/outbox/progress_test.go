package outbox_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/leader"
)

// TestProgressWaitsForNoLeaseWrite: the heartbeat's progress read does not queue behind a write
// of the lease row in flight (a renewal, a takeover): it reads the committed epoch. A takeover
// once committed fences it.
func TestProgressWaitsForNoLeaseWrite(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()

	tx, err := b.db.Pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = tx.Exec(ctx, `UPDATE leader_lease SET epoch = epoch + 1 WHERE role = 'dispatcher'`)
	require.NoError(t, err)
	// Bounded only so that a read that does wait fails the test instead of hanging it.
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err = b.store.Progress(rctx, b.lease)
	require.NoError(t, err, "the committed epoch is still the lease's")

	require.NoError(t, tx.Commit(ctx))
	_, err = b.store.Progress(ctx, b.lease)
	require.ErrorIs(t, err, leader.ErrFenced)
}
