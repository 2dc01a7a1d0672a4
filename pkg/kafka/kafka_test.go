package kafka_test

import (
	"context"
	"fmt"
	"github.com/msgx/msgx/pkg/dev/broker"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/goleak"

	"github.com/msgx/msgx/pkg/dev/kafkatest"
	"github.com/msgx/msgx/pkg/kafka"
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

func TestNewSaramaConfigSetsD3(t *testing.T) {
	t.Parallel()
	sc, err := kafka.NewSaramaConfig(kafkatest.Config([]string{"127.0.0.1:9092"}))
	require.NoError(t, err)
	require.True(t, sc.Producer.Idempotent)
	require.Equal(t, sarama.WaitForAll, sc.Producer.RequiredAcks)
	require.Equal(t, 1, sc.Net.MaxOpenRequests)
	require.Equal(t, sarama.V2_8_0_0, sc.Version)
	require.Equal(t, 5*time.Second, sc.Producer.Timeout)
	require.Equal(t, 10*time.Second, sc.Net.ReadTimeout)
	require.Equal(t, sarama.CompressionLZ4, sc.Producer.Compression)

	for _, topic := range []string{"msgx.flight.changes", "msgx.flight.state"} {
		tc, err := kafka.NewTxnSaramaConfig(kafkatest.Config([]string{"127.0.0.1:9092"}), topic)
		require.NoError(t, err)
		require.Equal(t, "msgx-test."+topic, tc.Producer.Transaction.ID)
		require.Equal(t, 20*time.Second, tc.Producer.Transaction.Timeout)
		require.True(t, tc.Producer.Idempotent)
	}

	// Transaction and produce requests back off doubling; the waits of each add up to the
	// budgets docs/kafka.md gives.
	budget := func(max int, backoff func(retries, maxRetries int) time.Duration) (total time.Duration) {
		for r := 0; r <= max; r++ {
			total += backoff(r, max)
		}
		return total
	}
	require.Equal(t, 4, sc.Producer.Transaction.Retry.Max)
	require.Equal(t, 20*time.Millisecond, sc.Producer.Transaction.Retry.BackoffFunc(0, 4))
	require.Equal(t, 320*time.Millisecond, sc.Producer.Transaction.Retry.BackoffFunc(4, 4))
	require.Equal(t, 620*time.Millisecond, budget(sc.Producer.Transaction.Retry.Max, sc.Producer.Transaction.Retry.BackoffFunc))
	require.Equal(t, 3, sc.Producer.Retry.Max)
	require.Equal(t, 1100*time.Millisecond, budget(sc.Producer.Retry.Max, sc.Producer.Retry.BackoffFunc))
}

func TestCheckProducerD3RefusesNonTransactional(t *testing.T) {
	t.Parallel()
	cfg := kafkatest.Config([]string{"127.0.0.1:9092"})
	sc, err := kafka.NewTxnSaramaConfig(cfg, cfg.TopicChanges)
	require.NoError(t, err)
	sc.Producer.Transaction.ID = ""
	require.ErrorContains(t, kafka.CheckProducerD3(sc, cfg, cfg.TopicChanges), "Producer.Transaction.ID must be")
	sc.Producer.Transaction.ID = "other.msgx.flight.changes"
	require.ErrorContains(t, kafka.CheckProducerD3(sc, cfg, cfg.TopicChanges), "Producer.Transaction.ID must be")
	sc.Producer.Transaction.ID = cfg.TransactionalID(cfg.TopicChanges)
	sc.Producer.Transaction.Timeout = 0
	require.ErrorContains(t, kafka.CheckProducerD3(sc, cfg, cfg.TopicChanges), "Producer.Transaction.Timeout must be between")

	cfg.SendTimeout = 0
	_, err = kafka.NewSaramaConfig(cfg)
	require.ErrorContains(t, err, "MSGX_KAFKA_SEND_TIMEOUT: must be between")
	cfg = kafkatest.Config([]string{"127.0.0.1:9092"})
	cfg.TxnIDPrefix = ""
	_, err = kafka.NewSaramaConfig(cfg)
	require.ErrorContains(t, err, "MSGX_KAFKA_TRANSACTIONAL_ID_PREFIX: must be set")
	cfg = kafkatest.Config([]string{"127.0.0.1:9092"})
	cfg.Compression = "gzip"
	_, err = kafka.NewSaramaConfig(cfg)
	require.ErrorContains(t, err, "compression must be none, lz4 or zstd")
	cfg.Compression, cfg.Version = "zstd", "2.1.0"
	_, err = kafka.NewSaramaConfig(cfg)
	require.NoError(t, err, "zstd from 2.1.0, the oldest version accepted")
}

func TestCheckD3RefusesEachViolation(t *testing.T) {
	t.Parallel()
	cfg := kafkatest.Config([]string{"127.0.0.1:9092"})
	for name, tc := range map[string]struct {
		mutate func(sc *sarama.Config)
		want   string
	}{
		"not idempotent":    {func(sc *sarama.Config) { sc.Producer.Idempotent = false }, "Producer.Idempotent must be true"},
		"acks=1":            {func(sc *sarama.Config) { sc.Producer.RequiredAcks = sarama.WaitForLocal }, "Producer.RequiredAcks must be WaitForAll"},
		"acks=0":            {func(sc *sarama.Config) { sc.Producer.RequiredAcks = sarama.NoResponse }, "Producer.RequiredAcks must be WaitForAll"},
		"5 in flight":       {func(sc *sarama.Config) { sc.Net.MaxOpenRequests = 5 }, "Net.MaxOpenRequests must be 1"},
		"unbounded dial":    {func(sc *sarama.Config) { sc.Net.DialTimeout = 0 }, "Net.DialTimeout must be between"},
		"unbounded read":    {func(sc *sarama.Config) { sc.Net.ReadTimeout = time.Hour }, "Net.ReadTimeout must be between"},
		"unbounded write":   {func(sc *sarama.Config) { sc.Net.WriteTimeout = -1 }, "Net.WriteTimeout must be between"},
		"unbounded produce": {func(sc *sarama.Config) { sc.Producer.Timeout = 0 }, "Producer.Timeout must be between"},
		"old version":       {func(sc *sarama.Config) { sc.Version = sarama.V2_0_0_0 }, "Version must be at least 2.1.0"},
		"other version":     {func(sc *sarama.Config) { sc.Version = sarama.V3_0_0_0 }, "Version must be the configured 2.8.0"},
		"no retries":        {func(sc *sarama.Config) { sc.Producer.Retry.Max = 0 }, "Producer.Retry.Max must be between"},
		"endless retries":   {func(sc *sarama.Config) { sc.Producer.Retry.Max = 1000 }, "Producer.Retry.Max must be between"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			sc, err := kafka.NewSaramaConfig(cfg)
			require.NoError(t, err)
			tc.mutate(sc)
			err = kafka.CheckD3(sc, cfg)
			require.Error(t, err)
			require.Contains(t, err.Error(), "producer rule D3b violated: "+tc.want)
			require.NotContains(t, err.Error(), "\n\n")
		})
	}
}

