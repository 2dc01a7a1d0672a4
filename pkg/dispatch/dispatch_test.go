package dispatch_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/msgx/msgx/pkg/dev/broker"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/goleak"

	"github.com/msgx/msgx/pkg/clock"
	"github.com/msgx/msgx/pkg/dev/kafkatest"
	"github.com/msgx/msgx/pkg/dev/testdb"
	"github.com/msgx/msgx/pkg/dispatch"
	"github.com/msgx/msgx/pkg/event"
	"github.com/msgx/msgx/pkg/kafka"
	"github.com/msgx/msgx/pkg/leader"
	"github.com/msgx/msgx/pkg/outbox"
)

func TestMain(m *testing.M) {
	code := m.Run()
	if err := kafkatest.CloseApache(); err != nil {
		fmt.Fprintln(os.Stderr, "close the shared Apache Kafka broker:", err)
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

type bundle struct {
	db       *testdb.DB
	broker   *broker.InProcess
	kcfg     kafka.Config
	producer dispatch.Sender
	sender   *faultySender
	store    *outbox.Store
	clock    *clock.Fake
	reg      *prometheus.Registry
	disp     *dispatch.Dispatcher
	lease    leader.Lease
	policy   outbox.Policy
}

type options struct {
	policy  outbox.Policy
	batch   int
	kfake   []kfake.Opt
	logSink *os.File
	// benchmarks only: a producer without transactions, and a compression codec
	nonTxn      bool
	compression string
	// lagSample: the lag's sampling (0: every record, so that tests see each observation)
	lagSample int
}

func setup(t testing.TB, opt options) *bundle {
	t.Helper()
	if opt.policy.MaxAttempts == 0 {
		opt.policy = outbox.Policy{MaxAttempts: 3, BackoffBase: time.Second, BackoffMax: 4 * time.Second}
	}
	if opt.lagSample == 0 {
		opt.lagSample = 1
	}
	b := &bundle{db: testdb.New(t), clock: clock.NewFake(t0), reg: prometheus.NewRegistry(), policy: opt.policy}
	b.broker, b.kcfg = kafkatest.Broker(t, opt.kfake...)
	if opt.compression != "" {
		b.kcfg.Compression = opt.compression
	}
	p, err := dial(b.kcfg, opt.nonTxn)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p.Close()) })
	b.producer = p
	b.sender = &faultySender{Sender: p}
	b.store, err = outbox.New(b.db.Pool, opt.policy)
	require.NoError(t, err)
	_, err = b.db.Pool.Exec(context.Background(),
		`INSERT INTO leader_lease (role, epoch, holder, backend_pid, acquired_at, renewed_at) VALUES ('dispatcher', 7, 'test', 0, $1, $1)`, t0)
	require.NoError(t, err)
	b.lease = leader.Lease{Role: "dispatcher", Epoch: 7}
	b.disp = b.dispatcher(t, dispatch.Config{Batch: opt.batch, LagSample: opt.lagSample}, b.reg, zerolog.Nop())
	return b
}

// dispatcher is a dispatcher over the bundle's store, sender and clock that sends to the
// bundle's topics, configured by cfg otherwise; where cfg leaves it zero, a batch of 500 (the
// other zero values take the dispatcher's defaults).
func (b *bundle) dispatcher(t testing.TB, cfg dispatch.Config, reg prometheus.Registerer, log zerolog.Logger) *dispatch.Dispatcher {
	t.Helper()
	cfg.TopicChanges, cfg.TopicState = b.kcfg.TopicChanges, b.kcfg.TopicState
	if cfg.Batch == 0 {
		cfg.Batch = 500
	}
	d, err := dispatch.New(cfg, b.store, b.sender, b.clock, reg, log)
	require.NoError(t, err)
	return d
}

// dial connects the production producer, or (nonTxn, benchmarks only) a plain one without
// transactions.
func dial(cfg kafka.Config, nonTxn bool) (interface {
	dispatch.Sender
	Close() error
}, error) {
	if nonTxn {
		return broker.DialPlain(cfg)
	}
	return kafka.Dial(cfg)
}

// faultySender fails the records that poison picks with a retryable error, as a broker that
// keeps rejecting one record would, and the records of their keys after them with
// kafka.ErrAborted (the Sender contract: a key's records are answered in order); everything
// else goes to the real producer.
type faultySender struct {
	dispatch.Sender
	mu     sync.Mutex
	poison func(kafka.Record) error
}

