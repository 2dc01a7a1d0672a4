package dispatch_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/dev/stack"
	"github.com/msgx/msgx/pkg/dev/testdb"
	"github.com/msgx/msgx/pkg/dev/verify"
	"github.com/msgx/msgx/pkg/dispatch"
	"github.com/msgx/msgx/pkg/flight"
	"github.com/msgx/msgx/pkg/kafka"
)

// refConsumer is the reference consumer's interpreter and script (tools/refconsumer), in the
// environment scripts/ensure-refconsumer.sh makes (make setup runs it).
func refConsumer(t *testing.T) (python, script string) {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed: the reference consumer does not run (apt-get install python3 python3-venv; then scripts/ensure-refconsumer.sh)")
	}
	root, err := stack.Root()
	require.NoError(t, err)
	dir := filepath.Join(root, "tools", "refconsumer")
	python = filepath.Join(dir, ".venv", "bin", "python")
	_, err = os.Stat(python)
	require.NoError(t, err, "the reference consumer's environment is missing: run scripts/ensure-refconsumer.sh (make setup does)")
	return python, filepath.Join(dir, "consumer.py")
}

// refConsumed is what the reference consumer prints.
type refConsumed struct {
	Flights map[string]json.RawMessage `json:"flights"`
	Counts  struct {
		StateRecords   int `json:"state_records"`
		StateDropped   int `json:"state_dropped"`
		ChangesRecords int `json:"changes_records"`
		ChangesDropped int `json:"changes_dropped"`
		Heartbeats     int `json:"heartbeats"`
	} `json:"counts"`
	LastHeartbeat *struct {
		Changes struct {
			LastSent     *int64 `json:"last_sent_event_id"`
			OldestUnsent *int64 `json:"oldest_unsent_event_id"`
		} `json:"changes"`
		State struct {
			OldestUnsent *int64 `json:"oldest_unsent_event_id"`
		} `json:"state"`
	} `json:"last_heartbeat"`
}

