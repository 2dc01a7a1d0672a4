package status_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/dev/testdb"
	"github.com/msgx/msgx/pkg/jobs"
	"github.com/msgx/msgx/pkg/status"
)

// TestAbandonedMarkersLiveAndArchived: an abandoned marker awaits reconciliation (msgxctl backfill
// list-abandoned, retry) whether its row is live or archived: the archive moves abandoned rows to
// proc_state_hst after MSGX_PROC_STATE_RETENTION and keeps them there until they are retried. The
// snapshot (msgxctl status, the console's verdict) counts them as the jobs stage lists them.
func TestAbandonedMarkersLiveAndArchived(t *testing.T) {
	t.Parallel()
	db := markersDB(t, `
       (1, 'SUCCEEDED', 1, $1, $1, $1, 0, NULL, NULL, NULL),     -- owes its marker on its own
       (2, 'SKIPPED', 1, $1, $1, $1, 9, 'OVERDUE', NULL, $1),     -- abandoned, live
       (3, 'SUCCEEDED', 1, $1, $1, $1, 1, 'MARKED', $1, NULL)`, // settled
		`
INSERT INTO proc_state_hst (msg_id, status, attempts, enqueued_at, finished_at, backfill_next_at, backfill_attempts,
                            backfill_outcome, backfill_abandoned_at, archived_at)
VALUES (4, 'SUCCEEDED', 1, $1, $1, $1, 1, 'MISSING_ROW', $1, $1)`, // abandoned, archived
	)
	ctx, at := context.Background(), markersAt

	s, err := status.Read(ctx, db.Pool, at.Add(time.Hour))
	require.NoError(t, err)
	require.Equal(t, int64(1), s.MarkersOwed)
	listed, err := jobs.ListAbandoned(ctx, db.Pool, 100)
	require.NoError(t, err)
	require.Len(t, listed, 2)
	require.Equal(t, int64(len(listed)), s.MarkersAbandoned, "the live and the archived abandoned marker, as msgxctl backfill list-abandoned lists them")

	console, err := status.ReadWith(ctx, db.Pool, at.Add(time.Hour), status.Options{OpenOnly: true})
	require.NoError(t, err)
	require.Equal(t, s.MarkersAbandoned, console.MarkersAbandoned)
}

// TestMarkersOwedOncePerRow: one row in every marker state of proc_state (archived ones:
// TestAbandonedMarkersLiveAndArchived), and the count and age the snapshot (msgxctl status, the
// console's verdict) reads through marker_owed, the rule's one definition:
// a row owing on its own and a terminal row in a batch's debt owe one marker each, also when
// the row sits in two debts (replayed and finished again: owed since its oldest debt); a row
// replayed since its debt (open again) owes nothing, nor do settled, abandoned or open rows.
func TestMarkersOwedOncePerRow(t *testing.T) {
	t.Parallel()
	db := markersDB(t, `
       (1, 'SUCCEEDED', 1, $1, $1::timestamptz + interval '5 min', $1, 0, NULL, NULL, NULL), -- owes on its own
       (2, 'SKIPPED', 1, $1, $1, NULL, 0, NULL, NULL, NULL),                    -- in one debt
       (3, 'SKIPPED', 1, $1, $1, NULL, 0, NULL, NULL, NULL),                    -- in two debts
       (4, 'PENDING', 1, $1, NULL, NULL, 0, NULL, NULL, NULL),                  -- replayed since its debt
       (5, 'SUCCEEDED', 1, $1, $1, $1, 1, 'MARKED', $1, NULL),                  -- settled
       (6, 'SKIPPED', 1, $1, $1, $1, 9, 'OVERDUE', NULL, $1),                   -- abandoned
       (7, 'PENDING', 0, $1, NULL, NULL, 0, NULL, NULL, NULL)`, // open, never finished
		`INSERT INTO marker_debt (ids, finished_at) VALUES ('{2,3,4}', $1::timestamptz + interval '1 min'), ('{3}', $1::timestamptz + interval '2 min')`,
	)
	ctx, at := context.Background(), markersAt
	s, err := status.Read(ctx, db.Pool, at.Add(time.Hour))
	require.NoError(t, err)
	require.Equal(t, int64(3), s.MarkersOwed, "rows 1, 2 and 3, once each")
	require.NotNil(t, s.OldestOwed)
	require.Equal(t, 59*60.0, *s.OldestOwed, "owed since the oldest debt naming a row still owing (row 2 and 3's, at +1 min)")
	require.Equal(t, int64(1), s.MarkersAbandoned)
}

var markersAt = time.Date(2026, 12, 2, 8, 0, 0, 0, time.UTC)

// markerRows inserts proc_state rows with every column the marker rules read.
const markerRows = `
INSERT INTO proc_state (msg_id, status, attempts, enqueued_at, finished_at, backfill_next_at, backfill_attempts,
                        backfill_outcome, backfill_done_at, backfill_abandoned_at)
VALUES`

// markersDB is a fresh schema with the proc_state rows whose VALUES are rows (columns as in
// markerRows), then the statements in more; in each, $1 is markersAt.
func markersDB(t *testing.T, rows string, more ...string) *testdb.DB {
	t.Helper()
	db := testdb.New(t)
	for _, q := range append([]string{markerRows + rows}, more...) {
		_, err := db.Pool.Exec(context.Background(), q, markersAt)
		require.NoError(t, err, q)
	}
	return db
}