func (s *faultySender) setPoison(fn func(kafka.Record) error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.poison = fn
}

func (s *faultySender) Send(ctx context.Context, recs []kafka.Record) []error {
	s.mu.Lock()
	poison := s.poison
	s.mu.Unlock()
	if poison == nil {
		return s.Sender.Send(ctx, recs)
	}
	errs := make([]error, len(recs))
	var pass []kafka.Record
	var at []int
	failed := map[string]bool{}
	for i, r := range recs {
		if failed[r.Key] {
			errs[i] = &kafka.Error{Op: "produce", Err: kafka.ErrAborted}
			continue
		}
		if err := poison(r); err != nil {
			errs[i], failed[r.Key] = err, true
			continue
		}
		pass, at = append(pass, r), append(at, i)
	}
	for j, err := range s.Sender.Send(ctx, pass) {
		errs[at[j]] = err
	}
	return errs
}

func header(r kafka.Record, key string) string {
	for _, h := range r.Headers {
		if h.Key == key {
			return h.Value
		}
	}
	return ""
}

func msgEvent(flid, version int64) event.Event {
	return event.Event{Target: event.TargetMsg, FLID: flid, Type: event.Upsert, StateVersion: version, MsgID: 1000 + version,
		Payload: json.RawMessage(fmt.Sprintf(`{"flid":%d,"state_version":%d}`, flid, version))}
}

func stateEvent(flid, version int64, typ string) event.Event {
	e := event.Event{Target: event.TargetSchd, FLID: flid, Type: typ, StateVersion: version, MsgID: 2000 + version}
	if typ == event.Upsert {
		e.Payload = json.RawMessage(fmt.Sprintf(`{"flid":%d,"state_version":%d,"MAFL":[]}`, flid, version))
	}
	return e
}

// enqueue inserts events interleaved across FLIDs: version v of every FLID, then v+1, …
func enqueueSpread(t testing.TB, b *bundle, flids, perFLID int) int {
	t.Helper()
	ctx := context.Background()
	var evs []event.Event
	for v := 1; v <= perFLID; v++ {
		for f := 1; f <= flids; f++ {
			evs = append(evs, msgEvent(int64(f), int64(v)))
			if len(evs) == 5000 {
				require.NoError(t, outbox.Enqueue(ctx, b.db.Pool, t0, evs...))
				evs = evs[:0]
			}
		}
	}
	require.NoError(t, outbox.Enqueue(ctx, b.db.Pool, t0, evs...))
	return flids * perFLID
}

// drainMsg steps KAFKA:msg until nothing is claimable, moving the clock past every backoff.
func drainMsg(t testing.TB, b *bundle, maxSteps int) (steps int, total dispatch.Result) {
	t.Helper()
	ctx := context.Background()
	for steps = 0; steps < maxSteps; steps++ {
		res, err := b.disp.StepMsg(ctx, b.lease)
		require.NoError(t, err)
		total.Sent += res.Sent
		total.Retried += res.Retried
		total.Dead += res.Dead
		if res.Outage {
			total.Outage = true
		}
		if res.Claimed == 0 {
			return steps, total
		}
		if res.Retried > 0 || res.Outage {
			b.clock.Advance(b.policy.BackoffMax)
		}
	}
	require.FailNow(t, "drain did not finish", "after %d steps", maxSteps)
	return steps, total
}

func countStatus(t testing.TB, b *bundle, status string) int {
	t.Helper()
	var n int
	require.NoError(t, b.db.Pool.QueryRow(context.Background(), `SELECT count(*) FROM `+testdb.AllEvents+` WHERE status = $1`, status).Scan(&n))
	return n
}

// checkStream verifies the consumed KAFKA:msg stream: after dropping duplicate (flid,
// state_version), every FLID has versions 1..want[flid] exactly once, in order. It returns the
// duplicates (identified by their headers).
func checkStream(t testing.TB, recs []kafkatest.Record, want map[string]int64) []kafkatest.Record {
	t.Helper()
	type key struct {
		flid    string
		version int64
	}
	seen := map[key]bool{}
	last := map[string]int64{}
	var dups []kafkatest.Record
	for _, r := range recs {
		e := r.Event(t)
		flid, v := e.FLID, e.StateVersion
		k := key{flid, v}
		if seen[k] {
			dups = append(dups, r)
			continue
		}
		seen[k] = true
		require.Equal(t, last[flid]+1, v, "FLID %s: version %d after %d (event_id %d)", flid, v, last[flid], e.EventID)
		last[flid] = v
		var p struct {
			FLID         int64 `json:"flid"`
			StateVersion int64 `json:"state_version"`
		}
		require.NoError(t, json.Unmarshal(r.Value, &p))
		require.Equal(t, v, p.StateVersion)
	}
	require.Equal(t, want, last)
	return dups
}

