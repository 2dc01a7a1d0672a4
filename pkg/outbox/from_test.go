package outbox_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/outbox"
)

// TestClaimHeadsFromKeepsTheOldestUnsent: the bound a claim of events held on their rows
// returns is the smallest unsent event id, and claiming from it finds everything a claim from 0
// finds, a sent head's successor and a dead letter an operator replays included.
func TestClaimHeadsFromKeepsTheOldestUnsent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	require.NoError(t, outbox.Enqueue(ctx, b.db.Pool, t0, msgEvent(10, 1), msgEvent(20, 1), msgEvent(10, 2), msgEvent(30, 1)))
	holdOnRows(t, b)

	heads, _, from, err := b.store.ClaimHeadsFrom(ctx, t0, 10, 0)
	require.NoError(t, err)
	require.Equal(t, []int64{1, 2, 3, 4}, ids(heads))
	require.Equal(t, int64(1), from, "the smallest unsent id")

	_, err = b.store.MarkSent(ctx, b.lease, []int64{1, 4}, t0)
	require.NoError(t, err)
	heads, _, from, err = b.store.ClaimHeadsFrom(ctx, t0, 10, from)
	require.NoError(t, err)
	require.Equal(t, []int64{2, 3}, ids(heads), "FLID 10's next version, and FLID 20's head")
	require.Equal(t, int64(2), from)

	// FLID 20's head dies; FLID 10's event is sent: the bound stays at the dead letter, which a
	// replay makes due again.
	_, err = b.store.MarkFailed(ctx, b.lease, []outbox.Failure{{IDs: []int64{2}, Err: "broker says no", Fatal: true}}, t0.Add(time.Hour))
	require.NoError(t, err)
	_, err = b.store.MarkSent(ctx, b.lease, []int64{3}, t0)
	require.NoError(t, err)
	require.NoError(t, outbox.Enqueue(ctx, b.db.Pool, t0, msgEvent(40, 1)))
	holdOnRows(t, b)
	heads, _, from, err = b.store.ClaimHeadsFrom(ctx, t0.Add(time.Hour), 10, from)
	require.NoError(t, err)
	require.Equal(t, []int64{5}, ids(heads), "FLID 40's head, above the dead letter")
	require.Equal(t, int64(2), from, "a bound never passes an event that is not sent")
	_, err = b.store.Replay(ctx, outbox.Selector{IDs: []int64{2}}, outbox.Admin{Actor: "ops", Reason: "broker fixed"}, t0.Add(time.Hour))
	require.NoError(t, err)
	heads, _, _, err = b.store.ClaimHeadsFrom(ctx, t0.Add(time.Hour), 10, from)
	require.NoError(t, err)
	require.Equal(t, []int64{2, 5}, ids(heads), "the replayed dead letter, and FLID 40's head not yet sent")
}

// holdOnRows makes every QUEUED event an event held on its row (PENDING), as a previous
// release wrote them and as the delivery cursor leaves a held FLID's events.
func holdOnRows(t *testing.T, b bundle) {
	t.Helper()
	_, err := b.db.Pool.Exec(context.Background(), `UPDATE msg_event SET status = 'PENDING' WHERE status = 'QUEUED'`)
	require.NoError(t, err)
}

// TestEventsCommitInIDOrder: a writer's events take their ids only once the writer before it
// has committed (Enqueue takes PIPELINE_LOCK), so the delivery cursor never passes an event that
// commits later. Without the lock the second writer's events committed first, above the first
// writer's, and the cursor moved over the first writer's events unsent.
func TestEventsCommitInIDOrder(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	// An event sent before: the cursor is at its id, not at 0.
	require.NoError(t, outbox.Enqueue(ctx, b.db.Pool, t0, msgEvent(5, 1)))
	c, _, err := b.store.Claim(ctx, t0, 10, 1000, 0)
	require.NoError(t, err)
	_, err = b.store.Settle(ctx, b.lease, c, ids(c.Events), nil, t0)
	require.NoError(t, err)
	require.Positive(t, c.Upto)

	first, err := b.db.Pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = first.Rollback(ctx) }()
	require.NoError(t, outbox.Enqueue(ctx, first, t0, msgEvent(10, 1)))
	var firstID int64
	require.NoError(t, first.QueryRow(ctx, `SELECT max(event_id) FROM msg_event`).Scan(&firstID))

	second := make(chan error, 1)
	go func() { second <- outbox.Enqueue(ctx, b.db.Pool, t0, msgEvent(20, 1)) }()
	require.Eventually(t, func() bool {
		var waiting bool
		require.NoError(t, b.db.Pool.QueryRow(ctx, `
SELECT EXISTS (SELECT 1 FROM pg_locks
                WHERE locktype = 'advisory' AND NOT granted
                  AND classid = hashtext(current_schema())::oid AND objid = 1 AND objsubid = 2)`).Scan(&waiting))
		return waiting
	}, 10*time.Second, 5*time.Millisecond, "the second writer waits for the first's PIPELINE_LOCK")

	c, _, err = b.store.Claim(ctx, t0, 10, 1000, 0)
	require.NoError(t, err)
	require.Empty(t, c.Events)
	_, err = b.store.Settle(ctx, b.lease, c, nil, nil, t0)
	require.NoError(t, err)
	require.NoError(t, first.Commit(ctx))
	require.NoError(t, <-second)
	c, _, err = b.store.Claim(ctx, t0, 10, 1000, 0)
	require.NoError(t, err)
	require.Len(t, c.Events, 2, "both writers' events")
	require.Equal(t, "10", c.Events[0].FLID, "the first writer's event comes first")
	require.Less(t, c.From, firstID, "the cursor moved while the first writer was open stays below its event")
}

// TestEventIDsAreNotCachedPerSession: the commit-order argument above holds only while each
// nextval takes the sequence's next value; a sequence cache would hand a later writer an id
// from an earlier backend's block, below ids already committed.
func TestEventIDsAreNotCachedPerSession(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var cache int64
	require.NoError(t, b.db.Pool.QueryRow(context.Background(), `
SELECT cache_size FROM pg_sequences WHERE schemaname = current_schema() AND sequencename = 'msg_event_event_id_seq'`).Scan(&cache))
	require.Equal(t, int64(1), cache)
}
