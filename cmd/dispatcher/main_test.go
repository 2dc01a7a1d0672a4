package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/msgx/msgx/pkg/dev/kafkatest"
	"github.com/msgx/msgx/pkg/dev/testdb"
	"github.com/msgx/msgx/pkg/dispatch"
	"github.com/msgx/msgx/pkg/event"
	"github.com/msgx/msgx/pkg/obs"
	"github.com/msgx/msgx/pkg/outbox"
)

// childEnv makes the test binary run the dispatcher's main instead of the tests: the crash test
// starts real dispatcher processes this way and SIGKILLs them.
const childEnv = "MSGX_TEST_DISPATCHER_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		main()
		os.Exit(0)
	}
	code := m.Run()
	if err := kafkatest.CloseApache(); err != nil {
		fmt.Fprintln(os.Stderr, "close Apache Kafka:", err)
		code = 1
	}
	// sarama's go-metrics meters share one process-wide ticker goroutine.
	if err := goleak.Find(goleak.IgnoreTopFunction("github.com/rcrowley/go-metrics.(*meterArbiter).tick")); code == 0 && err != nil {
		fmt.Fprintln(os.Stderr, "goleak:", err)
		code = 1
	}
	os.Exit(code)
}

var t0 = time.Date(2026, 12, 2, 8, 0, 0, 0, time.UTC)

// testConfig is a dispatcher configuration for db and the brokers, from the same defaults as
// production.
func testConfig(t *testing.T, db *testdb.DB, brokers []string) Config {
	t.Helper()
	cfg, err := load()
	require.NoError(t, err)
	cfg.PGURL = db.URL
	cfg.HTTPAddr, cfg.ShutdownDrain = "127.0.0.1:0", 0
	cfg.Kafka.Brokers = brokers
	cfg.Leader.Retry = 100 * time.Millisecond
	cfg.Dispatch.FlushPeriod = 100 * time.Millisecond
	cfg.Dispatch.Batch = 200
	return cfg
}

func enqueue(t *testing.T, db *testdb.DB, flids, per int) int {
	t.Helper()
	var evs []event.Event
	for v := 1; v <= per; v++ {
		for f := 1; f <= flids; f++ {
			evs = append(evs, event.Event{Target: event.TargetMsg, FLID: int64(f), Type: event.Upsert, StateVersion: int64(v), MsgID: int64(v),
				Payload: json.RawMessage(fmt.Sprintf(`{"flid":%d,"state_version":%d}`, f, v))})
			if len(evs) == 5000 {
				require.NoError(t, outbox.Enqueue(context.Background(), db.Pool, t0, evs...))
				evs = evs[:0]
			}
		}
	}
	require.NoError(t, outbox.Enqueue(context.Background(), db.Pool, t0, evs...))
	return flids * per
}

func sentCount(t *testing.T, db *testdb.DB) int {
	t.Helper()
	var n int
	require.NoError(t, db.Pool.QueryRow(context.Background(), `SELECT count(*) FROM `+testdb.AllEvents+` WHERE status = 'SENT'`).Scan(&n))
	return n
}

func TestRefusesD3Violation(t *testing.T) {
	t.Parallel()
	cfg, err := load()
	require.NoError(t, err)
	cfg.Kafka.Version = "0.10.2.0"
	err = run(context.Background(), cfg, zerolog.Nop(), obs.NewRegistry(), nil)
	require.ErrorIs(t, err, dispatch.ErrRefused)
	require.Contains(t, err.Error(), "MSGX_KAFKA_VERSION: must be at least 2.1.0")
	require.NotContains(t, err.Error(), "\n")

	cfg.Kafka.Version = "2.8.0"
	cfg.Kafka.ProduceTimeout = time.Hour
	err = run(context.Background(), cfg, zerolog.Nop(), obs.NewRegistry(), nil)
	require.ErrorIs(t, err, dispatch.ErrRefused)
	require.Contains(t, err.Error(), "MSGX_KAFKA_PRODUCE_TIMEOUT: must be between")
}

// The D3b override variables do not exist: setting one is refused by the configuration (the
// child exits 2 with a clear line before it connects to anything).
func TestRefusesD3OverrideVariable(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(os.Args[0]) // the child runs main (TestMain), which parses no test flags
	cmd.Env = append(os.Environ(), childEnv+"=1", "MSGX_KAFKA_ACKS=1", "MSGX_HTTP_ADDR=127.0.0.1:0")
	out, err := cmd.CombinedOutput()
	require.Error(t, err)
	require.Equal(t, 2, cmd.ProcessState.ExitCode())
	require.Contains(t, string(out), "MSGX_KAFKA_ACKS: producer rule D3b")
}

