package stack

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Record is one Kafka record as a downstream consumer sees it.
type Record struct {
	Topic        string
	FLID         string
	MsgID        int64
	StateVersion int64
	EventID      int64
	EventType    string
	Value        []byte // nil for a tombstone
	At           time.Time
}

// Consumer reads both topics from the beginning, as a downstream system would, and keeps
// every record (dev and test volumes only).
type Consumer struct {
	cl   *kgo.Client
	done chan struct{}

	mu      sync.Mutex
	records []Record
	onRec   func(Record)
}

// Consume starts reading topics on brokers with isolation.level=read_committed, as
// docs/events.md tells consumers to. onRecord, when set, is called for every record.
func Consume(brokers []string, topics []string, onRecord func(Record)) (*Consumer, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topics...),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(50*time.Millisecond),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		return nil, err
	}
	c := &Consumer{cl: cl, done: make(chan struct{}), onRec: onRecord}
	go c.loop()
	return c, nil
}

func (c *Consumer) loop() {
	defer close(c.done)
	for {
		fetches := c.cl.PollFetches(context.Background())
		if fetches.IsClientClosed() {
			return
		}
		now := time.Now()
		fetches.EachError(func(string, int32, error) {})
		fetches.EachRecord(func(r *kgo.Record) {
			rec := Record{Topic: r.Topic, FLID: string(r.Key), Value: r.Value, At: now}
			for _, h := range r.Headers {
				switch h.Key {
				case "msg_id":
					rec.MsgID, _ = strconv.ParseInt(string(h.Value), 10, 64)
				case "state_version":
					rec.StateVersion, _ = strconv.ParseInt(string(h.Value), 10, 64)
				case "event_id":
					rec.EventID, _ = strconv.ParseInt(string(h.Value), 10, 64)
				case "event_type":
					rec.EventType = string(h.Value)
				}
			}
			c.mu.Lock()
			c.records = append(c.records, rec)
			c.mu.Unlock()
			if c.onRec != nil {
				c.onRec(rec)
			}
		})
	}
}

// Records returns a copy of every record read so far.
func (c *Consumer) Records() []Record {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Record(nil), c.records...)
}

// Count returns how many records of topic were read.
func (c *Consumer) Count(topic string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, r := range c.records {
		if r.Topic == topic {
			n++
		}
	}
	return n
}

// Close stops the consumer.
func (c *Consumer) Close() error {
	c.cl.Close()
	select {
	case <-c.done:
		return nil
	case <-time.After(10 * time.Second):
		return errors.New("consumer did not stop")
	}
}