func TestConfigRefusesBadValues(t *testing.T) {
	t.Parallel()
	cfg := kafkatest.Config([]string{"127.0.0.1:9092"})
	// Kafka 4 answers no request version older than 2.1's: an older setting is refused, in
	// one line naming the variable.
	for _, v := range []string{"0.10.2.0", "0.11.0.0", "2.0.0"} {
		cfg.Version = v
		_, err := kafka.NewSaramaConfig(cfg)
		require.ErrorContains(t, err, "MSGX_KAFKA_VERSION: must be at least 2.1.0, got "+v)
		require.NotContains(t, err.Error(), "\n")
	}
	for _, v := range []string{"2.1.0", "2.8.0", "3.9.0", "4.0.0"} {
		cfg.Version = v
		_, err := kafka.NewSaramaConfig(cfg)
		require.NoError(t, err, v)
	}

	cfg = kafkatest.Config([]string{"127.0.0.1:9092"})
	cfg.ProduceTimeout = 0
	_, err := kafka.NewSaramaConfig(cfg)
	require.ErrorContains(t, err, "MSGX_KAFKA_PRODUCE_TIMEOUT: must be between")

	cfg = kafkatest.Config(nil)
	_, err = kafka.NewSaramaConfig(cfg)
	require.ErrorContains(t, err, "MSGX_KAFKA_BROKERS: must list at least one broker")

	cfg = kafkatest.Config([]string{"x:1"})
	cfg.SASLMechanism = "GSSAPI"
	_, err = kafka.NewSaramaConfig(cfg)
	require.ErrorContains(t, err, `MSGX_KAFKA_SASL_MECHANISM: must be empty, PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512, got "GSSAPI"`)
}