// run end to end: leader, readiness (kafka check), both topics, events delivered, clean stop.
func TestRunDelivers(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	broker, _ := kafkatest.Broker(t)
	cfg := testConfig(t, db, broker.Addrs())
	n := enqueue(t, db, 50, 4)
	require.NoError(t, outbox.Enqueue(context.Background(), db.Pool, t0,
		event.Event{Target: event.TargetSchd, FLID: 1, Type: event.Upsert, StateVersion: 4, Payload: json.RawMessage(`{"flid":1}`)}))

	ctx, cancel := context.WithCancel(context.Background())
	srvc := make(chan *obs.Server, 1)
	done := make(chan error, 1)
	go func() { done <- run(ctx, cfg, zerolog.Nop(), obs.NewRegistry(), func(s *obs.Server) { srvc <- s }) }()
	srv := <-srvc
	require.Eventually(t, func() bool { return sentCount(t, db) == n+1 }, 30*time.Second, 20*time.Millisecond)

	resp, err := http.Get("http://" + srv.Addr() + "/readyz")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	require.Contains(t, string(body), `"kafka":"ok"`)
	require.Contains(t, string(body), `"role":"leader"`)

	resp, err = http.Get("http://" + srv.Addr() + "/metrics")
	require.NoError(t, err)
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Contains(t, string(body), fmt.Sprintf(`msgx_dispatch_sent_total{target="KAFKA:msg"} %d`, n))
	require.Contains(t, string(body), `msgx_dispatch_sent_total{target="KAFKA:schd"} 1`)

	cancel()
	require.NoError(t, <-done)
	recs := kafkatest.ConsumeAll(t, broker.Addrs(), cfg.Kafka.TopicChanges, time.Minute)
	require.Len(t, recs, n)
	require.Equal(t, int64(1), recs[0].Event(t).Epoch)
}

// TestCrashSafety SIGKILLs a real dispatcher process 20 times during a 50,000-event run
// (10,000 with -short): nothing is lost and every FLID's order holds after dropping duplicate
// (flid, state_version).
func TestCrashSafety(t *testing.T) {
	t.Parallel()
	flids, per, kills := 1000, 50, 20
	if testing.Short() {
		flids, per, kills = 200, 50, 5
	}
	db := testdb.New(t)
	broker, kcfg := kafkatest.Broker(t)
	n := enqueue(t, db, flids, per)
	// The kills fall in the first half of the run: the last one leaves half the events, so a fast
	// dispatcher cannot finish between the count that triggers a kill and the kill itself.
	step := n / (2 * kills)

	start := func() *exec.Cmd {
		cmd := exec.Command(os.Args[0]) // the child runs main (TestMain), which parses no test flags
		cmd.Env = append(os.Environ(),
			childEnv+"=1",
			"MSGX_PG_URL="+db.URL,
			"MSGX_KAFKA_BROKERS="+strings.Join(broker.Addrs(), ","),
			"MSGX_HTTP_ADDR=127.0.0.1:0",
			"MSGX_LEADER_RETRY=100ms",
			"MSGX_DISPATCH_BATCH=200",
			"MSGX_LOG_LEVEL=error",
		)
		cmd.Stderr = io.Discard
		require.NoError(t, cmd.Start())
		return cmd
	}
	waitSent := func(atLeast int) {
		t.Helper()
		require.Eventually(t, func() bool { return sentCount(t, db) >= atLeast }, 60*time.Second, 5*time.Millisecond)
	}

	for i := 1; i <= kills; i++ {
		cmd := start()
		waitSent(i * step)
		require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
		_ = cmd.Wait()
		require.Less(t, sentCount(t, db), n, "kill %d came after the run ended", i)
	}
	last := start()
	waitSent(n)
	require.NoError(t, last.Process.Signal(syscall.SIGTERM))
	require.NoError(t, last.Wait())

	recs := kafkatest.ConsumeAll(t, broker.Addrs(), kcfg.TopicChanges, 2*time.Minute)
	type key struct {
		flid    string
		version int64
	}
	seen := map[key]bool{}
	lastV := map[string]int64{}
	dups := 0
	epochs := map[int64]bool{}
	for _, r := range recs {
		e := r.Event(t)
		v := e.StateVersion
		k := key{r.Key, v}
		epochs[e.Epoch] = true
		if seen[k] {
			dups++
			continue
		}
		seen[k] = true
		require.Equal(t, lastV[r.Key]+1, v, "FLID %s order", r.Key)
		lastV[r.Key] = v
	}
	require.Len(t, lastV, flids)
	for f, v := range lastV {
		require.Equal(t, int64(per), v, "FLID %s", f)
	}
	require.Len(t, seen, n, "nothing lost")
	t.Logf("%d events, %d SIGKILLs: %d records consumed, %d duplicates, %d leader epochs seen", n, kills, len(recs), dups, len(epochs))
}
