package dispatch_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/msgx/msgx/pkg/clock"
	"github.com/msgx/msgx/pkg/dev/apachekafka"
	"github.com/msgx/msgx/pkg/dev/broker"
	"github.com/msgx/msgx/pkg/dev/kafkatest"
	"github.com/msgx/msgx/pkg/dev/stack"
	"github.com/msgx/msgx/pkg/dev/testdb"
	"github.com/msgx/msgx/pkg/dev/tlsenv"
	"github.com/msgx/msgx/pkg/dispatch"
	"github.com/msgx/msgx/pkg/kafka"
	"github.com/msgx/msgx/pkg/leader"
	"github.com/msgx/msgx/pkg/outbox"
)

// The conformance suite, in the shape of Watermill's tests.TestPubSub: one table of behaviour
// tests of the dispatcher and the Kafka adapter, run with the same assertions against every
// Kafka implementation msgx is tested with: the development broker (kfake, in process) and a
// real Apache Kafka broker (pkg/dev/apachekafka, one KRaft node). Both listen only with TLS and
// require SASL/SCRAM-SHA-512, as production Kafka does, so every case goes through the
// dispatcher's own TLS and SASL settings. One broker of each kind serves the whole table; each
// case has its own topics and transactional ids, so the cases run side by side.
var conformanceCases = []struct {
	name string
	run  func(t *testing.T, b *confBroker)
}{
	{"OrderPerFLIDUnderConcurrency", confOrderPerFLID},
	{"TransactionsBackToBack", confTransactionsBackToBack},
	{"DeposedDispatcherFenced", confDeposedDispatcherFenced},
	{"AbortedRecordsInvisible", confAbortedRecordsInvisible},
	{"CompactedStateEqualsPostgreSQL", confCompactedStateEqualsPostgreSQL},
	{"LZ4RoundTrip", confLZ4RoundTrip},
	{"SCRAMOverTLS", confSCRAMOverTLS},
	{"ReferenceConsumer", confReferenceConsumer},
	{"ReferenceConsumerAfterCompaction", confReferenceConsumerAfterCompaction},
	{"ReferenceConsumerHeartbeat", confReferenceConsumerHeartbeat},
	{"ReseedDuringTraffic", confReseedDuringTraffic},
}

func TestConformance(t *testing.T) {
	t.Parallel()
	bins := &binaries{dir: t.TempDir()}
	for _, impl := range []struct {
		name  string
		start func(t *testing.T) *confBroker
	}{
		{"kfake", startKfake},
		{"apachekafka", startApacheKafka},
	} {
		t.Run(impl.name, func(t *testing.T) {
			t.Parallel()
			b := impl.start(t)
			b.bins = bins
			for _, c := range conformanceCases {
				t.Run(c.name, func(t *testing.T) {
					t.Parallel()
					c.run(t, b)
				})
			}
		})
	}
}

// The SCRAM user every conformance broker requires.
const (
	confUser     = "msgx"
	confPassword = "conformance-secret"
)

// confBroker is one Kafka implementation under the suite: how to reach it, and what differs
// between implementations (creating topics, when compaction runs).
type confBroker struct {
	cfg  kafka.Config // the dispatcher's settings reaching it (TLS, SASL); topics and transactional ids are each case's
	opts []kgo.Opt    // a franz-go client's options reaching it
	bins *binaries
	// create creates a topic with the given configuration.
	create func(topic string, partitions int32, configs map[string]string) error
	// compact runs a compaction pass now where the broker compacts on request (kfake); Apache
	// Kafka's log cleaner runs on its own.
	compact func()
	// fastCompaction is the state topic configuration under which compaction follows the
	// writes within seconds.
	fastCompaction map[string]string
	// zombieRounds is how many rounds the deposed-dispatcher case runs.
	zombieRounds int
}

