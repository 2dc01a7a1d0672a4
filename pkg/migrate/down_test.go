package migrate_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/dev/testdb"
	"github.com/msgx/msgx/pkg/migrate"
)

// markerDebtVersion is the migration that added marker_debt (db/migrations).
const markerDebtVersion = "20270101120000"

// rollbackTo runs dbmate's down (tools/dbmate-pg rollback, the pinned dbmate library `make
// verify` uses) on db until version is no longer applied: the later migrations' downs first.
func rollbackTo(t *testing.T, db *testdb.DB, version string) {
	t.Helper()
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	files, err := filepath.Glob(filepath.Join(root, "db", "migrations", "*.sql"))
	require.NoError(t, err)
	later := 0 // the migrations to roll back: version and every one after it
	for _, f := range files {
		if filepath.Base(f) >= version {
			later++
		}
	}
	for range later + 1 {
		var applied bool
		require.NoError(t, db.Pool.QueryRow(context.Background(),
			`SELECT EXISTS (SELECT 1 FROM schema_migrations WHERE version = $1)`, version).Scan(&applied))
		if !applied {
			return
		}
		cmd := exec.Command("go", "tool", "dbmate-pg", "-url", db.URL, "-migrations-dir", "db/migrations", "rollback")
		cmd.Dir = root
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "dbmate rollback: %s", out)
	}
	t.Fatalf("migration %s still applied after %d rollbacks", version, later)
}

