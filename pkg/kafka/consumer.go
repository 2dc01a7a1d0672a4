package kafka

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/IBM/sarama"
)

// ConsumedRecord is one record read back from a topic.
type ConsumedRecord struct {
	Topic     string
	Partition int32
	Offset    int64
	Key       string
	Value     []byte // nil: a null value (a tombstone)
	Headers   []Header
	Timestamp time.Time // the record's timestamp (the producer's create time)
}

// Header returns the value of the header named key, "" when the record has none.
func (r ConsumedRecord) Header(key string) string {
	for _, h := range r.Headers {
		if h.Key == key {
			return h.Value
		}
	}
	return ""
}

// PartitionRange is the part of one partition a read covered: [Start, End), End the
// high-water mark when the read began.
type PartitionRange struct {
	Partition  int32
	Start, End int64
}

// Fetch sizes and pacing of ReadCommitted. A partition whose next batch is larger than the fetch
// size is fetched again with twice the size, up to maxFetchBytes.
const (
	fetchBytes     = 1 << 20
	maxFetchBytes  = 256 << 20
	fetchMaxWait   = 500 * time.Millisecond
	fetchRetries   = 5
	fetchRetryWait = 200 * time.Millisecond
)

// ReadCommitted reads topic as a consumer with isolation.level=read_committed: each partition
// from its log start to its high-water mark when the read began, partition after partition,
// handing fn each record in offset order. Records of aborted transactions and the transaction
// markers are left out; a transaction still open below the high-water mark is waited for (ctx
// bounds the wait). It returns the range read of every partition. It joins no consumer group
// and commits no offset: reading changes nothing on the cluster.
func ReadCommitted(ctx context.Context, c Config, topic string, fn func(ConsumedRecord) error) ([]PartitionRange, error) {
	return ReadCommittedSince(ctx, c, topic, time.Time{}, fn)
}

// ReadCommittedSince is ReadCommitted from the first record of each partition whose timestamp
// is at or after since (the broker's offset for that time); a zero since reads from the log
// start.
func ReadCommittedSince(ctx context.Context, c Config, topic string, since time.Time, fn func(ConsumedRecord) error) ([]PartitionRange, error) {
	sc, err := newSaramaConfig(c)
	if err != nil {
		return nil, err
	}
	sc.ClientID = c.ClientID + ".reader"
	sc.Consumer.IsolationLevel = sarama.ReadCommitted
	// Start from the brokers that answer (as Dial does): sarama tries its seeds in a random
	// order, and a frozen one would hold the read for read timeouts.
	seeds, err := answering(c, c.CheckTimeout)
	if err != nil {
		return nil, err
	}
	client, err := sarama.NewClient(seeds, sc)
	if err != nil {
		return nil, &Error{Op: "connect", Err: err}
	}
	defer client.Close()
	parts, err := client.Partitions(topic)
	if errors.Is(err, sarama.ErrUnknownTopicOrPartition) {
		return nil, fmt.Errorf("%w: %s", ErrTopicMissing, topic)
	}
	if err != nil {
		return nil, &Error{Op: "partitions of " + topic, Err: err}
	}
	var ranges []PartitionRange
	for _, p := range parts {
		r := &partitionReader{client: client, topic: topic, partition: p, maxBytes: fetchBytes}
		if err := r.bounds(since); err != nil {
			return ranges, err
		}
		ranges = append(ranges, PartitionRange{Partition: p, Start: r.next, End: r.end})
		if err := r.read(ctx, fn); err != nil {
			return ranges, err
		}
	}
	return ranges, nil
}

// partitionReader reads one partition from next up to end with fetch requests of its own:
// unlike sarama's consumer, it sees the offsets that transaction markers and aborted batches
// take, so it knows when it has reached end.
type partitionReader struct {
	client    sarama.Client
	topic     string
	partition int32
	next, end int64
	maxBytes  int32
}

func (r *partitionReader) op() string { return fmt.Sprintf("read %s/%d", r.topic, r.partition) }

// bounds sets the range to read: the log start offset (or the first offset at or after since)
// to the high-water mark.
func (r *partitionReader) bounds(since time.Time) error {
	var err error
	if r.end, err = r.client.GetOffset(r.topic, r.partition, sarama.OffsetNewest); err != nil {
		return &Error{Op: r.op() + ": high-water mark", Err: err}
	}
	start := sarama.OffsetOldest
	if !since.IsZero() {
		start = max(since.UnixMilli(), 0)
	}
	if r.next, err = r.client.GetOffset(r.topic, r.partition, start); err != nil {
		return &Error{Op: r.op() + ": start offset", Err: err}
	}
	if r.next < 0 { // no record at or after since
		r.next = r.end
	}
	return nil
}

