package migrate_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// changeCursorVersion is the migration that delivers the change topic's events by a cursor
// (db/migrations).
const changeCursorVersion = "20270113120000"

// The change cursor migration on a populated database, up then down then up, with dbmate's own
// rollback. Up: every event keeps its row and its delivery (the cursor starts above them all);
// new events are QUEUED, delivered once the cursor passes them, and a previous release's states
// written QUEUED are the fold's. Down: every QUEUED event is written back as the release before
// reads it, SENT with its cursor move's time or PENDING, and new events are PENDING again. Up
// again: nothing changes delivery.
func TestChangeCursorMigration(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, exec, up := populated(t)
	t0 := time.Date(2026, 12, 7, 8, 0, 0, 0, time.UTC)
	type row struct {
		ID     int64
		Status string
		SentAt *time.Time
	}
	rows := func(q string) []row {
		t.Helper()
		out := collect[row](t, db, q)
		for i := range out {
			if out[i].SentAt != nil {
				u := out[i].SentAt.UTC()
				out[i].SentAt = &u
			}
		}
		return out
	}
	at := func(d time.Duration) *time.Time { v := t0.Add(d); return &v }
	const eventSQL = `SELECT event_id, status, sent_at FROM msg_event WHERE target = 'KAFKA:msg' ORDER BY event_id`
	const deliverySQL = `SELECT event_id, status, sent_at FROM msg_event_delivery WHERE target = 'KAFKA:msg' ORDER BY event_id`
	insert := func(id int64, target string) {
		t.Helper()
		exec(`INSERT INTO msg_event (event_id, target, partition_key, event_type, state_version, body, created_at)
		      VALUES ($1, $2, '7', 'UPSERT', $1, '{}', $3)`, id, target, t0)
	}

	rollbackTo(t, db, changeCursorVersion)
	exec(`INSERT INTO msg_event (event_id, target, partition_key, event_type, state_version, body, status, attempts, created_at, sent_at) VALUES
	  (1, 'KAFKA:msg', '7', 'UPSERT', 1, '{}', 'SENT',    0, $1, $2),
	  (2, 'KAFKA:msg', '7', 'UPSERT', 2, '{}', 'PENDING', 1, $1, NULL),
	  (3, 'KAFKA:msg', '8', 'UPSERT', 1, '{}', 'DEAD',    5, $1, NULL)`, t0, t0.Add(time.Second))

	require.Contains(t, up(), changeCursorVersion)
	before := []row{{1, "SENT", at(time.Second)}, {2, "PENDING", nil}, {3, "DEAD", nil}}
	require.Equal(t, before, rows(eventSQL), "every event keeps its row")
	require.Equal(t, before, rows(deliverySQL), "and its delivery")
	var cursor int64
	var cursorAt time.Time
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT through, sent_at FROM msg_event_delivered`).Scan(&cursor, &cursorAt))
	require.Equal(t, int64(3), cursor, "the cursor starts above every event")
	require.True(t, t0.Add(time.Second).Equal(cursorAt), "at the last SENT mark's time: the tail read starts there")

	insert(4, "KAFKA:msg")
	insert(5, "KAFKA:msg")
	insert(6, "KAFKA:schd") // a previous release's processor while the Deployments roll
	exec(`INSERT INTO msg_event_delivered (through, sent_at) VALUES (4, $1)`, t0.Add(time.Minute))
	require.Equal(t, []row{{4, "QUEUED", nil}, {5, "QUEUED", nil}}, rows(eventSQL)[3:], "new events are QUEUED")
	require.Equal(t, append(before, row{4, "SENT", at(time.Minute)}, row{5, "PENDING", nil}), rows(deliverySQL),
		"delivered once the cursor passed them, at that move's time")
	var taken []int64
	r, err := db.Pool.Query(ctx, `SELECT event_id FROM msgx_take_legacy_states()`)
	require.NoError(t, err)
	taken, err = pgx.CollectRows(r, pgx.RowTo[int64])
	require.NoError(t, err)
	require.Equal(t, []int64{6}, taken, "the fold takes a previous release's QUEUED state")

	rollbackTo(t, db, changeCursorVersion)
	after := append(before, row{4, "SENT", at(time.Minute)}, row{5, "PENDING", nil})
	require.Equal(t, after, rows(eventSQL), "written back as the release before reads them")
	insert(7, "KAFKA:msg")
	require.Equal(t, row{7, "PENDING", nil}, rows(eventSQL)[5], "new events are PENDING again")
	var table *string
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT to_regclass('msg_event_delivered')::text`).Scan(&table))
	require.Nil(t, table, "msg_event_delivered dropped")

	require.Contains(t, up(), changeCursorVersion)
	require.Equal(t, append(after, row{7, "PENDING", nil}), rows(deliverySQL), "up again: the same delivery")
}
