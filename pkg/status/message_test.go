package status_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/dev/testdb"
	"github.com/msgx/msgx/pkg/status"
)

// ReadMessage reads a live message and an archived one (with its archive times) alike, with
// attempts and audit rows; an unknown id is ErrNoMessage.
func TestReadMessage(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx := context.Background()
	at := time.Date(2026, 12, 2, 8, 0, 0, 0, time.UTC)
	_, err := db.Pool.Exec(ctx, `INSERT INTO proc_state (msg_id, raw, status, error_class, reason, attempts, next_attempt_at, enqueued_at)
		VALUES (7, '<MSG/>', 'FAILED', 'INFRA', 'mailbox down', 1, $1, $1)`, at)
	require.NoError(t, err)
	_, err = db.Pool.Exec(ctx, `INSERT INTO proc_state_hst (msg_id, raw, status, attempts, enqueued_at, finished_at, archived_at, raw_cleared_at)
		VALUES (8, NULL, 'SUCCEEDED', 1, $1, $1, $1, $1)`, at)
	require.NoError(t, err)
	_, err = db.Pool.Exec(ctx, `INSERT INTO msg_attempt (msg_id, attempt, at, epoch, outcome, error_class, reason)
		VALUES (7, 1, $1, 3, 'FAILED', 'INFRA', 'mailbox down')`, at)
	require.NoError(t, err)
	_, err = db.Pool.Exec(ctx, `INSERT INTO replay_audit (action, actor, reason, selector, ids, at)
		VALUES ('replay', 'ops', 'try again', 'ids=7', '{7}', $1), ('dlq-replay', 'ops', 'event 7', 'ids=7', '{7}', $1)`, at)
	require.NoError(t, err)

	live, err := status.ReadMessage(ctx, db.Pool, 7)
	require.NoError(t, err)
	require.False(t, live.Message.Archived)
	require.Equal(t, "FAILED", live.Message.Status)
	require.Equal(t, "INFRA", live.Message.Class)
	require.Equal(t, "<MSG/>", *live.Message.Raw)
	require.Len(t, live.Attempts, 1)
	require.Equal(t, int64(3), live.Attempts[0].Epoch)
	require.Len(t, live.Audit, 1, "dlq-* rows name event ids, not messages")
	require.Equal(t, "try again", live.Audit[0].Reason)

	archived, err := status.ReadMessage(ctx, db.Pool, 8)
	require.NoError(t, err)
	require.True(t, archived.Message.Archived)
	require.Nil(t, archived.Message.Raw, "the raw retention cleared it")
	require.True(t, at.Equal(*archived.Message.RawClearedAt))
	require.Empty(t, archived.Attempts)
	require.Empty(t, archived.Audit)

	_, err = status.ReadMessage(ctx, db.Pool, 9)
	require.ErrorIs(t, err, status.ErrNoMessage)
}