// VerifyD3 builds every producer's configuration without connecting: it refuses what Validate
// refuses and a breach of D3b that only the built configuration shows.
func TestVerifyD3(t *testing.T) {
	t.Parallel()
	cfg := kafkatest.Config([]string{"127.0.0.1:1"}) // nothing listens: nothing connects
	require.NoError(t, kafka.VerifyD3(cfg))
	cfg.Version = "2.0.0"
	require.ErrorContains(t, kafka.VerifyD3(cfg), "MSGX_KAFKA_VERSION: must be at least 2.1.0")
	cfg = kafkatest.Config([]string{"127.0.0.1:1"})
	cfg.TxnTimeout = time.Hour
	require.ErrorContains(t, kafka.VerifyD3(cfg), "MSGX_KAFKA_TXN_TIMEOUT: must be between")
}

func TestSendCheckTopicsAndClassify(t *testing.T) {
	t.Parallel()
	b, cfg := kafkatest.Broker(t)
	ctx := context.Background()

	p, err := kafka.Dial(cfg)
	require.NoError(t, err)
	defer p.Close()
	require.NoError(t, p.Ping(ctx))

	infos, err := p.CheckTopics(ctx)
	require.NoError(t, err)
	require.Len(t, infos, 3, "the two event topics and the heartbeat's")
	for _, in := range infos {
		require.Equal(t, kafkatest.Partitions, in.Partitions)
		if in.Name == cfg.TopicState {
			require.Equal(t, "compact", in.CleanupPolicy)
		}
	}

	errs := p.Send(ctx, []kafka.Record{
		{Topic: cfg.TopicChanges, Key: "1", Value: []byte(`{"a":1}`), Headers: []kafka.Header{{Key: "event_id", Value: "7"}}},
		{Topic: cfg.TopicState, Key: "1", Value: nil},
		{Topic: cfg.TopicChanges, Key: "2", Value: make([]byte, 2<<20)}, // over Producer.MaxMessageBytes
	})
	// One transaction per topic: the too-large record aborts its topic's transaction, so its
	// neighbour answers ErrAborted (retryable), while the other topic's record commits.
	// (sarama may answer it with the poisoned record's own error: the dispatcher sends every
	// non-retryable record again alone before declaring it DEAD).
	require.Error(t, errs[0])
	require.NoError(t, errs[1])
	require.Error(t, errs[2])
	require.True(t, kafka.NonRetryable(errs[2]), "%v", errs[2])
	errs = p.Send(ctx, []kafka.Record{{Topic: cfg.TopicChanges, Key: "1", Value: []byte(`{"a":1}`), Headers: []kafka.Header{{Key: "event_id", Value: "7"}}}})
	require.NoError(t, errs[0])

	recs := kafkatest.Consume(t, b.Addrs(), cfg.TopicChanges, 1, 10*time.Second)
	require.Equal(t, "1", recs[0].Key)
	require.Equal(t, "7", recs[0].Headers["event_id"])
	state := kafkatest.Consume(t, b.Addrs(), cfg.TopicState, 1, 10*time.Second)
	require.Nil(t, state[0].Value, "a nil value is a tombstone")

	// A broker rejection of the record itself is non-retryable; a timeout is retryable.
	b.Cluster().Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: cfg.TopicChanges, Err: kerr.MessageTooLarge})
	errs = p.Send(ctx, []kafka.Record{{Topic: cfg.TopicChanges, Key: "3", Value: []byte(`{}`)}})
	require.Error(t, errs[0])
	require.True(t, kafka.NonRetryable(errs[0]), "%v", errs[0])
	require.False(t, kafka.NonRetryable(&kafka.Error{Op: "produce", Err: sarama.ErrRequestTimedOut}))
	require.False(t, kafka.NonRetryable(nil))
}

