package broker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/IBM/sarama"

	"github.com/msgx/msgx/pkg/kafka"
)

// PlainProducer is an idempotent sarama producer without transactions: acks=all, one request in
// flight, the configured version and compression, the linger of pkg/kafka's producer. It is the
// comparison point of the benchmarks (the raw produce rate of the dispatcher's client library)
// and writes records without transaction markers for tests that count offsets. Plaintext only:
// it refuses a configuration with TLS or SASL. The dispatcher never uses it.
type PlainProducer struct {
	cfg kafka.Config
	sp  sarama.SyncProducer
}

// DialPlain connects a PlainProducer to the brokers of c.
func DialPlain(c kafka.Config) (*PlainProducer, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if c.TLS || c.SASLMechanism != "" {
		return nil, errors.New("broker: the plain producer speaks plaintext only")
	}
	sc := sarama.NewConfig()
	var err error
	if sc.Version, err = sarama.ParseKafkaVersion(c.Version); err != nil {
		return nil, err
	}
	codec := c.Compression
	if codec == "" {
		codec = "lz4" // the adapter's default
	}
	if err := sc.Producer.Compression.UnmarshalText([]byte(codec)); err != nil {
		return nil, err
	}
	sc.ClientID = c.ClientID
	sc.Net.DialTimeout, sc.Net.ReadTimeout, sc.Net.WriteTimeout = c.DialTimeout, c.IOTimeout, c.IOTimeout
	sc.Net.MaxOpenRequests = 1
	sc.Producer.Idempotent = true
	sc.Producer.RequiredAcks = sarama.WaitForAll
	sc.Producer.Timeout = c.ProduceTimeout
	sc.Producer.Return.Successes = true
	sc.Producer.Partitioner = sarama.NewHashPartitioner
	sc.Producer.Flush.Frequency = 2 * time.Millisecond
	sp, err := sarama.NewSyncProducer(c.Brokers, sc)
	if err != nil {
		return nil, fmt.Errorf("broker: plain producer: %w", err)
	}
	return &PlainProducer{cfg: c, sp: sp}, nil
}

// Send produces recs in one request per broker and answers each (nil: acknowledged). It waits
// for sarama's answer whatever ctx does.
func (p *PlainProducer) Send(_ context.Context, recs []kafka.Record) []error {
	errs := make([]error, len(recs))
	msgs := make([]*sarama.ProducerMessage, len(recs))
	for i, r := range recs {
		m := &sarama.ProducerMessage{Topic: r.Topic, Key: sarama.StringEncoder(r.Key), Metadata: i}
		if r.Value != nil {
			m.Value = sarama.ByteEncoder(r.Value)
		}
		for _, h := range r.Headers {
			m.Headers = append(m.Headers, sarama.RecordHeader{Key: []byte(h.Key), Value: []byte(h.Value)})
		}
		msgs[i] = m
	}
	err := p.sp.SendMessages(msgs)
	var perrs sarama.ProducerErrors
	switch {
	case err == nil:
	case errors.As(err, &perrs):
		for _, pe := range perrs {
			errs[pe.Msg.Metadata.(int)] = pe.Err
		}
	default:
		for i := range errs {
			errs[i] = err
		}
	}
	return errs
}

// Ping is kafka.Probe on the producer's brokers.
func (p *PlainProducer) Ping(ctx context.Context) error {
	return kafka.Probe(ctx, p.cfg, p.cfg.DialTimeout)
}

// Close closes the producer.
func (p *PlainProducer) Close() error { return p.sp.Close() }