// TestOrderingUnderFaults: events over FLIDs while the broker randomly fails produce requests,
// drops connections, answers slowly, and times out after appending. make test runs 25,000 events
// over 500 FLIDs; the acceptance run, 100,000 over 2,000, runs with MSGX_SOAK=1 (make soak);
// -short runs 10,000 over 200.
func TestOrderingUnderFaults(t *testing.T) {
	t.Parallel()
	flids, per := 500, 50
	switch {
	case os.Getenv("MSGX_SOAK") == "1":
		flids, per = 2000, 50
	case testing.Short():
		flids, per = 200, 50
	}
	b := setup(t, options{policy: outbox.Policy{MaxAttempts: 1000, BackoffBase: time.Second, BackoffMax: 4 * time.Second}})
	n := enqueueSpread(t, b, flids, per)

	c := b.broker.Cluster()
	rng := rand.New(rand.NewPCG(7, 11))
	var mu sync.Mutex
	roll := func() float64 { mu.Lock(); defer mu.Unlock(); return rng.Float64() }
	var drops, slows atomic.Int64
	c.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		switch r := roll(); {
		case r < 0.03:
			drops.Add(1)
			return nil, errors.New("injected: connection dropped"), true
		case r < 0.06:
			slows.Add(1)
			d := time.Duration(5+int(r*100)) * time.Millisecond
			c.SleepControl(func() { time.Sleep(d) })
		}
		return nil, nil, false
	})
	errCodes := []*kerr.Error{kerr.NotLeaderForPartition, kerr.NotEnoughReplicas, kerr.RequestTimedOut, kerr.NotEnoughReplicasAfterAppend}
	faults := c.Fault(kfake.Fault{
		Keys: []kmsg.Key{kmsg.Produce}, Count: -1, Err: kerr.NotLeaderForPartition,
		When: func(kmsg.Request) bool { return roll() < 0.05 },
	})
	defer faults.Remove()

	ctx := context.Background()
	var total dispatch.Result
	steps, outages := 0, 0
	for ; steps < 10000; steps++ {
		// Every 10th batch meets a burst of errors longer than sarama's own retries, so the
		// dispatcher's backoff path runs too. Some of them (timeouts) are answered after the
		// append: the idempotent producer must not duplicate them.
		if steps%10 == 5 {
			c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Count: 8, Err: errCodes[steps%len(errCodes)]})
		}
		res, err := b.disp.StepMsg(ctx, b.lease)
		require.NoError(t, err)
		total.Sent += res.Sent
		total.Retried += res.Retried
		total.Dead += res.Dead
		if res.Outage {
			outages++
		}
		if res.Claimed == 0 {
			break
		}
		if res.Retried > 0 || res.Outage {
			b.clock.Advance(4 * time.Second)
		}
	}
	require.Equal(t, n, total.Sent)
	require.Zero(t, total.Dead)
	require.Equal(t, n, countStatus(t, b, outbox.StatusSent))

	recs := kafkatest.ConsumeAll(t, b.broker.Addrs(), b.kcfg.TopicChanges, 2*time.Minute)
	want := map[string]int64{}
	for f := 1; f <= flids; f++ {
		want[strconv.Itoa(f)] = int64(per)
	}
	dups := checkStream(t, recs, want)
	for _, d := range dups {
		require.Equal(t, int64(7), d.Event(t).Epoch)
	}
	t.Logf("%d events over %d FLIDs: %d steps, %d outages, %d retried attempts, %d records consumed, %d duplicates (identified by event_id/flid/state_version headers), %d dropped connections, %d slow answers",
		n, flids, steps, outages, total.Retried, len(recs), len(dups), drops.Load(), slows.Load())
	require.Positive(t, outages, "the fault bursts must reach the dispatcher's backoff path")
	require.Zero(t, total.Retried, "leader moves, too few replicas, timeouts and lost connections are the cluster's: no attempt charged")
	require.NoError(t, testutil.GatherAndCompare(b.reg, strings.NewReader(fmt.Sprintf(`
# HELP msgx_dispatch_sent_total Events marked SENT after the broker acknowledged (schd: every represented event).
# TYPE msgx_dispatch_sent_total counter
msgx_dispatch_sent_total{target="KAFKA:msg"} %d
msgx_dispatch_sent_total{target="KAFKA:schd"} 0
`, n)), "msgx_dispatch_sent_total"))
}

