package kafka_test

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/msgx/msgx/pkg/dev/apachekafka"
	"github.com/msgx/msgx/pkg/dev/kafkatest"
	"github.com/msgx/msgx/pkg/kafka"
)

// realBroker is one Apache Kafka node shared by the package's real-broker tests (a JVM takes
// seconds to start); TestMain closes it.
// realConfig is the adapter's configuration for the package's shared real broker with topics of
// its own (prefix), the topics created.
func realConfig(t *testing.T, prefix string) (*apachekafka.Cluster, kafka.Config) {
	t.Helper()
	return kafkatest.ApacheConfig(t, prefix)
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

// TestRealBrokerFencing is TestFencing against Apache Kafka, which answers the fenced producer's
// produce request with INVALID_PRODUCER_EPOCH (and its EndTxn with PRODUCER_FENCED): it is
// fenced all the same, and never sends again.
func TestRealBrokerFencing(t *testing.T) {
	t.Parallel()
	c, cfg := realConfig(t, "fencing")
	checkFencing(t, c.Addrs(), cfg)
}

// TestRealBrokerConcurrentTransactionsWindow measures, with raw requests at the versions the
// adapter speaks, how long the coordinator answers CONCURRENT_TRANSACTIONS to the
// AddPartitionsToTxn that follows an EndTxn (the markers are written after EndTxn returns). The
// transaction retry budget (d3.go) is chosen against these figures; the test logs them and
// checks that every window ends.
func TestRealBrokerConcurrentTransactionsWindow(t *testing.T) {
	t.Parallel()
	c, cfg := realConfig(t, "window")
	cl, err := kgo.NewClient(append(c.ClientOpts(), kgo.MaxVersions(kversion.V2_8_0()))...)
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	txnID := "msgx-window"
	init := kmsg.NewPtrInitProducerIDRequest()
	init.TransactionalID, init.TransactionTimeoutMillis = &txnID, 20_000
	ir, err := init.RequestWith(ctx, cl)
	require.NoError(t, err)
	require.NoError(t, kerr.ErrorForCode(ir.ErrorCode))
	addPartitions := func() error {
		req := kmsg.NewPtrAddPartitionsToTxnRequest()
		req.TransactionalID, req.ProducerID, req.ProducerEpoch = txnID, ir.ProducerID, ir.ProducerEpoch
		topic := kmsg.NewAddPartitionsToTxnRequestTopic()
		topic.Topic, topic.Partitions = cfg.TopicChanges, []int32{0, 1, 2, 3}
		req.Topics = append(req.Topics, topic)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return err
		}
		return kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode)
	}
	// untilAdded asks until the partitions are added, answering how many asks it took.
	untilAdded := func() int {
		for asks := 1; ; asks++ {
			err := addPartitions()
			if err == nil {
				return asks
			}
			require.ErrorIs(t, err, kerr.ConcurrentTransactions)
		}
	}
	const txns = 50
	windows := make([]time.Duration, 0, txns)
	refused := 0
	untilAdded()
	for range txns {
		end := kmsg.NewPtrEndTxnRequest()
		end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = txnID, ir.ProducerID, ir.ProducerEpoch, true
		er, err := end.RequestWith(ctx, cl)
		require.NoError(t, err)
		require.NoError(t, kerr.ErrorForCode(er.ErrorCode))
		ended := time.Now()
		refused += untilAdded() - 1
		windows = append(windows, time.Since(ended))
	}
	slices.Sort(windows)
	t.Logf("CONCURRENT_TRANSACTIONS after EndTxn, %d transactions: min %s, median %s, p90 %s, max %s; %d asks refused",
		txns, windows[0], windows[txns/2], windows[txns*9/10], windows[txns-1], refused)
}
