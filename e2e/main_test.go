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
	code := m.Run()
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
	mailbox  *mailboxtest.DB
	stack    *stack.Stack
	consumer *stack.Consumer
	logDir   string
}

// setup starts the four binaries on a fresh schema and mailbox database, and a consumer of both
// topics. Everything stops when the test ends (the stack before the databases are dropped); the
// binaries' logs are kept (and their directory logged) when the test fails.
func setup(t *testing.T, env ...string) *bundle {
	t.Helper()
	pg := testdb.New(t)
	mb := mailboxtest.New(t)
	logDir, err := os.MkdirTemp("", "msgx-e2e-"+strings.ReplaceAll(t.Name(), "/", "_")+"-")
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := stack.Start(ctx, stack.Options{
		BinDir: binDir, LogDir: logDir, PGURL: pg.URL, MySQL: mb.DSN, RandomPorts: true,
		Env: append(append([]string{}, fastEnv...), env...),
	})
	require.NoError(t, err, "start the stack (logs in %s)", logDir)
	b := &bundle{pg: pg, mailbox: mb, stack: s, logDir: logDir}
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
	b.consumer, err = stack.Consume(s.Brokers, []string{topicChanges, topicState}, nil)
	require.NoError(t, err)
	return b
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
	loc, err := time.LoadLocation("Asia/Shanghai")
	require.NoError(t, err)
	y, m, d := time.Now().In(loc).Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
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