func TestPoisonedEventDeadHoldsItsFLIDThenReplayDelivers(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	n := enqueueSpread(t, b, 20, 5)
	ctx := context.Background()

	// FLID 3's version 2 always fails.
	b.sender.setPoison(func(r kafka.Record) error {
		if r.Key == "3" && header(r, "state_version") == "2" {
			return &kafka.Error{Op: "produce", Err: errors.New("injected: broker keeps failing this record")}
		}
		return nil
	})
	_, total := drainMsg(t, b, 100)
	require.Equal(t, 1, total.Dead)
	require.Equal(t, 2, total.Retried, "max attempts 3: two retries, then DEAD")
	require.Equal(t, n-4, total.Sent, "all other FLIDs delivered; FLID 3 stops after version 1")

	dead, err := b.store.ListDead(ctx, outbox.DeadFilter{})
	require.NoError(t, err)
	require.Len(t, dead, 1)
	require.Equal(t, "3", dead[0].FLID)
	require.Equal(t, int64(2), dead[0].StateVersion)
	require.Equal(t, 3, dead[0].Attempts)
	require.Equal(t, int64(3), dead[0].Holding)
	require.Contains(t, dead[0].LastError, "injected")

	// Hours later FLID 3 is still held.
	b.clock.Advance(6 * time.Hour)
	res, err := b.disp.StepMsg(ctx, b.lease)
	require.NoError(t, err)
	require.Zero(t, res.Claimed)
	require.NoError(t, b.disp.RefreshStats(ctx))
	require.NoError(t, testutil.GatherAndCompare(b.reg, strings.NewReader(`
# HELP msgx_dispatch_dead_letters DEAD events (the DLQ) per target.
# TYPE msgx_dispatch_dead_letters gauge
msgx_dispatch_dead_letters{target="KAFKA:msg"} 1
msgx_dispatch_dead_letters{target="KAFKA:schd"} 0
`), "msgx_dispatch_dead_letters"))

	// The operator replays it (what msgxctl dlq replay --flid 3 does): delivered in order.
	b.sender.setPoison(nil)
	replayed, err := b.store.Replay(ctx, outbox.Selector{FLID: "3"}, outbox.Admin{Actor: "ops", Reason: "broker fixed"}, b.clock.Now())
	require.NoError(t, err)
	require.Equal(t, []int64{dead[0].EventID}, replayed)
	_, total = drainMsg(t, b, 100)
	require.Equal(t, 4, total.Sent)
	require.Equal(t, n, countStatus(t, b, outbox.StatusSent))

	recs := kafkatest.ConsumeAll(t, b.broker.Addrs(), b.kcfg.TopicChanges, time.Minute)
	want := map[string]int64{}
	for f := 1; f <= 20; f++ {
		want[strconv.Itoa(f)] = 5
	}
	require.Empty(t, checkStream(t, recs, want))
}

// smallBroker is a bundle whose broker takes records of at most 20,000 bytes.
func smallBroker(t *testing.T) *bundle {
	return setup(t, options{kfake: []kfake.Opt{kfake.BrokerConfigs(map[string]string{"message.max.bytes": "20000"})}})
}

// tooLarge is version 1 of flid, too large for smallBroker: incompressible padding, since the
// producer compresses (lz4) and the broker's limit applies after.
func tooLarge(flid int64) event.Event {
	rnd := rand.New(rand.NewPCG(5, 5))
	pad := make([]byte, 100000)
	for i := range pad {
		pad[i] = "0123456789abcdef"[rnd.IntN(16)]
	}
	return event.Event{Target: event.TargetMsg, FLID: flid, Type: event.Upsert, StateVersion: 1,
		Payload: json.RawMessage(fmt.Sprintf(`{"flid":%d,"state_version":1,"pad":%q}`, flid, pad))}
}

