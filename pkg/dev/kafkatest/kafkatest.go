// Package kafkatest reads topics back with a real consumer (franz-go's kgo client, independent
// of the producer under test) and starts in-process brokers with the topics created, for the
// tests of the dispatcher and its binary.
package kafkatest

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/msgx/msgx/pkg/dev/broker"
	"github.com/msgx/msgx/pkg/event"
	"github.com/msgx/msgx/pkg/kafka"
)

// Partitions of the topics tests create.
const Partitions = 4

// Config returns an adapter configuration for brokers: the development one (broker.ClientConfig,
// the same topic names) with the tests' client and transaction names and shorter send timeouts.
func Config(brokers []string) kafka.Config {
	cfg := broker.ClientConfig(brokers)
	cfg.ClientID, cfg.TxnIDPrefix = "msgx-test", "msgx-test"
	cfg.ProduceTimeout, cfg.SendTimeout, cfg.TxnTimeout = 5*time.Second, 20*time.Second, 20*time.Second
	return cfg
}

// Broker starts an in-process broker with both topics created; it stops with the test.
func Broker(t testing.TB, opts ...kfake.Opt) (*broker.InProcess, kafka.Config) {
	t.Helper()
	b, err := broker.Start(opts...)
	require.NoError(t, err)
	t.Cleanup(b.Close)
	cfg := Config(b.Addrs())
	require.NoError(t, kafka.EnsureTopics(cfg, Partitions))
	return b, cfg
}

// Record is one consumed record.
type Record struct {
	Topic     string
	Partition int32
	Offset    int64
	Key       string
	Value     []byte // nil: null value (tombstone)
	Headers   map[string]string

	headers []event.Header // as consumed, repeats included
}

// Int returns the header as an int64 (0 if absent). For a header of the event contract, read
// the record with Event.
func (r Record) Int(header string) int64 {
	v, _ := strconv.ParseInt(r.Headers[header], 10, 64)
	return v
}

// Event reads the record through the event contract (event.Parse); the test fails if its
// headers do not follow docs/events.md.
func (r Record) Event(t testing.TB) event.Received {
	t.Helper()
	e, err := event.Parse(r.Key, r.Value, r.headers)
	require.NoError(t, err, "%s/%d@%d", r.Topic, r.Partition, r.Offset)
	return e
}

// Heartbeat reads the record as a heartbeat (event.ParseHeartbeat); the test fails if it is not
// one.
func (r Record) Heartbeat(t testing.TB) event.Beat {
	t.Helper()
	b, err := event.ParseHeartbeat(r.Value, r.headers)
	require.NoError(t, err, "%s/%d@%d", r.Topic, r.Partition, r.Offset)
	return b
}

// Consume reads topic from the start as docs/events.md tells consumers to
// (isolation.level=read_committed: records of aborted or open transactions are never returned)
// until it has at least n records, or fails the test after timeout. Records of one partition
// are in offset order; partitions are interleaved.
func Consume(t testing.TB, brokers []string, topic string, n int, timeout time.Duration) []Record {
	t.Helper()
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(brokers...),
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(100*time.Millisecond),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
	)
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var out []Record
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			require.FailNowf(t, "consume", "topic %s: got %d records, want at least %d within %s", topic, len(out), n, timeout)
		}
		for _, fe := range fs.Errors() {
			require.NoError(t, fe.Err, "fetch %s/%d", fe.Topic, fe.Partition)
		}
		fs.EachRecord(func(r *kgo.Record) { out = append(out, FromKgo(r)) })
	}
	return out
}

// ConsumeAll reads, read_committed, every committed record the topic holds now: up to each
// partition's last stable offset when called.
func ConsumeAll(t testing.TB, brokers []string, topic string, timeout time.Duration) []Record {
	t.Helper()
	var out []Record
	for _, r := range ReadAll(t, []kgo.Opt{kgo.SeedBrokers(brokers...)}, topic, timeout) {
		out = append(out, FromKgo(r))
	}
	return out
}

// endOffsets returns the last stable offset of each partition of topic (created with
// Partitions): the end of what a read_committed consumer can read.
func endOffsets(ctx context.Context, t testing.TB, cl *kgo.Client, topic string) []int64 {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	req.IsolationLevel = 1 // read_committed
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	for p := int32(0); p < Partitions; p++ {
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition = p
		rp.Timestamp = -1 // latest
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	require.NoError(t, err)
	out := make([]int64, Partitions)
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			require.NoError(t, kerr.ErrorForCode(rp.ErrorCode), "list offsets %s/%d", topic, rp.Partition)
			out[rp.Partition] = rp.Offset
		}
	}
	return out
}
