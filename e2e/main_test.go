// Package e2e_test runs msgx end to end: the four binaries as real processes (pkg/stack) against
// a fresh PostgreSQL schema and a fresh mailbox database per test, the development Kafka broker,
// a real Kafka consumer of both topics, and the simulator (pkg/simulate) as the AODB.
package e2e_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/dev/mailboxtest"
	"github.com/msgx/msgx/pkg/dev/simulate"
	"github.com/msgx/msgx/pkg/dev/stack"
	"github.com/msgx/msgx/pkg/dev/testdb"
	"github.com/msgx/msgx/pkg/dev/tlsenv"
	"github.com/msgx/msgx/pkg/roles"
)

// binDir holds the binaries, built once for the package.
var binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "msgx-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	err = stack.Build(ctx, dir)
	cancel()
	if err != nil {
		_ = os.RemoveAll(dir)
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
	binDir = dir
	code := tlsenv.Run(m) // stops the private TLS servers
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// Topics.
const (
	topicChanges = "msgx.flight.changes"
	topicState   = "msgx.flight.state"
)

// fastEnv are the settings every test stack gets: short polls and periods so a small day drains
// in seconds.
var fastEnv = []string{
	"MSGX_POLL_INTERVAL=100ms",
	"MSGX_SCHD_FLUSH_PERIOD=500ms",
	"MSGX_BACKFILL_INTERVAL=1s",
	"MSGX_LOG_LEVEL=info",
}

// bundle is one test's running msgx: its databases, the stack, a consumer of both topics and
// the mailbox opened for the simulator's Writer.
type bundle struct {
	pg       *testdb.DB
	pgRoles  *testdb.Roles
	users    *mailboxtest.Users
	mailbox  *mailboxtest.DB
	stack    *stack.Stack
	consumer *stack.Consumer
	logDir   string
}

// setup starts the four binaries the production way on a fresh schema and mailbox database:
// each binary connects as its own least-privilege role (pkg/roles, per-test names) over TLS —
// PostgreSQL with sslmode=verify-full and MariaDB with a verified tls= on the private tlsenv
// servers, the broker with TLS and SASL/SCRAM-SHA-512 — and a consumer of both topics reads
// over the same TLS and SASL. The test itself inspects the databases as their administrator.
// Everything stops when the test ends (the stack before the databases are dropped); the
// binaries' logs are kept (and their directory logged) when the test fails.
func setup(t *testing.T, env ...string) *bundle {
	t.Helper()
	pg := tlsenv.PG(t).NewDB(t)
	mb := tlsenv.MySQL(t).NewDB(t)
	pgRoles, users := pg.Roles(t), mb.Users(t)
	ca := tlsenv.Authority(t)
	roleEnv := map[string][]string{
		"ingest":     {"MSGX_PG_URL=" + pgRoles.URL(roles.Ingest), "MSGX_MYSQL_DSN=" + users.DSN(roles.Ingest)},
		"processor":  {"MSGX_PG_URL=" + pgRoles.URL(roles.Processor), "MSGX_MYSQL_DSN=" + users.DSN(roles.Processor)},
		"dispatcher": {"MSGX_PG_URL=" + pgRoles.URL(roles.Dispatcher)}, // no mailbox account at all
		"jobs":       {"MSGX_PG_URL=" + pgRoles.URL(roles.Jobs), "MSGX_MYSQL_DSN=" + users.DSN(roles.Jobs)},
	}
	logDir, err := os.MkdirTemp("", "msgx-e2e-"+strings.ReplaceAll(t.Name(), "/", "_")+"-")
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := stack.Start(ctx, stack.Options{
		BinDir: binDir, LogDir: logDir, RandomPorts: true, RoleEnv: roleEnv,
		Env: append(append([]string{"MSGX_MYSQL_TLS_CA_FILE=" + ca.CAFile}, fastEnv...), env...),
		KafkaAuth: &stack.KafkaAuth{CertFile: ca.CertFile, KeyFile: ca.KeyFile, CAFile: ca.CAFile,
			User: "msgx", Password: testdb.RandomSuffix() + testdb.RandomSuffix()},
	})
	require.NoError(t, err, "start the stack (logs in %s)", logDir)
	b := &bundle{pg: pg, pgRoles: pgRoles, users: users, mailbox: mb, stack: s, logDir: logDir}
	t.Cleanup(func() {
		if b.consumer != nil {
			if err := b.consumer.Close(); err != nil {
				t.Errorf("close consumer: %v", err)
			}
		}
		if err := s.Close(); err != nil {
			t.Errorf("stop the stack: %v (logs in %s)", err, logDir)
		}
		if t.Failed() {
			t.Logf("binaries' logs kept in %s", logDir)
			return
		}
		_ = os.RemoveAll(logDir)
	})
	b.consumer, err = stack.ConsumeWith(s.Kafka, []string{topicChanges, topicState}, nil)
	require.NoError(t, err)
	return b
}

// checkProductionShaped asserts that each binary's PostgreSQL sessions are its own role's and
// encrypted, and that the mailbox sessions are the binaries' own users (the server refuses
// plaintext: require_secure_transport). Kafka needs no check: the broker speaks only TLS and
// SCRAM, so every delivered record proves it.
func (b *bundle) checkProductionShaped(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	rows, err := b.pg.Pool.Query(ctx, `SELECT a.application_name, a.usename::text, s.ssl
		FROM pg_stat_activity a JOIN pg_stat_ssl s USING (pid)
		WHERE a.usename::text LIKE $1 || '%' AND a.application_name LIKE 'msgx-%'`, b.pgRoles.Prefix)
	require.NoError(t, err)
	seen := map[string]string{}
	for rows.Next() {
		var app, user string
		var ssl bool
		require.NoError(t, rows.Scan(&app, &user, &ssl))
		require.True(t, ssl, "%s connects as %s without TLS", app, user)
		seen[app] = user
	}
	require.NoError(t, rows.Err())
	require.Equal(t, map[string]string{
		"msgx-ingest": b.pgRoles.Name(roles.Ingest), "msgx-ingest-leader": b.pgRoles.Name(roles.Ingest),
		"msgx-ingest-api": b.pgRoles.Name(roles.Ingest),
		"msgx-processor":  b.pgRoles.Name(roles.Processor), "msgx-processor-leader": b.pgRoles.Name(roles.Processor),
		"msgx-dispatcher": b.pgRoles.Name(roles.Dispatcher), "msgx-dispatcher-leader": b.pgRoles.Name(roles.Dispatcher),
		"msgx-jobs": b.pgRoles.Name(roles.Jobs), "msgx-jobs-leader": b.pgRoles.Name(roles.Jobs),
	}, seen, "every binary's pool connects as its own role")

	var users []string
	mrows, err := b.mailbox.SQL.QueryContext(ctx, `SELECT DISTINCT USER FROM information_schema.PROCESSLIST WHERE USER LIKE CONCAT(?, '%') ORDER BY USER`, b.users.Prefix)
	require.NoError(t, err)
	defer mrows.Close()
	for mrows.Next() {
		var u string
		require.NoError(t, mrows.Scan(&u))
		users = append(users, u)
	}
	require.NoError(t, mrows.Err())
	require.Subset(t, []string{roles.Name(b.users.Prefix, roles.Ingest), roles.Name(b.users.Prefix, roles.Processor), roles.Name(b.users.Prefix, roles.Jobs)},
		users, "only the binaries' own mailbox users")
	require.Contains(t, users, roles.Name(b.users.Prefix, roles.Ingest), "ingest polls as its own user")
}

// write inserts msgs into the bundle's mailbox with the simulator's Writer.
func (b *bundle) write(t *testing.T, ctx context.Context, cfg simulate.WriterConfig, msgs []simulate.Message) simulate.Written {
	t.Helper()
	db, err := simulate.OpenMailbox(b.mailbox.DSN)
	require.NoError(t, err)
	defer db.Close()
	w, err := simulate.NewWriter(db, cfg)
	require.NoError(t, err)
	wr, err := w.Write(ctx, msgs)
	require.NoError(t, err)
	require.Len(t, wr.IDs, len(msgs))
	return wr
}

// waitDrained waits (bounded) until every mailbox id up to maxID is done everywhere.
func (b *bundle) waitDrained(t *testing.T, maxID int64, timeout time.Duration) {
	t.Helper()
	_, err := stack.WaitDrained(context.Background(), b.pg.Pool, maxID, 200*time.Millisecond, time.Second, timeout)
	require.NoError(t, err, "logs in %s", b.logDir)
}

// airportToday is today's date in the simulator's (and the binaries' default) airport zone. The
// simulated day is placed there: the jobs binary runs the daily history sweep at start on a fresh
// schema (after 03:30 airport time), and it would purge a day older than MSGX_HISTORY_RETENTION.
func airportToday(t *testing.T) time.Time {
	t.Helper()
	y, m, d := time.Now().In(airport(t)).Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

// airport is the binaries' default airport zone (MSGX_AIRPORT_TZ), the simulator's too.
func airport(t *testing.T) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation("Asia/Shanghai")
	require.NoError(t, err)
	return loc
}

// maxOf returns the largest id.
func maxOf(ids []int64) int64 {
	var m int64
	for _, id := range ids {
		m = max(m, id)
	}
	return m
}

// logPath names a binary's log for failure messages.
func (b *bundle) logPath(name string) string { return filepath.Join(b.logDir, name+".log") }

// noProblems fails the test with a header and one problem per line when problems is not empty.
func noProblems(t *testing.T, problems []string, header string, args ...any) {
	t.Helper()
	if len(problems) == 0 {
		return
	}
	const limit = 200
	shown := problems[:min(len(problems), limit)]
	more := ""
	if len(problems) > limit {
		more = fmt.Sprintf("\n… and %d more", len(problems)-limit)
	}
	require.FailNow(t, fmt.Sprintf(header, args...)+":\n"+strings.Join(shown, "\n")+more)
}
