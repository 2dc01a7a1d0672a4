package migrate_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/dev/testdb"
	"github.com/msgx/msgx/pkg/migrate"
)

// stateOutboxVersion is the migration that moved the state topic's events out of msg_event
// (db/migrations).
const stateOutboxVersion = "20270112120000"

// The state outbox migration on a populated database, up then down then up, with dbmate's own
// rollback. Up: each FLID's newest unsent KAFKA:schd event becomes its msg_state_out row with its
// delivery state, the older unsent ones go (the newest represents them), the sent ones and the
// KAFKA:msg events stay. Down: the unsent states, folded or not, are KAFKA:schd events again,
// under their ids. Up again: nothing unsent is lost.
func TestStateOutboxMigration(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, exec, up := populated(t)
	t0 := time.Date(2026, 12, 2, 8, 0, 0, 0, time.UTC)
	type row struct {
		ID       int64
		Key      string
		Version  int64
		Status   string
		Attempts int
		Body     string
	}
	rows := func(q string) []row { return collect[row](t, db, q) }

	rollbackTo(t, db, stateOutboxVersion)
	exec(`INSERT INTO msg_event (event_id, target, partition_key, event_type, state_version, body, status, attempts, created_at, sent_at) VALUES
	  (1, 'KAFKA:schd', '7', 'UPSERT', 1, '{"v":1}', 'SENT',    0, $1, $1),
	  (2, 'KAFKA:schd', '7', 'UPSERT', 2, '{"v":2}', 'DEAD',    5, $1, NULL),
	  (3, 'KAFKA:schd', '7', 'UPSERT', 3, '{"v":3}', 'PENDING', 1, $1, NULL),
	  (4, 'KAFKA:schd', '8', 'UPSERT', 1, '{"v":1}', 'DEAD',    5, $1, NULL),
	  (5, 'KAFKA:schd', '9', 'UPSERT', 4, '{"v":4}', 'SENT',    0, $1, $1),
	  (6, 'KAFKA:msg',  '7', 'UPSERT', 3, '{"c":3}', 'PENDING', 0, $1, NULL)`, t0)

	require.Contains(t, up(), stateOutboxVersion)
	const outSQL = `SELECT event_id, partition_key, state_version, status, attempts, body FROM msg_state_out ORDER BY partition_key`
	require.Equal(t, []row{
		{3, "7", 3, "PENDING", 1, `{"v":3}`},
		{4, "8", 1, "DEAD", 5, `{"v":1}`},
	}, rows(outSQL), "each FLID's newest unsent state, as it stood")
	const eventSQL = `SELECT event_id, partition_key, state_version, status, attempts, COALESCE(body, '') FROM msg_event ORDER BY event_id`
	require.Equal(t, []row{
		{1, "7", 1, "SENT", 0, `{"v":1}`},
		{5, "9", 4, "SENT", 0, `{"v":4}`},
		{6, "7", 3, "PENDING", 0, `{"c":3}`},
	}, rows(eventSQL), "the sent states and the changes stay")

	// A state written after (in the log) and one folded: both unsent, both come back.
	exec(`INSERT INTO msg_state_log (event_id, partition_key, event_type, state_version, body, created_at) VALUES (10, '9', 'UPSERT', 5, '{"v":5}', $1)`, t0)
	rollbackTo(t, db, stateOutboxVersion)
	var table *string
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT to_regclass('msg_state_out')::text`).Scan(&table))
	require.Nil(t, table, "msg_state_out dropped")
	require.Equal(t, []row{
		{1, "7", 1, "SENT", 0, `{"v":1}`},
		{3, "7", 3, "PENDING", 1, `{"v":3}`},
		{4, "8", 1, "DEAD", 5, `{"v":1}`},
		{5, "9", 4, "SENT", 0, `{"v":4}`},
		{6, "7", 3, "PENDING", 0, `{"c":3}`},
		{10, "9", 5, "PENDING", 0, `{"v":5}`},
	}, rows(eventSQL))

	require.Contains(t, up(), stateOutboxVersion)
	require.Equal(t, []row{
		{3, "7", 3, "PENDING", 1, `{"v":3}`},
		{4, "8", 1, "DEAD", 5, `{"v":1}`},
		{10, "9", 5, "PENDING", 0, `{"v":5}`},
	}, rows(outSQL))
}

// populated is a fresh database to fill at an older migration: exec runs a statement that must
// succeed, up applies the migrations not applied yet (migrate.Up) and returns their versions.
func populated(t *testing.T) (db *testdb.DB, exec func(q string, args ...any), up func() []string) {
	t.Helper()
	ctx := context.Background()
	db = testdb.New(t)
	exec = func(q string, args ...any) {
		t.Helper()
		_, err := db.Pool.Exec(ctx, q, args...)
		require.NoError(t, err, q)
	}
	up = func() []string {
		t.Helper()
		conn, err := pgx.Connect(ctx, db.URL)
		require.NoError(t, err)
		defer conn.Close(ctx)
		applied, err := migrate.Up(ctx, conn)
		require.NoError(t, err)
		return applied
	}
	return db, exec, up
}

// collect reads the rows of q into T, column by field.
func collect[T any](t *testing.T, db *testdb.DB, q string) []T {
	t.Helper()
	r, err := db.Pool.Query(context.Background(), q)
	require.NoError(t, err)
	out, err := pgx.CollectRows(r, pgx.RowToStructByPos[T])
	require.NoError(t, err)
	return out
}