func TestCheckTopicsMissing(t *testing.T) {
	t.Parallel()
	b, err := broker.Start()
	require.NoError(t, err)
	defer b.Close()
	cfg := kafkatest.Config(b.Addrs())
	p, err := kafka.Dial(cfg)
	require.NoError(t, err)
	defer p.Close()
	_, err = p.CheckTopics(context.Background())
	require.ErrorIs(t, err, kafka.ErrTopicMissing)
	require.Contains(t, err.Error(), "msgx.flight.changes")
	require.NoError(t, kafka.Probe(context.Background(), cfg, time.Second))
	require.Error(t, kafka.Probe(context.Background(), kafkatest.Config([]string{"127.0.0.1:1"}), time.Second))
}

// TestProbeSeesAHungBroker: a listener that accepts connections and never answers passes a TCP
// check but fails the metadata probe within its timeout.
func TestProbeSeesAHungBroker(t *testing.T) {
	t.Parallel()
	hung := kafka.FrozenBroker(t)
	const timeout = 500 * time.Millisecond
	for _, sasl := range []bool{false, true} {
		cfg := kafkatest.Config([]string{hung})
		if sasl { // one more request before the metadata: the handshake
			cfg.SASLMechanism, cfg.SASLUser, cfg.SASLPassword, cfg.TLS = "SCRAM-SHA-512", "u", "p", true
		}
		start := time.Now()
		err := kafka.Probe(context.Background(), cfg, timeout)
		took := time.Since(start)
		require.Error(t, err)
		// The whole probe, not each of its steps, is bounded by the timeout: /readyz turns 503
		// within the check timeout.
		require.Less(t, took, timeout+250*time.Millisecond, "sasl %v: bounded by the timeout as a whole", sasl)
		require.GreaterOrEqual(t, took, timeout-50*time.Millisecond)
	}
}

// TestProbeAnyBrokerAnswers: a frozen broker first in the list does not fail the probe while
// another broker answers: the brokers are asked at once, not one after the other.
func TestProbeAnyBrokerAnswers(t *testing.T) {
	t.Parallel()
	b, cfg := kafkatest.Broker(t)
	cfg.Brokers = append([]string{kafka.FrozenBroker(t)}, b.Addrs()...)
	const timeout = 2 * time.Second
	start := time.Now()
	require.NoError(t, kafka.Probe(context.Background(), cfg, timeout))
	require.Less(t, time.Since(start), timeout/2, "answered by the live broker, not after the frozen one")
}

// TestSilentNamesTheFrozenBrokers: Silent names the bootstrap brokers that do not answer, in the
// configured order, and none when every one answers.
func TestSilentNamesTheFrozenBrokers(t *testing.T) {
	t.Parallel()
	b, cfg := kafkatest.Broker(t)
	frozen := []string{kafka.FrozenBroker(t), kafka.FrozenBroker(t)}
	cfg.Brokers = []string{frozen[0], b.Addrs()[0], frozen[1]}
	silent, err := kafka.Silent(cfg, 500*time.Millisecond)
	require.NoError(t, err)
	require.Equal(t, frozen, silent)
	cfg.Brokers = b.Addrs()
	silent, err = kafka.Silent(cfg, 2*time.Second)
	require.NoError(t, err)
	require.Empty(t, silent)
}