// startKfake starts the development broker in process, TLS and SCRAM required.
func startKfake(t *testing.T) *confBroker {
	ca, err := tlsenv.NewCA(t.TempDir())
	require.NoError(t, err)
	b, err := broker.StartWith(broker.Options{TLS: ca.ServerTLS(), SCRAMUser: confUser, SCRAMPassword: confPassword})
	require.NoError(t, err)
	t.Cleanup(b.Close)
	c := b.Cluster()
	return &confBroker{
		cfg: secured(kafkatest.Config(b.Addrs()), ca),
		opts: []kgo.Opt{kgo.SeedBrokers(b.Addrs()...), kgo.DialTLSConfig(ca.ClientTLS()),
			kgo.SASL(scram.Auth{User: confUser, Pass: confPassword}.AsSha512Mechanism())},
		create:         c.CreateTopic,
		compact:        c.Compact,
		fastCompaction: map[string]string{"delete.retention.ms": "0"},
		zombieRounds:   kfakeZombieRounds,
	}
}

// startApacheKafka starts one Apache Kafka node, TLS and SCRAM required, its log cleaner
// looking for work often.
func startApacheKafka(t *testing.T) *confBroker {
	ca, err := tlsenv.NewCA(t.TempDir())
	require.NoError(t, err)
	began := time.Now()
	c := apachekafka.Start(t, apachekafka.Options{
		SCRAM:  &apachekafka.SCRAM{User: confUser, Password: confPassword},
		TLS:    &apachekafka.TLS{CertFile: ca.CertFile, KeyFile: ca.KeyFile, Client: ca.ClientTLS()},
		Config: map[string]string{"log.cleaner.backoff.ms": "100"},
	})
	t.Logf("Apache Kafka ready after %s", time.Since(began).Round(time.Millisecond))
	return &confBroker{
		cfg:  secured(kafkatest.Config(c.Addrs()), ca),
		opts: c.ClientOpts(),
		create: func(topic string, partitions int32, configs map[string]string) error {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			return c.CreateTopic(ctx, topic, partitions, configs)
		},
		compact: func() {},
		// Segments roll after 100 ms (segment.bytes cannot go below 1 MiB), any dirty share is
		// worth cleaning, and tombstones may go at the next pass.
		fastCompaction: map[string]string{"segment.ms": "100", "min.cleanable.dirty.ratio": "0.01",
			"min.compaction.lag.ms": "0", "delete.retention.ms": "0"},
		zombieRounds: apacheZombieRounds,
	}
}

// secured is cfg with production's TLS (verified against ca) and SASL/SCRAM-SHA-512 settings.
func secured(cfg kafka.Config, ca *tlsenv.CA) kafka.Config {
	cfg.TLS, cfg.TLSCAFile = true, ca.CAFile
	cfg.SASLMechanism, cfg.SASLUser, cfg.SASLPassword = tlsenv.KafkaMechanism, confUser, confPassword
	return cfg
}

// topics creates a case's topics (named after it; the state topic compacted, with extra
// configuration state; the heartbeat's) and returns the settings using them, with the case's transactional ids.
func (b *confBroker) topics(t *testing.T, name string, changes, state map[string]string) kafka.Config {
	t.Helper()
	cfg := b.cfg
	cfg.TopicChanges, cfg.TopicState = "conformance."+name+".changes", "conformance."+name+".state"
	cfg.TopicHeartbeat = "conformance." + name + ".heartbeat"
	cfg.TxnIDPrefix = "conformance." + name
	b.createTopics(t, cfg, changes, state)
	return cfg
}

func (b *confBroker) createTopics(t *testing.T, cfg kafka.Config, changes, state map[string]string) {
	t.Helper()
	compacted := map[string]string{"cleanup.policy": "compact"}
	maps.Copy(compacted, state)
	require.NoError(t, b.create(cfg.TopicChanges, kafkatest.Partitions, changes))
	require.NoError(t, b.create(cfg.TopicState, kafkatest.Partitions, compacted))
	if cfg.TopicHeartbeat != "" {
		require.NoError(t, b.create(cfg.TopicHeartbeat, kafkatest.Partitions, nil))
	}
}

