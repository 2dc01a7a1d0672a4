package e2e_test

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/dev/simulate"
	"github.com/msgx/msgx/pkg/dev/stack"
	"github.com/msgx/msgx/pkg/dev/testdb"
)

// BenchmarkGapProof is the latency from mailbox commit to msgx.flight.changes at 200 FLOPs/s
// for 60 s when 1% of the inserts are first tried in a transaction that rolls back (each leaves a
// permanent gap), with production's MSGX_MAX_COMMIT_DELAY (30 s). Ingest reads the mailbox as
// root, which has PROCESS, so it proves the gaps permanent (docs/ingest.md); with
// MSGX_BENCH_GAPPROOF_NOPROCESS=1 it reads as a user with SELECT on cminmsgs only, so every gap
// ages. It prints the percentiles and how the gaps were passed; nothing is written.
//
//	go test -run '^$' -bench BenchmarkGapProof -benchtime 1x -timeout 20m ./e2e/
func BenchmarkGapProof(b *testing.B) {
	e := newBenchEnv(b)
	e.rollbackShare = 0.01
	noProcess := os.Getenv("MSGX_BENCH_GAPPROOF_NOPROCESS") == "1"
	for b.Loop() {
		pool, pgURL, dsn := e.prepare(b)
		opts := stack.Options{BinDir: e.bin, LogDir: filepath.Join(e.logs, "gapproof"), PGURL: pgURL, MySQL: dsn,
			RandomPorts: true, Env: []string{"MSGX_MAX_COMMIT_DELAY=30s"}}
		if noProcess {
			opts.RoleEnv = map[string][]string{"ingest": {"MSGX_MYSQL_DSN=" + selectOnlyUser(b, dsn)}}
		}
		s, err := stack.Start(e.ctx, opts)
		require.NoError(b, err)
		headID, _ := e.write(b, dsn, simulate.WriterConfig{Conns: 1, Batch: 1}, e.head)
		_, err = stack.WaitDelivered(e.ctx, pool, headID, 200*time.Millisecond)
		require.NoError(b, err)

		gen := newFlopGen(e.flights, e.head[len(e.head)-1].SEQN+1, e.head[len(e.head)-1].At, 2)
		// Without PROCESS the gaps age and the run does not drain within the drain timeout: the
		// figures are then of what arrived, the rest counted as later than anything that did.
		l := e.paced(b, s, pool, dsn, gen, 200, 60*time.Second, 1, !noProcess)
		fmt.Printf("gap proof (PROCESS %v), %s: %s\n", !noProcess, l.what(), l.figures())
		rows, err := pool.Query(e.ctx, `SELECT passed_by, count(*), count(found_at) FROM inbox_gap GROUP BY 1 ORDER BY 1`)
		require.NoError(b, err)
		for rows.Next() {
			var (
				by         string
				n, foundAt int64
			)
			require.NoError(b, rows.Scan(&by, &n, &foundAt))
			fmt.Printf("gaps passed %s: %d (found later: %d)\n", by, n, foundAt)
		}
		require.NoError(b, rows.Err())
		fmt.Printf("load average at the end: %s\n", loadAvg())
		b.ReportMetric(ms(l.p99), "p99_ms")
		require.NoError(b, s.Close())
	}
}

// selectOnlyUser creates a mailbox user with SELECT on cminmsgs only (no PROCESS), dropped when
// the benchmark ends, and returns its DSN.
func selectOnlyUser(b *testing.B, dsn string) string {
	cfg, err := mysql.ParseDSN(dsn)
	require.NoError(b, err)
	db, err := sql.Open("mysql", dsn)
	require.NoError(b, err)
	defer db.Close()
	user, pw := "msgx_bench_"+testdb.RandomSuffix(), testdb.RandomSuffix()
	_, err = db.Exec(fmt.Sprintf("CREATE USER '%s'@'%%' IDENTIFIED BY '%s'", user, pw))
	require.NoError(b, err)
	b.Cleanup(func() {
		d, err := sql.Open("mysql", dsn)
		if err == nil {
			_, _ = d.Exec(fmt.Sprintf("DROP USER IF EXISTS '%s'@'%%'", user))
			_ = d.Close()
		}
	})
	_, err = db.Exec(fmt.Sprintf("GRANT SELECT ON `%s`.`cminmsgs` TO '%s'@'%%'", cfg.DBName, user))
	require.NoError(b, err)
	c := cfg.Clone()
	c.User, c.Passwd = user, pw
	return c.FormatDSN()
}