// A record the broker rejects as too large is DEAD at once, holds its FLID, and its partition
// neighbours (rejected with it in one partition batch) are sent again alone and delivered.
func TestBrokerRejectedRecordDeadAtOnce(t *testing.T) {
	t.Parallel()
	b := smallBroker(t)
	ctx := context.Background()
	big := tooLarge(5)
	var evs []event.Event
	for f := int64(1); f <= 40; f++ {
		if f == 5 {
			evs = append(evs, big)
			continue
		}
		evs = append(evs, msgEvent(f, 1))
	}
	evs = append(evs, msgEvent(5, 2))
	require.NoError(t, outbox.Enqueue(ctx, b.db.Pool, t0, evs...))

	res, err := b.disp.StepMsg(ctx, b.lease)
	require.NoError(t, err, "%+v", res)
	require.Equal(t, 41, res.Claimed, "FLID 5's run: both versions")
	require.Equal(t, 1, res.Dead, "%+v", res)
	require.Zero(t, res.Retried, "FLID 5's version 2 was held by version 1, not attempted on its own")
	require.Equal(t, 39, res.Sent)

	dead, err := b.store.ListDead(ctx, outbox.DeadFilter{FLID: "5"})
	require.NoError(t, err)
	require.Len(t, dead, 1)
	require.Equal(t, 1, dead[0].Attempts)
	require.Contains(t, dead[0].LastError, "too large")
	require.Equal(t, int64(1), dead[0].Holding)

	// Skipped by an operator: FLID 5's next event flows.
	_, err = b.store.Skip(ctx, []int64{dead[0].EventID}, outbox.Admin{Actor: "ops", Reason: "payload over the broker limit"}, b.clock.Now())
	require.NoError(t, err)
	res, err = b.disp.StepMsg(ctx, b.lease)
	require.NoError(t, err)
	require.Equal(t, 1, res.Sent)
	recs := kafkatest.ConsumeAll(t, b.broker.Addrs(), b.kcfg.TopicChanges, time.Minute)
	require.Len(t, recs, 40)
}

// enqueueEach writes each event in its own transaction (one transaction writes only the newest
// state of a flight: event.Latest).
func enqueueEach(t *testing.T, b *bundle, evs ...event.Event) {
	t.Helper()
	for _, e := range evs {
		require.NoError(t, outbox.Enqueue(context.Background(), b.db.Pool, t0, e))
	}
}

func TestStatesAggregateNewest(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	ctx := context.Background()
	var evs []event.Event
	for v := int64(1); v <= 10; v++ {
		evs = append(evs, stateEvent(42, v, event.Upsert))
	}
	enqueueEach(t, b, evs...)

	// The send fails for the record (not authorised): the flight's one state, the newest of
	// the ten, stays unsent and retries.
	h := b.broker.Cluster().Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: b.kcfg.TopicState, Count: -1, Err: kerr.TopicAuthorizationFailed})
	res, err := b.disp.FlushStates(ctx, b.lease)
	require.NoError(t, err)
	require.Equal(t, 1, res.Claimed)
	require.Equal(t, 1, res.Retried)
	require.Zero(t, countStatus(t, b, outbox.StatusSent))
	require.Equal(t, []int64{1}, b.db.Int64s(t, `SELECT attempts FROM msg_state_out`))
	require.Equal(t, []int64{10}, b.db.Int64s(t, `SELECT state_version FROM msg_state_out`))

	// Backing off: nothing is due yet.
	res, err = b.disp.FlushStates(ctx, b.lease)
	require.NoError(t, err)
	require.Zero(t, res.Claimed)

	h.Remove()
	b.clock.Advance(time.Second)
	res, err = b.disp.FlushStates(ctx, b.lease)
	require.NoError(t, err)
	require.Equal(t, dispatch.Result{Claimed: 1, Sent: 1}, res)

	recs := kafkatest.ConsumeAll(t, b.broker.Addrs(), b.kcfg.TopicState, time.Minute)
	require.Len(t, recs, 1, "ten versions inside one flush period → one record")
	require.Equal(t, "42", recs[0].Key)
	e := recs[0].Event(t)
	require.Equal(t, int64(10), e.StateVersion)
	require.Equal(t, event.Upsert, e.Type)
	require.Equal(t, int64(2010), e.MsgID)
	require.JSONEq(t, `{"flid":42,"state_version":10,"MAFL":[]}`, string(recs[0].Value))
}

