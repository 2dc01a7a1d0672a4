package testdb_test

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/dev/testdb"
)

// TestStatementEndsWithItsTest: when a test process dies in the middle of a statement (killed
// at its timeout), the server ends the statement within about a second instead of running it on
// and loading every later test and benchmark. The dying test is this test binary run again as a
// child (helperRunForever), killed with SIGKILL while its statement computes forever.
func TestStatementEndsWithItsTest(t *testing.T) {
	if url := os.Getenv("MSGX_TESTDB_HELPER_URL"); url != "" {
		helperRunForever(t, url)
		return
	}
	t.Parallel()
	db := testdb.New(t)
	ctx := context.Background()
	child := exec.Command(os.Args[0], "-test.run=^TestStatementEndsWithItsTest$", "-test.count=1")
	child.Env = append(os.Environ(), "MSGX_TESTDB_HELPER_URL="+db.URL)
	require.NoError(t, child.Start())
	t.Cleanup(func() { _ = child.Process.Kill(); _ = child.Wait() })

	const mine = `SELECT pid FROM pg_stat_activity WHERE application_name = 'testdb-helper' AND query LIKE 'DO %' AND datname = current_database()`
	var pid int32
	require.Eventually(t, func() bool { return db.Pool.QueryRow(ctx, mine).Scan(&pid) == nil }, 30*time.Second, 10*time.Millisecond,
		"the child's statement started")
	t.Cleanup(func() { // never leave it running, whatever the outcome
		_, _ = db.Pool.Exec(context.Background(), `SELECT pg_terminate_backend($1)`, pid)
	})
	require.NoError(t, child.Process.Kill()) // SIGKILL: no goodbye to the server
	_ = child.Wait()
	require.Eventually(t, func() bool {
		var n int
		require.NoError(t, db.Pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE pid = $1`, pid).Scan(&n))
		return n == 0
	}, 10*time.Second, 20*time.Millisecond, "the server ended the orphaned statement (backend %d)", pid)
}

// helperRunForever is the child: a statement that computes until the server ends it.
func helperRunForever(t *testing.T, url string) {
	cfg, err := pgx.ParseConfig(url)
	require.NoError(t, err)
	cfg.RuntimeParams["application_name"] = "testdb-helper"
	conn, err := pgx.ConnectConfig(context.Background(), cfg)
	require.NoError(t, err)
	_, err = conn.Exec(context.Background(), `DO $$ BEGIN LOOP PERFORM 1; END LOOP; END $$`)
	t.Fatalf("the endless statement ended: %v", err)
}