// TestDialPassesOverFrozenBrokers: frozen brokers in the bootstrap list do not hold the dial
// for a read timeout: its clients start from the broker that answers. (Without the screening,
// each of the dial's three clients picks a random seed: all three pass over the three frozen
// ones with a chance of 1 in 64.)
func TestDialPassesOverFrozenBrokers(t *testing.T) {
	t.Parallel()
	b, cfg := kafkatest.Broker(t)
	cfg.Brokers = append([]string{kafka.FrozenBroker(t), kafka.FrozenBroker(t), kafka.FrozenBroker(t)}, b.Addrs()...)
	cfg.IOTimeout, cfg.CheckTimeout = 5*time.Second, 500*time.Millisecond
	start := time.Now()
	p, err := kafka.Dial(cfg)
	require.NoError(t, err)
	took := time.Since(start)
	defer func() { require.NoError(t, p.Close()) }()
	require.Less(t, took, cfg.IOTimeout, "no client waited a read timeout on a frozen broker")
	for _, err := range p.Send(context.Background(), []kafka.Record{{Topic: cfg.TopicChanges, Key: "1", Value: []byte("v")}}) {
		require.NoError(t, err)
	}
}

// TestFencing: a second producer with the same transactional ids (a new leader's) fences the
// first: the first can no longer commit anything, and a read_committed consumer sees only what
// committed, the new producer's records included.
func TestFencing(t *testing.T) {
	t.Parallel()
	b, cfg := kafkatest.Broker(t)
	checkFencing(t, b.Addrs(), cfg)
}

// checkFencing is TestFencing against the brokers at addrs.
func checkFencing(t *testing.T, addrs []string, cfg kafka.Config) {
	ctx := context.Background()
	old, err := kafka.Dial(cfg)
	require.NoError(t, err)
	defer old.Close()
	rec := func(key, v string) kafka.Record {
		return kafka.Record{Topic: cfg.TopicChanges, Key: key, Value: []byte(`{}`), Headers: []kafka.Header{{Key: "v", Value: v}}}
	}
	require.NoError(t, old.Send(ctx, []kafka.Record{rec("1", "old-1")})[0])

	next, err := kafka.Dial(cfg)
	require.NoError(t, err)
	defer next.Close()
	require.NoError(t, next.Send(ctx, []kafka.Record{rec("1", "new-2")})[0])

	// The old producer is fenced for good: it never re-initialises by itself.
	err = old.Send(ctx, []kafka.Record{rec("1", "old-3")})[0]
	require.ErrorIs(t, err, kafka.ErrFenced)
	t.Logf("the fenced producer's answer: %v", err)
	require.ErrorIs(t, old.Broken(), kafka.ErrBroken)
	require.ErrorIs(t, old.Send(ctx, []kafka.Record{rec("1", "old-4")})[0], kafka.ErrBroken)
	require.NoError(t, next.Broken())
	require.NoError(t, next.Send(ctx, []kafka.Record{rec("1", "new-5")})[0])

	// Consume, not ConsumeAll: a commit returns before the coordinator has written its markers,
	// so the last stable offset may not include new-5 yet.
	recs := kafkatest.Consume(t, addrs, cfg.TopicChanges, 3, 10*time.Second)
	var vs []string
	for _, r := range recs {
		vs = append(vs, r.Headers["v"])
	}
	require.Equal(t, []string{"old-1", "new-2", "new-5"}, vs)
}