func TestStatesTombstoneLastAndNeverOlder(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	ctx := context.Background()
	require.NoError(t, outbox.Enqueue(ctx, b.db.Pool, t0, stateEvent(9, 1, event.Upsert), stateEvent(8, 1, event.Upsert)))
	_, err := b.disp.FlushStates(ctx, b.lease)
	require.NoError(t, err)
	enqueueEach(t, b, stateEvent(9, 2, event.Upsert), stateEvent(9, 3, event.Tombstone))
	res, err := b.disp.FlushStates(ctx, b.lease)
	require.NoError(t, err)
	require.Equal(t, dispatch.Result{Claimed: 1, Sent: 1}, res, "v3 only: it replaced v2")

	// FLID 8: version 2 dies (rejected), version 3 arrives and supersedes it; a later replay of
	// version 2 has nothing to send, so the older state never follows the newer.
	b.sender.setPoison(func(r kafka.Record) error {
		if r.Key == "8" && header(r, "state_version") == "2" {
			return &kafka.Error{Op: "produce", Err: errors.New("kafka server: Message was too large")}
		}
		return nil
	})
	require.NoError(t, outbox.Enqueue(ctx, b.db.Pool, t0, stateEvent(8, 2, event.Upsert)))
	res, err = b.disp.FlushStates(ctx, b.lease)
	require.NoError(t, err)
	require.Equal(t, 1, res.Retried)
	b.sender.setPoison(nil)
	require.NoError(t, outbox.Enqueue(ctx, b.db.Pool, t0, stateEvent(8, 3, event.Upsert)))
	res, err = b.disp.FlushStates(ctx, b.lease)
	require.NoError(t, err)
	require.Equal(t, 1, res.Sent, "v3, which replaced the retrying v2")
	replayed, err := b.store.Replay(ctx, outbox.Selector{FLID: "8"}, outbox.Admin{Actor: "ops"}, t0)
	require.NoError(t, err)
	require.Empty(t, replayed)
	res, err = b.disp.FlushStates(ctx, b.lease)
	require.NoError(t, err)
	require.Zero(t, res.Claimed)

	recs := kafkatest.ConsumeAll(t, b.broker.Addrs(), b.kcfg.TopicState, time.Minute)
	byKey := map[string][]kafkatest.Record{}
	for _, r := range recs {
		byKey[r.Key] = append(byKey[r.Key], r)
	}
	require.Len(t, byKey["9"], 2)
	require.Equal(t, int64(1), byKey["9"][0].Event(t).StateVersion)
	last := byKey["9"][1].Event(t)
	require.Equal(t, int64(3), last.StateVersion)
	require.Equal(t, event.Tombstone, last.Type)
	require.Nil(t, last.Payload, "TOMBSTONE → null value, last")
	require.Len(t, byKey["8"], 2)
	require.Equal(t, int64(3), byKey["8"][1].Event(t).StateVersion)
}

func TestFencedDispatcherCommitsNothing(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	ctx := context.Background()
	enqueueSpread(t, b, 3, 1)
	_, err := b.disp.StepMsg(ctx, leader.Lease{Role: "dispatcher", Epoch: 6})
	require.ErrorIs(t, err, leader.ErrFenced)
	require.Zero(t, countStatus(t, b, outbox.StatusSent))
}

func TestOutageCountsNoAttempt(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	ctx := context.Background()
	enqueueSpread(t, b, 3, 1)
	c := b.broker.Cluster()
	c.Control(func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		return nil, errors.New("injected: broker gone"), true
	})
	// The abort cannot reach the coordinator either: the producer is broken (the term dials a
	// new one), and the batch is not the events' fault.
	res, err := b.disp.StepMsg(ctx, b.lease)
	require.ErrorIs(t, err, kafka.ErrBroken)
	require.True(t, res.Outage)
	var attempts int
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT sum(attempts) FROM msg_event`).Scan(&attempts))
	require.Zero(t, attempts)
}

// TestClusterFaultCountsNoAttempt: a batch that fails only because the cluster cannot take it
// (too few in-sync replicas, longer than sarama's retries) while the brokers answer is an
// outage too: no attempt is charged, the events stay PENDING and are sent once it ends.
func TestClusterFaultCountsNoAttempt(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	ctx := context.Background()
	enqueueSpread(t, b, 3, 1)
	enqueueEach(t, b, stateEvent(42, 1, event.Upsert))
	c := b.broker.Cluster()
	h := c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Count: -1, Err: kerr.NotEnoughReplicas})
	res, err := b.disp.StepMsg(ctx, b.lease)
	require.NoError(t, err)
	require.True(t, res.Outage)
	res, err = b.disp.FlushStates(ctx, b.lease)
	require.NoError(t, err)
	require.True(t, res.Outage)
	var attempts int
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT sum(attempts) FROM msg_event`).Scan(&attempts))
	require.Zero(t, attempts)
	require.Equal(t, 4, countStatus(t, b, outbox.StatusPending))

	h.Remove()
	res, err = b.disp.StepMsg(ctx, b.lease)
	require.NoError(t, err)
	require.Equal(t, 3, res.Sent)
	res, err = b.disp.FlushStates(ctx, b.lease)
	require.NoError(t, err)
	require.Equal(t, 1, res.Sent)
}