// The marker_debt migration's down path on a populated database, with dbmate's own rollback:
// the code before it reads only the rows' marker columns, so a terminal row that owes nothing
// anywhere was paid with its batch and becomes MARKED (live and archived), every batch debt moves
// onto its rows still terminal (a replayed row stays clean: it owes nothing), and every other
// marker state is kept. Up again, nothing owed is lost.
func TestMarkerDebtMigrationDown(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	t0 := time.Date(2026, 12, 2, 8, 0, 0, 0, time.UTC)
	t1, t2, t3 := t0.Add(time.Minute), t0.Add(2*time.Minute), t0.Add(3*time.Minute)
	exec := func(q string, args ...any) {
		t.Helper()
		_, err := db.Pool.Exec(ctx, q, args...)
		require.NoError(t, err)
	}
	row := func(id int64, status string, finished *time.Time, set string, args ...any) {
		t.Helper()
		exec(`INSERT INTO proc_state (msg_id, status, attempts, enqueued_at, finished_at) VALUES ($1, $2, 1, $3, $4)`,
			id, status, t0, finished)
		if set != "" {
			exec(`UPDATE proc_state SET `+set+` WHERE msg_id = $1`, append([]any{id}, args...)...)
		}
	}
	row(1, "SUCCEEDED", &t0, "")                                                                     // paid with its batch
	row(2, "SUCCEEDED", &t0, "")                                                                     // in debt {2,3}
	row(3, "PENDING", nil, "")                                                                       // replayed; still in debt {2,3}
	row(4, "DEAD", &t0, "backfill_next_at = $2, backfill_attempts = 1, backfill_error = 'down'", t2) // owes on its own
	row(5, "SKIPPED", &t0, "backfill_next_at = $2, backfill_done_at = $2, backfill_outcome = 'ALREADY_MARKED', backfill_attempts = 1", t1)
	row(6, "SUCCEEDED", &t0, "backfill_next_at = $2, backfill_abandoned_at = $2, backfill_outcome = 'MISSING_ROW', backfill_attempts = 1", t1)
	row(7, "SUCCEEDED", &t0, "")                                          // replayed and finished again: in debts {7} and {7,8}
	row(8, "PENDING", nil, "status = 'FAILED', next_attempt_at = $2", t1) // replayed, failed since: in debt {7,8}
	exec(`INSERT INTO marker_debt (ids, finished_at) VALUES ('{2,3}', $1), ('{7}', $2), ('{7,8}', $3)`, t1, t2, t3)
	exec(`INSERT INTO proc_state_hst (msg_id, status, attempts, enqueued_at, finished_at, archived_at) VALUES
		(100, 'SUCCEEDED', 1, $1, $1, $2), (101, 'DEAD', 1, $1, $1, $2)`, t0, t3)
	exec(`UPDATE proc_state_hst SET backfill_next_at = $1, backfill_abandoned_at = $1, backfill_outcome = 'OVERDUE' WHERE msg_id = 101`, t1)

	rollbackTo(t, db, markerDebtVersion)

	var table *string
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT to_regclass('marker_debt')::text`).Scan(&table))
	require.Nil(t, table, "marker_debt dropped")
	var index string
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT pg_get_indexdef('proc_state_settled'::regclass)`).Scan(&index))
	require.Contains(t, index, "WHERE ((backfill_done_at IS NOT NULL) OR (backfill_abandoned_at IS NOT NULL))")

	type marker struct {
		Status   string
		NextAt   *time.Time
		DoneAt   *time.Time
		Outcome  *string
		Attempts int // backfill_attempts
		Gone     *time.Time
	}
	read := func(table string, id int64) marker {
		t.Helper()
		var m marker
		require.NoError(t, db.Pool.QueryRow(ctx, `SELECT status, backfill_next_at, backfill_done_at, backfill_outcome, backfill_attempts, backfill_abandoned_at
			FROM `+pgx.Identifier{table}.Sanitize()+` WHERE msg_id = $1`, id).
			Scan(&m.Status, &m.NextAt, &m.DoneAt, &m.Outcome, &m.Attempts, &m.Gone))
		return m
	}
	ptr := func(s string) *string { return &s }
	at := func(tm time.Time) *time.Time { return &tm }
	utc := func(m marker) marker {
		for _, p := range []**time.Time{&m.NextAt, &m.DoneAt, &m.Gone} {
			if *p != nil {
				*p = at((*p).UTC())
			}
		}
		return m
	}
	want := map[int64]marker{
		1: {Status: "SUCCEEDED", DoneAt: &t0, Outcome: ptr("MARKED"), Attempts: 1},
		2: {Status: "SUCCEEDED", NextAt: &t1},
		3: {Status: "PENDING"},
		4: {Status: "DEAD", NextAt: &t2, Attempts: 1},
		5: {Status: "SKIPPED", NextAt: &t1, DoneAt: &t1, Outcome: ptr("ALREADY_MARKED"), Attempts: 1},
		6: {Status: "SUCCEEDED", NextAt: &t1, Outcome: ptr("MISSING_ROW"), Attempts: 1, Gone: &t1},
		8: {Status: "FAILED"},
	}
	for id, w := range want {
		require.Equal(t, w, utc(read("proc_state", id)), "message %d", id)
	}
	m7 := utc(read("proc_state", 7))
	require.NotNil(t, m7.NextAt, "a row named by two debts owes its marker")
	require.Contains(t, []time.Time{t2, t3}, *m7.NextAt)
	require.Nil(t, m7.DoneAt)
	require.Equal(t, marker{Status: "SUCCEEDED", DoneAt: &t0, Outcome: ptr("MARKED"), Attempts: 1}, utc(read("proc_state_hst", 100)))
	require.Equal(t, marker{Status: "DEAD", NextAt: &t1, Outcome: ptr("OVERDUE"), Gone: &t1}, utc(read("proc_state_hst", 101)))

	// Up again: the debt table comes back empty, and what the rows owe is still owed.
	conn, err := pgx.Connect(ctx, db.URL)
	require.NoError(t, err)
	defer conn.Close(ctx)
	applied, err := migrate.Up(ctx, conn)
	require.NoError(t, err)
	require.Contains(t, applied, markerDebtVersion)
	var debts, owed int
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM marker_debt),
		(SELECT count(*) FROM proc_state WHERE backfill_next_at IS NOT NULL AND backfill_done_at IS NULL AND backfill_abandoned_at IS NULL)`).
		Scan(&debts, &owed))
	require.Zero(t, debts)
	require.Equal(t, 3, owed, "messages 2, 4 and 7")
}