func TestSCRAM(t *testing.T) {
	t.Parallel()
	for _, mech := range []string{"SCRAM-SHA-256", "SCRAM-SHA-512", "PLAIN"} {
		t.Run(mech, func(t *testing.T) {
			t.Parallel()
			b, err := broker.Start(kfake.EnableSASL(), kfake.Superuser(mech, "msgx", "s3cret=,x"))
			require.NoError(t, err)
			defer b.Close()
			cfg := kafkatest.Config(b.Addrs())
			cfg.SASLMechanism, cfg.SASLUser, cfg.SASLPassword = mech, "msgx", "s3cret=,x"
			require.NoError(t, kafka.EnsureTopics(cfg, 1))
			p, err := kafka.Dial(cfg)
			require.NoError(t, err)
			defer p.Close()
			errs := p.Send(context.Background(), []kafka.Record{{Topic: cfg.TopicChanges, Key: "1", Value: []byte("{}")}})
			require.NoError(t, errs[0])

			cfg.SASLPassword = "wrong"
			_, err = kafka.Dial(cfg)
			require.Error(t, err)
			require.True(t, strings.Contains(err.Error(), "kafka connect"), "%v", err)
		})
	}
}

// Unavailable blames the cluster for what a real one answers while it cannot take records, and
// never for what is the record's fault or a fenced producer.
func TestUnavailable(t *testing.T) {
	t.Parallel()
	for _, err := range []error{sarama.ErrNotEnoughReplicas, sarama.ErrNotEnoughReplicasAfterAppend, sarama.ErrNotLeaderForPartition,
		sarama.ErrLeaderNotAvailable, sarama.ErrRequestTimedOut, sarama.ErrConsumerCoordinatorNotAvailable,
		sarama.ErrNotCoordinatorForConsumer, sarama.ErrOffsetsLoadInProgress, sarama.ErrConcurrentTransactions,
		sarama.ErrOutOfBrokers, &net.OpError{Op: "dial", Err: fmt.Errorf("connect: %w", os.ErrDeadlineExceeded)},
		fmt.Errorf("%w: abort failed", kafka.ErrBroken)} {
		require.True(t, kafka.Unavailable(&kafka.Error{Op: "produce", Err: err}), "%v", err)
	}
	for _, err := range []error{nil, &kafka.Error{Op: "produce", Err: sarama.ErrMessageSizeTooLarge},
		&kafka.Error{Op: "produce", Err: sarama.ErrTopicAuthorizationFailed}, &kafka.Error{Op: "produce", Err: kafka.ErrAborted},
		&kafka.Error{Op: "produce", Err: fmt.Errorf("%w: %w", kafka.ErrFenced, sarama.ErrProducerFenced)}} {
		require.False(t, kafka.Unavailable(err), "%v", err)
	}
}

// TestCloseAbandonedOnHungBroker: a send abandoned at its timeout on a broker that holds the
// produce request (frozen) breaks the producer, and closing it does not wait for the broker:
// Close returns while the request is still held.
func TestCloseAbandonedOnHungBroker(t *testing.T) {
	t.Parallel()
	b, cfg := kafkatest.Broker(t)
	cfg.SendTimeout = 300 * time.Millisecond
	p, err := kafka.Dial(cfg)
	require.NoError(t, err)
	release := make(chan struct{})
	defer close(release)
	held := make(chan struct{}, 1)
	b.Cluster().ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		b.Cluster().KeepControl()
		select {
		case held <- struct{}{}:
		default:
		}
		<-release // the broker's request loop is frozen
		return nil, nil, false
	})
	errs := p.Send(context.Background(), []kafka.Record{{Topic: cfg.TopicChanges, Key: "1", Value: []byte("v")}})
	<-held
	require.ErrorIs(t, errs[0], kafka.ErrBroken)
	require.ErrorIs(t, p.Broken(), kafka.ErrBroken)
	closed := make(chan error, 1)
	go func() { closed <- p.Close() }()
	select {
	case err := <-closed:
		require.NoError(t, err)
	case <-time.After(cfg.IOTimeout):
		require.FailNow(t, "Close waited for the hung broker")
	}
}