// Run drives both loops with real waits until the backlog is gone, then stops on cancel.
func TestRunDrainsAndStops(t *testing.T) {
	t.Parallel()
	b := setup(t, options{batch: 50})
	ctx, cancel := context.WithCancel(context.Background())
	n := enqueueSpread(t, b, 30, 10)
	enqueueEach(t, b, stateEvent(1, 1, event.Upsert), stateEvent(1, 2, event.Upsert))
	done := make(chan error, 1)
	go func() { done <- b.disp.Run(ctx, b.lease) }()
	require.Eventually(t, func() bool { return countStatus(t, b, outbox.StatusSent) == n+1 }, 30*time.Second, 20*time.Millisecond) // the state: its newest
	cancel()
	require.NoError(t, <-done)
}

// TestEndToEndLag: each acknowledged record is observed from its message's enqueue (its
// proc_state row) to the acknowledgement on the clock; an event whose message is not in
// proc_state (archived, or none) is not observed.
func TestEndToEndLag(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	ctx := context.Background()
	// Messages 1001 and 1002 were enqueued at t0 and t0+10s; message 1003 is not in proc_state.
	for i, id := range []int64{1001, 1002} {
		_, err := b.db.Pool.Exec(ctx, `INSERT INTO proc_state (msg_id, raw, status, enqueued_at) VALUES ($1, 'x', 'PENDING', $2)`,
			id, t0.Add(time.Duration(i)*10*time.Second))
		require.NoError(t, err)
	}
	require.NoError(t, outbox.Enqueue(ctx, b.db.Pool, t0, msgEvent(1, 1), msgEvent(2, 2), msgEvent(3, 3), stateEvent(1, 1, event.Upsert)))
	b.clock.Advance(30 * time.Second)

	res, err := b.disp.StepMsg(ctx, b.lease)
	require.NoError(t, err)
	require.Equal(t, 3, res.Sent)
	// 1003 has no proc_state row: two observations, 30 s and 20 s.
	require.NoError(t, testutil.GatherAndCompare(b.reg, strings.NewReader(lagHelp+lagSeries(event.TargetMsg, 2, 30.0+20.0, 30)), "msgx_end_to_end_lag_seconds"))

	// The state record (stateEvent: message 2001, enqueued at t0+25s), acknowledged at t0+35s.
	_, err = b.db.Pool.Exec(ctx, `INSERT INTO proc_state (msg_id, raw, status, enqueued_at) VALUES (2001, 'x', 'PENDING', $1)`, t0.Add(25*time.Second))
	require.NoError(t, err)
	b.clock.Advance(5 * time.Second)
	res, err = b.disp.FlushStates(ctx, b.lease)
	require.NoError(t, err)
	require.Equal(t, 1, res.Sent)
	require.NoError(t, testutil.GatherAndCompare(b.reg, strings.NewReader(lagHelp+lagSeries(event.TargetMsg, 2, 30.0+20.0, 30)+lagSeries(event.TargetSchd, 1, 10, 10)),
		"msgx_end_to_end_lag_seconds"))
}

const lagHelp = `# HELP msgx_end_to_end_lag_seconds From ingest's enqueue of the mailbox message (its first sight of the committed row) to the broker's acknowledgement of the record it caused, per target, every record.
# TYPE msgx_end_to_end_lag_seconds histogram
`

