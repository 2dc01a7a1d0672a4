package wake_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/msgx/msgx/pkg/dev/testdb"
	"github.com/msgx/msgx/pkg/wake"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestCommittedNotifyWakesRolledBackDoesNot(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	other := testdb.New(t) // another schema of the same database must not wake us
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	l := wake.Listen(ctx, db.Pool.Config().ConnConfig, wake.Inbox, zerolog.Nop())
	require.True(t, l.Wait(ctx, time.Minute), "the first signal after LISTEN")

	errRollback := errors.New("rollback")
	require.ErrorIs(t, pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
		require.NoError(t, wake.Notify(ctx, tx, wake.Inbox))
		return errRollback
	}), errRollback)
	require.NoError(t, pgx.BeginFunc(ctx, other.Pool, func(tx pgx.Tx) error { return wake.Notify(ctx, tx, wake.Inbox) }))
	start := time.Now()
	require.True(t, l.Wait(ctx, 300*time.Millisecond))
	require.GreaterOrEqual(t, time.Since(start), 300*time.Millisecond, "no wake-up from a rollback or another schema")

	require.NoError(t, pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error { return wake.Notify(ctx, tx, wake.Inbox) }))
	start = time.Now()
	require.True(t, l.Wait(ctx, time.Minute))
	require.Less(t, time.Since(start), time.Minute, "woken by the commit")
	cancel()
	require.False(t, l.Wait(ctx, time.Minute))
}