// A consumer nobody here wrote (tools/refconsumer: Python, librdkafka through confluent-kafka,
// jsonschema) reads what a running dispatcher published, read_committed, over the broker's TLS
// and SCRAM, as docs/events.md tells consumers to. It validates every record against
// docs/contract, drops the duplicates a re-send makes by the documented rule, and rebuilds the
// flight table from the state topic: it equals PostgreSQL. It sees the heartbeats, the last
// saying that nothing waits. Its state topic is not compacted: a compaction pass another case
// asks of the shared broker (kfake compacts every topic at once) would fold the re-sent
// duplicate into its original, and the consumer would have nothing to drop; the case after it
// reads a compacted topic.
func confReferenceConsumer(t *testing.T, b *confBroker) {
	cfg := b.topics(t, "refconsumer", nil, map[string]string{"cleanup.policy": "delete"})
	st := newConfStage(t, cfg, dispatch.Config{Batch: 500, FlushPeriod: 200 * time.Millisecond, FlushLimit: 500,
		TopicHeartbeat: cfg.TopicHeartbeat, HeartbeatKey: cfg.TxnIDPrefix, HeartbeatPeriod: 200 * time.Millisecond})
	states := map[int64]*flight.State{}
	flids := make([]int64, 30)
	for i := range flids {
		flids[i] = int64(i + 1)
	}
	for v := int64(1); v <= 3; v++ {
		writeFlights(t, st.db, states, flids, v)
	}
	purgeFlights(t, st.db, states, flids[:5])

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- st.disp.Run(ctx, st.lease) }()
	waitUntil(t, time.Minute, 50*time.Millisecond, "the outbox drained", func() bool { return st.unsent(t) == 0 })
	drained := len(b.read(t, cfg.TopicHeartbeat))
	waitUntil(t, time.Minute, 50*time.Millisecond, "a heartbeat after the drain", func() bool {
		return len(b.read(t, cfg.TopicHeartbeat)) >= drained+2
	})
	cancel()
	require.NoError(t, <-done)

	// A re-send after a lost acknowledgement: the last state record and a change, identical.
	p := dialConf(t, cfg)
	var again []kafka.Record
	for _, topic := range []string{cfg.TopicState, cfg.TopicChanges} {
		recs := b.read(t, topic)
		r := recs[len(recs)-1]
		k := kafka.Record{Topic: topic, Key: r.Key, Value: r.Value}
		for name, v := range r.Headers {
			k.Headers = append(k.Headers, kafka.Header{Key: name, Value: v})
		}
		again = append(again, k)
	}
	for _, err := range p.Send(context.Background(), again) {
		require.NoError(t, err)
	}

	got := runRef(t, cfg)
	checkRebuilt(t, st, got)
	require.Positive(t, got.Counts.StateDropped, "the state topic's duplicate was dropped")
	require.Positive(t, got.Counts.ChangesDropped, "the changes topic's duplicate was dropped")
	require.GreaterOrEqual(t, got.Counts.Heartbeats, 2)
	require.NotNil(t, got.LastHeartbeat)
	require.NotNil(t, got.LastHeartbeat.Changes.LastSent, "the term sent changes")
	require.Nil(t, got.LastHeartbeat.Changes.OldestUnsent, "nothing waits")
	require.Nil(t, got.LastHeartbeat.State.OldestUnsent, "nothing waits")

	// A state record that breaks the contract (a time without its instant) stops it.
	bad := again[0]
	bad.Value = bytes.Replace(bad.Value, []byte(`"sodt_instant"`), []byte(`"sodt_moment"`), 1)
	for i, h := range bad.Headers {
		if h.Key == "state_version" {
			bad.Headers[i].Value = "99"
		}
	}
	for _, err := range p.Send(context.Background(), []kafka.Record{bad}) {
		require.NoError(t, err)
	}
	cmd := refCommand(t, cfg)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	require.Error(t, cmd.Run(), "a record that breaks the contract")
	require.Equal(t, 1, cmd.ProcessState.ExitCode(), stderr.String())
	require.Contains(t, stderr.String(), "contract broken")
}

// checkRebuilt checks the reference consumer's rebuilt flight table against PostgreSQL.
func checkRebuilt(t *testing.T, st *confStage, got refConsumed) {
	t.Helper()
	stored, err := verify.LoadStates(context.Background(), st.db.Pool)
	require.NoError(t, err)
	require.Len(t, got.Flights, len(stored), "the rebuilt table has PostgreSQL's flights")
	for flid, s := range stored {
		v, ok := got.Flights[strconv.FormatInt(flid, 10)]
		require.True(t, ok, "flight %d rebuilt", flid)
		require.JSONEq(t, string(s.AppendJSONIn(nil, time.UTC)), string(v), "flight %d", flid)
	}
}

// runRef runs the reference consumer against cfg's topics and returns what it read.
func runRef(t *testing.T, cfg kafka.Config) refConsumed {
	t.Helper()
	cmd := refCommand(t, cfg)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	began := time.Now()
	require.NoError(t, cmd.Run(), "the reference consumer: %s", stderr.String())
	var got refConsumed
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &got), stdout.String())
	t.Logf("reference consumer (%s): %+v", time.Since(began).Round(time.Millisecond), got.Counts)
	return got
}