// TestEndToEndLagSampled: with the default sampling, only the records of the messages
// LagSampled picks are observed (a strict, non-empty part of 200), each from its own enqueue,
// and the help says so.
func TestEndToEndLagSampled(t *testing.T) {
	t.Parallel()
	b := setup(t, options{lagSample: 16})
	ctx := context.Background()
	var evs []event.Event
	picked := 0
	for v := int64(1); v <= 200; v++ {
		e := msgEvent(v, v) // message 1000+v, its own FLID
		_, err := b.db.Pool.Exec(ctx, `INSERT INTO proc_state (msg_id, raw, status, enqueued_at) VALUES ($1, 'x', 'PENDING', $2)`, e.MsgID, t0)
		require.NoError(t, err)
		if dispatch.LagSampled(e.MsgID, 16) {
			picked++
		}
		evs = append(evs, e)
	}
	require.Greater(t, picked, 0)
	require.Less(t, picked, 200)
	require.NoError(t, outbox.Enqueue(ctx, b.db.Pool, t0, evs...))
	b.clock.Advance(30 * time.Second)
	res, err := b.disp.StepMsg(ctx, b.lease)
	require.NoError(t, err)
	require.Equal(t, 200, res.Sent)
	help := "# HELP msgx_end_to_end_lag_seconds From ingest's enqueue of the mailbox message (its first sight of the committed row) to the broker's acknowledgement of the record it caused, per target, for a sample: the records of one message in 16, picked by a hash of the message id.\n# TYPE msgx_end_to_end_lag_seconds histogram\n"
	require.NoError(t, testutil.GatherAndCompare(b.reg, strings.NewReader(help+lagSeries(event.TargetMsg, picked, 30*float64(picked), 30)), "msgx_end_to_end_lag_seconds"))
}

// The sample is one message in n whatever the spacing of the ids: consecutive ids, and ids two
// or ten apart (a mailbox with auto_increment_increment above 1), each within 10% of 1/n.
func TestLagSampleIsOneInN(t *testing.T) {
	t.Parallel()
	for _, step := range []int64{1, 2, 10} {
		for _, n := range []int{4, 16} {
			const ids = 160000
			picked := 0
			for i := int64(0); i < ids; i++ {
				if dispatch.LagSampled(1+i*step, n) {
					picked++
				}
			}
			want := float64(ids) / float64(n)
			require.InDelta(t, want, float64(picked), want/10, "step %d, one in %d", step, n)
		}
	}
	require.True(t, dispatch.LagSampled(12345, 1))
}

// lagSeries is the exposition of the lag histogram of target with count observations summing
// to sum, all in the bucket of upper bound from and above.
func lagSeries(target string, count int, sum, from float64) string {
	var out strings.Builder
	for _, le := range []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600} {
		n := 0
		if le >= from {
			n = count
		}
		fmt.Fprintf(&out, "msgx_end_to_end_lag_seconds_bucket{target=%q,le=\"%g\"} %d\n", target, le, n)
	}
	fmt.Fprintf(&out, "msgx_end_to_end_lag_seconds_bucket{target=%q,le=\"+Inf\"} %d\n", target, count)
	fmt.Fprintf(&out, "msgx_end_to_end_lag_seconds_sum{target=%q} %g\nmsgx_end_to_end_lag_seconds_count{target=%q} %d\n", target, sum, target, count)
	return out.String()
}

// INV-6: a terminal status is final whatever becomes of its events. The message behind two
// events whose delivery keeps failing until they are DEAD keeps its proc_state row exactly as its
// terminal commit wrote it (status, outcome, marker state: delivery is a fact of its own, INV-1).
func TestFailedDeliveryLeavesTheMessageTerminal(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	ctx := context.Background()
	_, err := b.db.Pool.Exec(ctx, `INSERT INTO proc_state (msg_id, raw, status, attempts, enqueued_at, finished_at, outcome_epoch)
		VALUES (1001, 'x', 'SUCCEEDED', 1, $1, $1, 1)`, t0)
	require.NoError(t, err)
	_, err = b.db.Pool.Exec(ctx, `INSERT INTO marker_debt (ids, finished_at) VALUES ('{1001}', $1)`, t0)
	require.NoError(t, err)
	row := func() string {
		t.Helper()
		var s string
		require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT to_jsonb(p)::text || (SELECT count(*) FROM marker_debt)::text
			FROM proc_state p WHERE msg_id = 1001`).Scan(&s))
		return s
	}
	want := row()
	require.NoError(t, outbox.Enqueue(ctx, b.db.Pool, t0, msgEvent(3, 1), msgEvent(4, 1))) // both of message 1001
	b.sender.setPoison(func(kafka.Record) error {
		return &kafka.Error{Op: "produce", Err: errors.New("injected: broker keeps failing")}
	})
	_, total := drainMsg(t, b, 100)
	require.Equal(t, 2, total.Dead)
	require.Equal(t, 2, countStatus(t, b, outbox.StatusDead))
	require.Equal(t, want, row(), "a failed delivery changed the message's row")
}
