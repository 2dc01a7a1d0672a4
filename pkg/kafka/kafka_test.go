package kafka_test

import (
	"context"
	"github.com/msgx/msgx/pkg/dev/broker"
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
	goleak.VerifyTestMain(m,
		// sarama's go-metrics meters share one process-wide ticker goroutine.
		goleak.IgnoreTopFunction("github.com/rcrowley/go-metrics.(*meterArbiter).tick"),
	)
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
}

func TestVerifyD3RefusesEachViolation(t *testing.T) {
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
		"old version":       {func(sc *sarama.Config) { sc.Version = sarama.V0_10_2_0 }, "Version must be at least 0.11.0"},
		"other version":     {func(sc *sarama.Config) { sc.Version = sarama.V3_0_0_0 }, "Version must be the configured 2.8.0"},
		"no retries":        {func(sc *sarama.Config) { sc.Producer.Retry.Max = 0 }, "Producer.Retry.Max must be between"},
		"endless retries":   {func(sc *sarama.Config) { sc.Producer.Retry.Max = 1000 }, "Producer.Retry.Max must be between"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			sc, err := kafka.NewSaramaConfig(cfg)
			require.NoError(t, err)
			tc.mutate(sc)
			err = kafka.VerifyD3(sc, cfg)
			require.Error(t, err)
			require.Contains(t, err.Error(), "producer rule D3 violated: "+tc.want)
			require.NotContains(t, err.Error(), "\n\n")
		})
	}
}

func TestConfigRefusesBadValues(t *testing.T) {
	t.Parallel()
	cfg := kafkatest.Config([]string{"127.0.0.1:9092"})
	cfg.Version = "0.10.2.0"
	_, err := kafka.NewSaramaConfig(cfg)
	require.ErrorContains(t, err, "Version must be at least 0.11.0")

	cfg = kafkatest.Config([]string{"127.0.0.1:9092"})
	cfg.ProduceTimeout = 0
	_, err = kafka.NewSaramaConfig(cfg)
	require.ErrorContains(t, err, "Producer.Timeout must be between")

	cfg = kafkatest.Config(nil)
	_, err = kafka.NewSaramaConfig(cfg)
	require.ErrorContains(t, err, "no brokers")

	cfg = kafkatest.Config([]string{"x:1"})
	cfg.SASLMechanism = "GSSAPI"
	_, err = kafka.NewSaramaConfig(cfg)
	require.ErrorContains(t, err, "not supported")
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
	require.Len(t, infos, 2)
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
	require.NoError(t, errs[0])
	require.NoError(t, errs[1])
	require.Error(t, errs[2])
	require.True(t, kafka.NonRetryable(errs[2]), "%v", errs[2])

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
	require.NoError(t, kafka.Reachable(context.Background(), b.Addrs(), time.Second))
	require.Error(t, kafka.Reachable(context.Background(), []string{"127.0.0.1:1"}, time.Second))
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
