package kafkatest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/msgx/msgx/pkg/event"
)

// FromKgo is the Record of a consumed franz-go record.
func FromKgo(r *kgo.Record) Record {
	rec := Record{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Key: string(r.Key), Value: r.Value, Headers: map[string]string{}}
	for _, h := range r.Headers {
		rec.Headers[h.Key] = string(h.Value)
		rec.headers = append(rec.headers, event.Header{Key: h.Key, Value: string(h.Value)})
	}
	return rec
}

// ReadAll reads every record topic (created with Partitions) holds now, up to each partition's
// last stable offset when called, with a client of opts: the seed brokers, TLS and SASL of the
// cluster, and options that override the defaults (read_committed, from the start). With
// kgo.FetchIsolationLevel(kgo.ReadUncommitted()) it returns the records of aborted transactions
// too. Transaction markers are left out.
func ReadAll(t testing.TB, opts []kgo.Opt, topic string, timeout time.Duration) []*kgo.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	lcl, err := kgo.NewClient(opts...)
	require.NoError(t, err)
	ends := endOffsets(ctx, t, lcl, topic)
	lcl.Close()
	// Transaction markers take offsets too: keep them while reading to know where each
	// partition stands, and drop them from the result.
	cl, err := kgo.NewClient(append([]kgo.Opt{
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(100 * time.Millisecond),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(),
	}, opts...)...)
	require.NoError(t, err)
	defer cl.Close()
	next := make([]int64, Partitions)
	done := func() bool {
		for p, end := range ends {
			if next[p] < end {
				return false
			}
		}
		return true
	}
	var out []*kgo.Record
	for !done() {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			require.FailNowf(t, "consume", "topic %s: not read up to %v within %s (at %v)", topic, ends, timeout, next)
		}
		for _, fe := range fs.Errors() {
			require.NoError(t, fe.Err, "fetch %s/%d", fe.Topic, fe.Partition)
		}
		fs.EachRecord(func(r *kgo.Record) {
			next[r.Partition] = max(next[r.Partition], r.Offset+1)
			if !r.Attrs.IsControl() {
				out = append(out, r)
			}
		})
	}
	return out
}