func (r *partitionReader) read(ctx context.Context, fn func(ConsumedRecord) error) error {
	failures := 0
	for r.next < r.end {
		if err := ctx.Err(); err != nil {
			return &Error{Op: r.op(), Err: err}
		}
		block, err := r.fetch()
		if err != nil {
			if failures++; failures > fetchRetries {
				return &Error{Op: r.op(), Err: err}
			}
			_ = r.client.RefreshMetadata(r.topic)
			if err := wait(ctx, fetchRetryWait); err != nil {
				return &Error{Op: r.op(), Err: err}
			}
			continue
		}
		failures = 0
		progressed, err := r.consume(block, fn)
		if err != nil || progressed {
			if err != nil {
				return err
			}
			continue
		}
		if len(block.RecordsSet) == 0 && block.LastStableOffset >= r.end {
			return nil // nothing readable is left below end (compacted away)
		}
		// No complete batch: one larger than the fetch size, or a transaction still open.
		if r.maxBytes < maxFetchBytes && len(block.RecordsSet) > 0 {
			r.maxBytes *= 2
		} else if err := wait(ctx, fetchRetryWait); err != nil {
			return &Error{Op: r.op(), Err: err}
		}
	}
	return nil
}

func wait(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// fetch asks the partition's leader for the records from next, read_committed.
func (r *partitionReader) fetch() (*sarama.FetchResponseBlock, error) {
	leader, err := r.client.Leader(r.topic, r.partition)
	if err != nil {
		return nil, err
	}
	req := &sarama.FetchRequest{Version: 10, MaxWaitTime: int32(fetchMaxWait / time.Millisecond), MinBytes: 1,
		MaxBytes: r.maxBytes, Isolation: sarama.ReadCommitted, SessionEpoch: -1}
	req.AddBlock(r.topic, r.partition, r.next, r.maxBytes, -1)
	resp, err := leader.Fetch(req)
	if err != nil {
		_ = leader.Close() // the client reopens it
		return nil, err
	}
	block := resp.GetBlock(r.topic, r.partition)
	switch {
	case block == nil:
		return nil, sarama.ErrIncompleteResponse
	case errors.Is(block.Err, sarama.ErrOffsetOutOfRange): // the log start moved (retention)
		if start, err := r.client.GetOffset(r.topic, r.partition, sarama.OffsetOldest); err == nil && start > r.next {
			r.next = start
		}
		return nil, block.Err
	case !errors.Is(block.Err, sarama.ErrNoError):
		return nil, block.Err
	}
	return block, nil
}

// consume hands fn the committed records of block's complete batches and moves next past
// them; it reports whether it moved. A transactional batch of a producer whose transaction
// block lists as aborted is skipped up to that producer's abort marker (the read_committed
// rule, as Kafka's own consumer applies it).
func (r *partitionReader) consume(block *sarama.FetchResponseBlock, fn func(ConsumedRecord) error) (bool, error) {
	aborted := slices.Clone(block.AbortedTransactions)
	slices.SortFunc(aborted, func(a, b *sarama.AbortedTransaction) int { return cmp.Compare(a.FirstOffset, b.FirstOffset) })
	abortedPIDs := map[int64]bool{}
	progressed := false
	for _, recs := range block.RecordsSet {
		b := recs.RecordBatch
		if b == nil {
			return progressed, &Error{Op: r.op(), Err: errors.New("a legacy (pre-0.11) message set: not supported")}
		}
		if b.PartialTrailingRecord {
			break
		}
		last := b.FirstOffset + int64(b.LastOffsetDelta)
		for len(aborted) > 0 && aborted[0].FirstOffset <= last {
			abortedPIDs[aborted[0].ProducerID] = true
			aborted = aborted[1:]
		}
		switch {
		case b.Control:
			if isAbortMarker(b) {
				delete(abortedPIDs, b.ProducerID)
			}
		case b.IsTransactional && abortedPIDs[b.ProducerID]:
		case last >= r.next:
			if err := r.emit(b, fn); err != nil {
				return progressed, err
			}
		}
		if last >= r.next {
			r.next, progressed = last+1, true
		}
	}
	return progressed, nil
}

// emit hands fn the records of batch b in [next, end).
func (r *partitionReader) emit(b *sarama.RecordBatch, fn func(ConsumedRecord) error) error {
	for _, rec := range b.Records {
		off := b.FirstOffset + rec.OffsetDelta
		if off < r.next || off >= r.end {
			continue
		}
		cr := ConsumedRecord{Topic: r.topic, Partition: r.partition, Offset: off, Key: string(rec.Key), Value: rec.Value,
			Timestamp: b.FirstTimestamp.Add(rec.TimestampDelta)}
		for _, h := range rec.Headers {
			cr.Headers = append(cr.Headers, Header{Key: string(h.Key), Value: string(h.Value)})
		}
		if err := fn(cr); err != nil {
			return err
		}
	}
	return nil
}

// isAbortMarker reports whether control batch b is an abort marker: its record's key is the
// control record's version and type (int16 each; type 0 aborts, 1 commits).
func isAbortMarker(b *sarama.RecordBatch) bool {
	if len(b.Records) == 0 || len(b.Records[0].Key) < 4 {
		return false
	}
	return binary.BigEndian.Uint16(b.Records[0].Key[2:4]) == 0
}
