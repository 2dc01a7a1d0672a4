package outbox_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/outbox"
)

// A logical dump of a database whose events all went by retention (the delivery cursor's newest
// move, of generation 3, is all that is left of them) restored onto a lower timeline (generation
// 0 here): the cursor alone tells the term start that the database came from a higher
// generation, so it raises the epoch (the decision is pkg/dispatch's restoreRequest), and the event the processor wrote before, drawn below the
// cursor, is renumbered above it and claimed. Without the cursor in the highest id the raise did
// not happen and the event was never claimed nor counted (found in review).
func TestAnEventDrawnBelowTheCursorAfterARestoreIsSent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	_, err := b.db.Pool.Exec(ctx, `INSERT INTO msg_event_delivered (through, sent_at) VALUES ((3::bigint << 40) + 100, $1)`, t0)
	require.NoError(t, err)
	_, err = b.db.Pool.Exec(ctx, `SELECT setval('msg_event_event_id_seq', 100)`)
	require.NoError(t, err)
	require.NoError(t, outbox.Enqueue(ctx, b.db.Pool, t0, msgEvent(7, 1)))

	id, err := b.store.Identity(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(3), outbox.GenerationOf(id.MaxEventID), "the cursor's generation is the highest")
	require.Greater(t, outbox.GenerationOf(id.MaxEventID), id.Generation(), "above the one the database draws: the term start raises (dispatch.restoreRequest)")
	out, err := b.store.SettleEpoch(ctx, b.lease, outbox.EpochRequest{Now: t0, Kind: outbox.RestoreOlderTimeline, Detail: "test"})
	require.NoError(t, err)
	require.True(t, out.Raised)

	c, _, err := b.store.Claim(ctx, t0, 10, 1000, 0)
	require.NoError(t, err)
	require.Len(t, c.Events, 1, "the event the processor wrote after the restore is claimed")
	require.Greater(t, c.Events[0].EventID, (int64(3)<<40)+100, "above the cursor")
}

// The delivery cursor passes change events only: a state a previous release's processor wrote to
// msg_event (QUEUED, the column's default) below the cursor still waits for the fold, and the
// readers show it PENDING (found in review: the view showed it SENT).
func TestTheCursorPassesNoState(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	_, err := b.db.Pool.Exec(ctx, `
INSERT INTO msg_event (event_id, target, partition_key, event_type, state_version, body, created_at)
VALUES (1, 'KAFKA:schd', '7', 'UPSERT', 1, '{}', $1), (2, 'KAFKA:msg', '7', 'UPSERT', 1, '{}', $1)`, t0)
	require.NoError(t, err)
	_, err = b.db.Pool.Exec(ctx, `INSERT INTO msg_event_delivered (through, sent_at) VALUES (2, $1)`, t0)
	require.NoError(t, err)
	rows, err := b.db.Pool.Query(ctx, `SELECT target || ' ' || status FROM msg_event_delivery ORDER BY event_id`)
	require.NoError(t, err)
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.Equal(t, []string{"KAFKA:schd PENDING", "KAFKA:msg SENT"}, got)
}
