package kafka_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/msgx/msgx/pkg/dev/kafkatest"
	"github.com/msgx/msgx/pkg/kafka"
)

// ReadCommitted sees what a read_committed consumer sees: the committed records of every
// partition in offset order, with their keys, null values and headers, and none of an aborted
// transaction; it stops at the high-water mark of when it began, transaction markers included.
func TestReadCommitted(t *testing.T) {
	t.Parallel()
	b, cfg := kafkatest.Broker(t)
	checkReadCommitted(t, b.Addrs(), cfg)
}

func TestRealBrokerReadCommitted(t *testing.T) {
	t.Parallel()
	c, cfg := realConfig(t, "readcommitted")
	checkReadCommitted(t, c.Addrs(), cfg)
}

func checkReadCommitted(t *testing.T, addrs []string, cfg kafka.Config) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p, err := kafka.Dial(cfg)
	require.NoError(t, err)
	defer p.Close()
	send := func(recs ...kafka.Record) {
		for _, err := range p.Send(ctx, recs) {
			require.NoError(t, err)
		}
	}
	hdr := func(v int) []kafka.Header { return []kafka.Header{{Key: "state_version", Value: strconv.Itoa(v)}} }
	send(kafka.Record{Topic: cfg.TopicChanges, Key: "1", Value: []byte("v1"), Headers: hdr(1)},
		kafka.Record{Topic: cfg.TopicChanges, Key: "2", Value: []byte("w1"), Headers: hdr(1)})

	// An aborted transaction of another producer: its records stay in the log, unseen.
	tx, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.TransactionalID("abort-"+cfg.TopicChanges))
	require.NoError(t, err)
	defer tx.Close()
	require.NoError(t, tx.BeginTransaction())
	require.NoError(t, tx.ProduceSync(ctx, &kgo.Record{Topic: cfg.TopicChanges, Key: []byte("1"), Value: []byte("aborted")}).FirstErr())
	require.NoError(t, tx.EndTransaction(ctx, kgo.TryAbort))

	send(kafka.Record{Topic: cfg.TopicChanges, Key: "1", Value: []byte("v2"), Headers: hdr(2)},
		kafka.Record{Topic: cfg.TopicChanges, Key: "1", Value: nil, Headers: hdr(3)})

	var got []kafka.ConsumedRecord
	ranges, err := kafka.ReadCommitted(ctx, cfg, cfg.TopicChanges, func(r kafka.ConsumedRecord) error {
		got = append(got, r)
		return nil
	})
	require.NoError(t, err)
	require.Len(t, ranges, kafkatest.Partitions)
	var ofKey1 []string
	last := map[int32]int64{}
	for _, r := range got {
		require.Equal(t, cfg.TopicChanges, r.Topic)
		if prev, ok := last[r.Partition]; ok {
			require.Greater(t, r.Offset, prev, "offset order per partition")
		}
		last[r.Partition] = r.Offset
		if r.Key == "1" {
			ofKey1 = append(ofKey1, r.Header("state_version")+"="+string(r.Value))
		}
	}
	require.Len(t, got, 4, "the aborted record is not read")
	require.Equal(t, []string{"1=v1", "2=v2", "3="}, ofKey1)
	for _, r := range got {
		if r.Key == "1" && r.Header("state_version") == "3" {
			require.Nil(t, r.Value, "a null value stays nil")
		}
	}

	_, err = kafka.ReadCommitted(ctx, cfg, "no.such.topic", func(kafka.ConsumedRecord) error { return nil })
	require.ErrorIs(t, err, kafka.ErrTopicMissing)
}

// TestReadCommittedPassesOverFrozenBrokers: frozen brokers in the bootstrap list do not hold
// the read for a read timeout: its client starts from the broker that answers (without that,
// sarama's random seed order starts from a frozen one three times in four).
func TestReadCommittedPassesOverFrozenBrokers(t *testing.T) {
	t.Parallel()
	b, cfg := kafkatest.Broker(t)
	p, err := kafka.Dial(cfg)
	require.NoError(t, err)
	defer p.Close()
	for _, err := range p.Send(context.Background(), []kafka.Record{{Topic: cfg.TopicChanges, Key: "1", Value: []byte("v")}}) {
		require.NoError(t, err)
	}
	cfg.Brokers = append([]string{kafka.FrozenBroker(t), kafka.FrozenBroker(t), kafka.FrozenBroker(t)}, b.Addrs()...)
	cfg.IOTimeout, cfg.CheckTimeout = 5*time.Second, 500*time.Millisecond
	start := time.Now()
	n := 0
	_, err = kafka.ReadCommitted(context.Background(), cfg, cfg.TopicChanges, func(kafka.ConsumedRecord) error {
		n++
		return nil
	})
	require.NoError(t, err)
	require.Less(t, time.Since(start), cfg.IOTimeout, "the read waited a read timeout on a frozen broker")
	require.Equal(t, 1, n)
}
