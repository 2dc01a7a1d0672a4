package stack

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/msgx/msgx/pkg/event"
	"github.com/msgx/msgx/pkg/kafka"
)

// Record is one Kafka record as a downstream consumer sees it.
type Record struct {
	Topic        string
	FLID         string
	MsgID        int64
	StateVersion int64
	EventID      int64
	EventType    string
	Epoch        int64 // the dispatcher leader's epoch that sent it
	Partition    int32
	Offset       int64
	Value        []byte // nil for a tombstone
	At           time.Time
	// Malformed says why the record's headers do not follow docs/events.md (event.Parse); the
	// header fields above are then zero. "" for a record of the contract.
	Malformed string
	// Headers are the record's headers as sent (verify.Contract checks them against the schema).
	Headers []event.Header
}

// FromKgo is the Record of a consumed franz-go record read at at, its headers read through the
// contract (event.Parse).
func FromKgo(r *kgo.Record, at time.Time) Record {
	rec := Record{Topic: r.Topic, FLID: string(r.Key), Partition: r.Partition, Offset: r.Offset, Value: r.Value, At: at}
	hs := make([]event.Header, len(r.Headers))
	for i, h := range r.Headers {
		hs[i] = event.Header{Key: h.Key, Value: string(h.Value)}
	}
	rec.Headers = hs
	e, err := event.Parse(rec.FLID, r.Value, hs)
	if err != nil {
		rec.Malformed = err.Error()
		return rec
	}
	rec.MsgID, rec.StateVersion, rec.EventID, rec.EventType, rec.Epoch = e.MsgID, e.StateVersion, e.EventID, e.Type, e.Epoch
	return rec
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

// Consume starts reading topics on brokers (plaintext, no SASL) with
// isolation.level=read_committed, as docs/events.md tells consumers to. onRecord, when set, is
// called for every record.
func Consume(brokers []string, topics []string, onRecord func(Record)) (*Consumer, error) {
	return ConsumeWith(kafka.Config{Brokers: brokers}, topics, onRecord)
}

// ConsumeWith is Consume on the brokers of cfg with its TLS and SASL (SCRAM-SHA-256/512, PLAIN).
func ConsumeWith(cfg kafka.Config, topics []string, onRecord func(Record)) (*Consumer, error) {
	opts := []kgo.Opt{kgo.SeedBrokers(cfg.Brokers...), kgo.ConsumeTopics(topics...),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(50 * time.Millisecond),
		kgo.FetchIsolationLevel(kgo.ReadCommitted())}
	if cfg.TLS {
		tc := &tls.Config{MinVersion: tls.VersionTLS12}
		if cfg.TLSCAFile != "" {
			pem, err := os.ReadFile(cfg.TLSCAFile)
			if err != nil {
				return nil, fmt.Errorf("consumer: read the CA: %w", err)
			}
			tc.RootCAs = x509.NewCertPool()
			if !tc.RootCAs.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("consumer: no certificate in %s", cfg.TLSCAFile)
			}
		}
		opts = append(opts, kgo.DialTLSConfig(tc))
	}
	auth := scram.Auth{User: cfg.SASLUser, Pass: cfg.SASLPassword}
	switch cfg.SASLMechanism {
	case "":
	case "SCRAM-SHA-512":
		opts = append(opts, kgo.SASL(auth.AsSha512Mechanism()))
	case "SCRAM-SHA-256":
		opts = append(opts, kgo.SASL(auth.AsSha256Mechanism()))
	case "PLAIN":
		opts = append(opts, kgo.SASL(plain.Auth{User: cfg.SASLUser, Pass: cfg.SASLPassword}.AsMechanism()))
	default:
		return nil, fmt.Errorf("consumer: SASL mechanism %q", cfg.SASLMechanism)
	}
	cl, err := kgo.NewClient(opts...)
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
			rec := FromKgo(r, now)
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
