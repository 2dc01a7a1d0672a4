package kafka_test

import (
	"context"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/dev/apachekafka"
	"github.com/msgx/msgx/pkg/dev/kafkatest"
	"github.com/msgx/msgx/pkg/kafka"
)

// realBroker is one Apache Kafka node shared by the package's real-broker tests (a JVM takes
// seconds to start); TestMain closes it.
var realBroker struct {
	once    sync.Once
	cluster *apachekafka.Cluster
	err     error
}

// apacheKafka returns the shared real broker, starting it on first use; it skips the test when
// apachekafka.SkipEnv says so.
func apacheKafka(t *testing.T) *apachekafka.Cluster {
	t.Helper()
	if os.Getenv(apachekafka.SkipEnv) == "1" {
		t.Skipf("%s=1: the tests against a real Apache Kafka broker are skipped", apachekafka.SkipEnv)
	}
	realBroker.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), apachekafka.StartTimeout)
		defer cancel()
		realBroker.cluster, realBroker.err = apachekafka.Launch(ctx, 1, apachekafka.Options{})
	})
	require.NoError(t, realBroker.err, "start Apache Kafka (%s prepares the machine; %s=1 skips these tests)",
		apachekafka.EnsureScript, apachekafka.SkipEnv)
	return realBroker.cluster
}

// closeRealBroker stops the shared broker if a test started it.
func closeRealBroker() error {
	if realBroker.cluster == nil {
		return nil
	}
	return realBroker.cluster.Close()
}

// realConfig is the adapter's configuration for the shared real broker with topics of its own
// (prefix) and their transactional ids, the topics created.
func realConfig(t *testing.T, prefix string) (*apachekafka.Cluster, kafka.Config) {
	t.Helper()
	c := apacheKafka(t)
	cfg := kafkatest.Config(c.Addrs())
	cfg.TopicChanges, cfg.TopicState = prefix+".changes", prefix+".state"
	cfg.TxnIDPrefix = "msgx-" + prefix
	require.NoError(t, kafka.EnsureTopics(cfg, kafkatest.Partitions))
	return c, cfg
}

// TestRealBrokerBackToBackTransactions: a real coordinator answers the AddPartitionsToTxn that
// follows a commit with CONCURRENT_TRANSACTIONS until the previous transaction's markers are
// written. A thousand transactions sent back to back must all commit, every record once and in
// order per key.
func TestRealBrokerBackToBackTransactions(t *testing.T) {
	t.Parallel()
	c, cfg := realConfig(t, "backtoback")
	p, err := kafka.Dial(cfg)
	require.NoError(t, err)
	defer p.Close()
	ctx := context.Background()

	const txns, keys = 1000, 8
	began := time.Now()
	var failed []string
	for i := range txns {
		recs := make([]kafka.Record, keys)
		for k := range recs {
			recs[k] = kafka.Record{Topic: cfg.TopicChanges, Key: "k" + strconv.Itoa(k), Value: []byte(strconv.Itoa(i))}
		}
		for k, err := range p.Send(ctx, recs) {
			if err != nil {
				failed = append(failed, "transaction "+strconv.Itoa(i)+" record "+strconv.Itoa(k)+": "+err.Error())
			}
		}
		require.NoError(t, p.Broken(), "transaction %d broke the producer (%d failed records before: %v)", i, len(failed), failed)
	}
	took := time.Since(began)
	t.Logf("%d transactions of %d records in %s (%s each)", txns, keys, took.Round(time.Millisecond), (took / txns).Round(time.Microsecond))
	require.Empty(t, failed, "%d records failed", len(failed))

	recs := kafkatest.ConsumeAll(t, c.Addrs(), cfg.TopicChanges, time.Minute)
	require.Len(t, recs, txns*keys)
	next := map[string]int{}
	for _, r := range recs {
		require.Equal(t, strconv.Itoa(next[r.Key]), string(r.Value), "key %s", r.Key)
		next[r.Key]++
	}
}