// read reads every record topic holds now, read_committed unless opts say otherwise.
func (b *confBroker) read(t *testing.T, topic string, opts ...kgo.Opt) []kafkatest.Record {
	t.Helper()
	var out []kafkatest.Record
	for _, r := range kafkatest.ReadAll(t, slices.Concat(b.opts, opts), topic, time.Minute) {
		out = append(out, kafkatest.FromKgo(r))
	}
	return out
}

// dialConf connects the adapter's producer, closed with the test.
func dialConf(t *testing.T, cfg kafka.Config) *kafka.Producer {
	t.Helper()
	p, err := kafka.Dial(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p.Close()) })
	return p
}

// confStage is a case's dispatcher: its own database schema, the adapter's producer on the
// case's topics, the real clock, and the lease of epoch 7.
type confStage struct {
	db    *testdb.DB
	disp  *dispatch.Dispatcher
	lease leader.Lease
}

func newConfStage(t *testing.T, cfg kafka.Config, dc dispatch.Config) *confStage {
	t.Helper()
	db := testdb.New(t)
	store, err := outbox.New(db.Pool, outbox.Policy{MaxAttempts: 3, BackoffBase: time.Second, BackoffMax: 4 * time.Second})
	require.NoError(t, err)
	_, err = db.Pool.Exec(context.Background(),
		`INSERT INTO leader_lease (role, epoch, holder, backend_pid, acquired_at, renewed_at) VALUES ('dispatcher', 7, 'test', 0, $1, $1)`, time.Now())
	require.NoError(t, err)
	dc.TopicChanges, dc.TopicState = cfg.TopicChanges, cfg.TopicState
	disp, err := dispatch.New(dc, store, dialConf(t, cfg), clock.System{}, prometheus.NewRegistry(), zerolog.Nop())
	require.NoError(t, err)
	return &confStage{db: db, disp: disp, lease: leader.Lease{Role: "dispatcher", Epoch: 7}}
}

// unsent counts the outbox rows not SENT yet, the state topic's included (folded or not).
func (s *confStage) unsent(t *testing.T) int {
	t.Helper()
	var n int
	require.NoError(t, s.db.Pool.QueryRow(context.Background(), `SELECT count(*) FROM `+testdb.AllEvents+` WHERE status <> $1`, outbox.StatusSent).Scan(&n))
	return n
}

// waitUntil asks cond on the test's goroutine (so cond may use require) every interval until
// it holds, and fails the test after timeout.
func waitUntil(t *testing.T, timeout, interval time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for !cond() {
		require.True(t, time.Now().Before(deadline), "%s: not within %s", what, timeout)
		<-tick.C
	}
}

// binaries builds the dispatcher and the development broker (the stack starts it) once, for
// the cases that run them as processes.
type binaries struct {
	dir  string
	once sync.Once
	err  error
}

func (b *binaries) get(t *testing.T) string {
	t.Helper()
	b.once.Do(func() {
		root, err := stack.Root()
		if err != nil {
			b.err = err
			return
		}
		cmd := exec.Command("go", "build", "-o", b.dir+string(os.PathSeparator), "./cmd/dispatcher", "./cmd/"+stack.Broker)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			b.err = fmt.Errorf("build the dispatcher: %w\n%s", err, out)
		}
	})
	require.NoError(t, b.err)
	return b.dir
}

// zombieRounds are the deposed-dispatcher case's rounds: MSGX_ZOMBIE_ROUNDS, else the
// broker's.
func zombieRounds(t *testing.T, b *confBroker) int {
	t.Helper()
	v := os.Getenv("MSGX_ZOMBIE_ROUNDS")
	if v == "" {
		return b.zombieRounds
	}
	n, err := strconv.Atoi(v)
	require.NoError(t, err, "MSGX_ZOMBIE_ROUNDS")
	return n
}

// The deposed-dispatcher case's rounds in make test (each round waits out a 2 s lease): 6
// against Apache Kafka, whose fencing is the production one, so each dispatcher is deposed three
// times; 5 against kfake. make chaos's zombie scenario and make soak run 20
// (MSGX_ZOMBIE_ROUNDS).
const (
	apacheZombieRounds = 6
	kfakeZombieRounds  = 5
)