// The reference consumer rebuilds the flight table from a state topic the broker's log cleaner
// has compacted (each flight's older versions gone: one record left of the four sent) and it
// equals PostgreSQL.
func confReferenceConsumerAfterCompaction(t *testing.T, b *confBroker) {
	cfg := b.topics(t, "refcompacted", nil, b.fastCompaction)
	st := newConfStage(t, cfg, dispatch.Config{Batch: 500, FlushPeriod: 100 * time.Millisecond, FlushLimit: 500})
	ctx := context.Background()
	const flights, versions, purge = 30, 4, 5
	states := map[int64]*flight.State{}
	flids := make([]int64, flights)
	for i := range flids {
		flids[i] = int64(i + 1)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- st.disp.Run(runCtx, st.lease) }()
	// Each version reaches the state topic before the next is written: every one is sent.
	for v := int64(1); v <= versions; v++ {
		writeFlights(t, st.db, states, flids, v)
		waitUntil(t, time.Minute, 20*time.Millisecond, "the outbox drained", func() bool { return st.unsent(t) == 0 })
	}
	purged := purgeFlights(t, st.db, states, flids[:purge])
	waitUntil(t, time.Minute, 20*time.Millisecond, "the outbox drained", func() bool { return st.unsent(t) == 0 })
	const sent = flights*versions + purge // each drain sent every flight's newest version

	// The running dispatcher sends the filler tombstones.
	recs, fillers := waitCompacted(t, b, st, cfg.TopicState, states, purged, func() {})
	waitUntil(t, time.Minute, 20*time.Millisecond, "the outbox drained", func() bool { return st.unsent(t) == 0 })
	cancel()
	require.NoError(t, <-done)
	t.Logf("%d state records sent of %d flights; %d left after compaction (with %d filler tombstones)", sent, flights, len(recs), fillers)

	got := runRef(t, cfg)
	require.Less(t, got.Counts.StateRecords, fillers+sent, "the consumer read a compacted topic")
	checkRebuilt(t, st, got)
}

// refArgs are the reference consumer's arguments reaching cfg's broker and topics (the SASL
// password in MSGX_REF_PASSWORD: refCommand sets it).
func refArgs(t *testing.T, cfg kafka.Config, more ...string) []string {
	t.Helper()
	root, err := stack.Root()
	require.NoError(t, err)
	return append([]string{"--brokers", strings.Join(cfg.Brokers, ","), "--schemas", filepath.Join(root, "docs", "contract"),
		"--changes-topic", cfg.TopicChanges, "--state-topic", cfg.TopicState, "--heartbeat-topic", cfg.TopicHeartbeat,
		"--ca-file", cfg.TLSCAFile, "--sasl-mechanism", cfg.SASLMechanism, "--sasl-user", cfg.SASLUser, "--sasl-password-env", "MSGX_REF_PASSWORD"}, more...)
}

// refCommand is the reference consumer run with args against cfg's broker.
func refCommand(t *testing.T, cfg kafka.Config, args ...string) *exec.Cmd {
	t.Helper()
	python, script := refConsumer(t)
	cmd := exec.Command(python, append([]string{script}, refArgs(t, cfg, args...)...)...)
	cmd.Env = append(os.Environ(), "MSGX_REF_PASSWORD="+cfg.SASLPassword)
	return cmd
}

// refLine is a line the reference consumer prints watching the heartbeat, and when it came.
type refLine struct {
	Ready         bool      `json:"ready"`
	Beat          *int      `json:"beat"`
	State         string    `json:"state"`
	Verdict       string    `json:"verdict"`
	Silent        float64   `json:"silent_seconds"`
	Period        float64   `json:"period_seconds"`
	Intervals     []float64 `json:"intervals_seconds"`
	TimeIntervals []float64 `json:"time_intervals_seconds"`
	Observed      float64   `json:"observed_period_seconds"`
	at            time.Time
}

// The heartbeat's period in the heartbeat case, and how many intervals it reads.
const (
	refBeatPeriod = time.Second
	refBeatBeats  = 6
)

// The reference consumer tails the heartbeat topic while the dispatcher binary runs with
// MSGX_HEARTBEAT_PERIOD=1s: it reads a heartbeat every period (within the tolerance
// docs/events.md gives) saying that nothing waits, and once the dispatcher was stopped (SIGTERM)
// it declares msgx stalled by the documented rule (no heartbeat for three periods), not before,
// and within three periods and a half of the stop.
func confReferenceConsumerHeartbeat(t *testing.T, b *confBroker) {
	cfg := b.topics(t, "refheartbeat", nil, nil)
	binDir := b.bins.get(t)
	db := testdb.New(t)
	ctx := context.Background()
	s, err := stack.Start(ctx, stack.Options{BinDir: binDir, LogDir: t.TempDir(), PGURL: db.URL, RandomPorts: true, Only: []string{},
		ExternalBrokers: cfg.Brokers, KafkaAuth: &stack.KafkaAuth{CAFile: cfg.TLSCAFile, User: cfg.SASLUser, Password: cfg.SASLPassword},
		Env: []string{"MSGX_HEARTBEAT_PERIOD=" + refBeatPeriod.String(), "MSGX_KAFKA_TOPIC_CHANGES=" + cfg.TopicChanges,
			"MSGX_KAFKA_TOPIC_STATE=" + cfg.TopicState, "MSGX_KAFKA_TOPIC_HEARTBEAT=" + cfg.TopicHeartbeat,
			"MSGX_KAFKA_TRANSACTIONAL_ID_PREFIX=" + cfg.TxnIDPrefix, "MSGX_LOG_LEVEL=info"}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	cmd := refCommand(t, cfg, "--watch-heartbeat", "--first-within", "60")
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := make(chan refLine, 64)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var l refLine
			if json.Unmarshal(sc.Bytes(), &l) == nil {
				l.at = time.Now()
				lines <- l
			}
		}
	}()
	next := func(within time.Duration) refLine {
		t.Helper()
		select {
		case l, ok := <-lines:
			require.True(t, ok, "the reference consumer ended: %s", stderr.String())
			return l
		case <-time.After(within):
			require.FailNow(t, "no line from the reference consumer", "within %s: %s", within, stderr.String())
			return refLine{}
		}
	}
	require.True(t, next(time.Minute).Ready)

	_, err = s.StartInstanceWith(ctx, "dispatcher", 1, nil)
	require.NoError(t, err)
	for n := 0; n <= refBeatBeats; n++ {
		l := next(30 * time.Second)
		require.Empty(t, l.Verdict, "stalled while the dispatcher runs")
		require.Equal(t, n, *l.Beat)
		require.Equal(t, refBeatPeriod.Seconds(), l.Period)
		require.Equal(t, "quiet", l.State, "nothing waits")
	}
	require.NoError(t, s.StopProc("dispatcher"))
	stopped := time.Now()
	var last refLine
	for last.Verdict == "" {
		last = next(10 * refBeatPeriod)
	}
	require.NoError(t, cmd.Wait(), stderr.String())
	p := refBeatPeriod.Seconds()
	t.Logf("reference consumer: %d intervals read %v s (records' times %v s), observed period %.3f s; stalled %.2f s after the stop, %.2f s after the last heartbeat",
		len(last.Intervals), last.Intervals, last.TimeIntervals, last.Observed, last.at.Sub(stopped).Seconds(), last.Silent)
	require.Equal(t, "stalled", last.Verdict)
	require.GreaterOrEqual(t, len(last.Intervals), refBeatBeats)
	// docs/events.md, "Heartbeat": read between 0 and 2 periods apart, the median interval
	// within a tenth of the period; stalled after three periods without one, declared within a
	// tenth of a period more.
	for i, d := range last.Intervals {
		require.InDelta(t, p, d, p, "interval %d as read", i)
	}
	require.InDelta(t, p, last.Observed, p/10, "the observed period (median interval)")
	require.GreaterOrEqual(t, last.Silent, 3*p, "stalled only after three periods without a heartbeat")
	require.LessOrEqual(t, last.Silent, 3.1*p+0.05, "stalled within three periods and a tenth of the last heartbeat")
	require.LessOrEqual(t, last.at.Sub(stopped).Seconds(), 3.5*p, "stalled within three periods and a half of the stop")
}
