// Package kafka is msgx's one adapter to Kafka: every sarama type stays inside it. It builds the
// producer configuration under rule D3 and refuses to start when any part of D3 is missing,
// checks (and, in tests, creates) the topics, sends batches of records with one answer per
// record, and classifies broker rejections. The development broker is pkg/dev/broker.
//
// Producer rule D3 (docs/spec.md §9), not overridable by any setting:
//
//	Producer.Idempotent     = true
//	Producer.Transaction.ID = <MSGX_KAFKA_TRANSACTIONAL_ID_PREFIX>.<topic>: one stable
//	                          transactional producer per dispatcher role and topic, so the
//	                          producer a new leader initialises fences every older one
//	Producer.RequiredAcks   = WaitForAll (acks=all)
//	Net.MaxOpenRequests     = 1 (one request in flight per broker: no reordering on retry)
//	Net.Dial/Read/WriteTimeout, Producer.Timeout, Producer.Transaction.Timeout bounded
//	                          (> 0, ≤ MaxTimeout); every Send is bounded by the send timeout
//	Version                 = the configured version, at least 0.11.0 (transactions)
//	Producer.Retry.Max, Producer.Transaction.Retry.Max between 1 and MaxProducerRetries
//	                          (sarama's own retries stay short; the dispatcher's backoff does
//	                          the long retrying)
//
// Each Send is one Kafka transaction per topic: begin, produce, commit. Records of an aborted
// or fenced transaction are never seen by consumers reading with isolation.level=read_committed
// (docs/events.md). A producer whose transaction could not be finished in time (a hung broker)
// or that was fenced is broken: every later Send answers ErrBroken, and its owner dials a new
// one (initialising it with the same transactional id aborts the abandoned transaction) after
// checking that it still leads.
package kafka

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/IBM/sarama"

	"github.com/msgx/msgx/pkg/setting"
)

// MaxTimeout bounds every D3 timeout.
const MaxTimeout = 5 * time.Minute

// MaxProducerRetries bounds sarama's internal retries of one produce request.
const MaxProducerRetries = 10

// producerRetries is the value the builder sets: a few quick in-client retries for leader moves.
const producerRetries = 3

// Config is what the adapter needs. Its fields are the dispatcher's Kafka settings: variable,
// default and description in the tags (pkg/setting, docs/configuration.md).
type Config struct {
	Brokers        []string      `env:"MSGX_KAFKA_BROKERS" default:"127.0.0.1:9092" desc:"dispatcher: Kafka bootstrap brokers"`
	ClientID       string        `env:"MSGX_KAFKA_CLIENT_ID" default:"msgx-dispatcher" desc:"dispatcher: Kafka client id"`
	Version        string        `env:"MSGX_KAFKA_VERSION" default:"2.8.0" desc:"dispatcher: Kafka protocol version (at least 0.11.0 for idempotence)"`
	TopicChanges   string        `env:"MSGX_KAFKA_TOPIC_CHANGES" default:"msgx.flight.changes" desc:"dispatcher: topic of KAFKA:msg (one event per flight change)"`
	TopicState     string        `env:"MSGX_KAFKA_TOPIC_STATE" default:"msgx.flight.state" desc:"dispatcher: compacted topic of KAFKA:schd (latest full state per FLID)"`
	DialTimeout    time.Duration `env:"MSGX_KAFKA_DIAL_TIMEOUT" default:"10s" desc:"dispatcher: broker dial timeout (bounded, D3)"`
	IOTimeout      time.Duration `env:"MSGX_KAFKA_IO_TIMEOUT" default:"30s" desc:"dispatcher: broker read and write timeout (bounded, D3)"`
	ProduceTimeout time.Duration `env:"MSGX_KAFKA_PRODUCE_TIMEOUT" default:"10s" desc:"dispatcher: produce request timeout (bounded, D3)"`
	SendTimeout    time.Duration `env:"MSGX_KAFKA_SEND_TIMEOUT" default:"30s" desc:"dispatcher: bound of one send (a Kafka transaction: begin, produce, commit; D3)"`
	TxnTimeout     time.Duration `env:"MSGX_KAFKA_TXN_TIMEOUT" default:"30s" desc:"dispatcher: transaction timeout the broker enforces (an abandoned transaction aborts after it; D3)"`
	CheckTimeout   time.Duration `env:"MSGX_KAFKA_CHECK_TIMEOUT" default:"1s" desc:"dispatcher: readiness check: a metadata request must be answered within this (at most 2s, the readiness budget)"`
	TxnIDPrefix    string        `env:"MSGX_KAFKA_TRANSACTIONAL_ID_PREFIX" default:"msgx-dispatcher" desc:"dispatcher: transactional.id prefix; the id of each topic's producer is <prefix>.<topic> (one per deployment: a second deployment sharing it would fence the first)"`
	Compression    string        `env:"MSGX_KAFKA_COMPRESSION" default:"lz4" desc:"dispatcher: record batch compression: none, lz4 or zstd (zstd needs MSGX_KAFKA_VERSION ≥ 2.1.0)"`
	TLS            bool          `env:"MSGX_KAFKA_TLS" default:"false" desc:"dispatcher: connect to brokers with TLS"`
	TLSCAFile      string        `env:"MSGX_KAFKA_TLS_CA_FILE" default:"" desc:"dispatcher: PEM CA bundle for broker TLS (empty: system roots)"`
	SASLMechanism  string        `env:"MSGX_KAFKA_SASL_MECHANISM" default:"" desc:"dispatcher: empty, PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512"`
	SASLUser       string        `env:"MSGX_KAFKA_SASL_USER" default:"" desc:"dispatcher: SASL user (from a Secret)"`
	SASLPassword   string        `env:"MSGX_KAFKA_SASL_PASSWORD" default:"" desc:"dispatcher: SASL password (from a Secret)"`
}

// Validate reports every bad setting, one line each naming its variable.
func (c Config) Validate() error {
	var p setting.Problems
	if len(c.Brokers) == 0 {
		p.Add("MSGX_KAFKA_BROKERS", "must list at least one broker")
	}
	if c.TopicChanges == "" || c.TopicState == "" || c.TopicChanges == c.TopicState {
		p.Add("MSGX_KAFKA_TOPIC_CHANGES", "and MSGX_KAFKA_TOPIC_STATE must be set and differ")
	}
	if _, err := sarama.ParseKafkaVersion(c.Version); err != nil {
		p.Add("MSGX_KAFKA_VERSION", "%v", err)
	}
	for _, t := range []struct {
		name string
		d    time.Duration
	}{{"MSGX_KAFKA_DIAL_TIMEOUT", c.DialTimeout}, {"MSGX_KAFKA_IO_TIMEOUT", c.IOTimeout}, {"MSGX_KAFKA_PRODUCE_TIMEOUT", c.ProduceTimeout},
		{"MSGX_KAFKA_SEND_TIMEOUT", c.SendTimeout}, {"MSGX_KAFKA_TXN_TIMEOUT", c.TxnTimeout}} {
		if t.d <= 0 || t.d > MaxTimeout {
			p.Add(t.name, "must be between 1ms and 5m (D3: bounded), got %s", t.d)
		}
	}
	if c.CheckTimeout <= 0 || c.CheckTimeout > 2*time.Second {
		p.Add("MSGX_KAFKA_CHECK_TIMEOUT", "must be between 1ms and 2s, got %s", c.CheckTimeout)
	}
	if c.TxnIDPrefix == "" {
		p.Add("MSGX_KAFKA_TRANSACTIONAL_ID_PREFIX", "must be set (D3: transactional producers)")
	}
	if _, err := c.compression(); err != nil {
		p.Add("MSGX_KAFKA_COMPRESSION", "%v", err)
	}
	switch c.SASLMechanism {
	case "":
	case sarama.SASLTypePlaintext, sarama.SASLTypeSCRAMSHA256, sarama.SASLTypeSCRAMSHA512:
		if c.SASLUser == "" {
			p.Add("MSGX_KAFKA_SASL_USER", "must be set when MSGX_KAFKA_SASL_MECHANISM is %s", c.SASLMechanism)
		}
	default:
		p.Add("MSGX_KAFKA_SASL_MECHANISM", "must be empty, PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512, got %q", c.SASLMechanism)
	}
	return p.Err()
}

// usable checks what a producer cannot do without; the bounds of rule D3 are VerifyD3's.
func (c Config) usable() error {
	var errs []error
	if len(c.Brokers) == 0 {
		errs = append(errs, errors.New("kafka: no brokers"))
	}
	if c.TopicChanges == "" || c.TopicState == "" || c.TopicChanges == c.TopicState {
		errs = append(errs, errors.New("kafka: the changes and state topics must be set and differ"))
	}
	if _, err := sarama.ParseKafkaVersion(c.Version); err != nil {
		errs = append(errs, fmt.Errorf("kafka: version %q: %w", c.Version, err))
	}
	switch c.SASLMechanism {
	case "", sarama.SASLTypePlaintext, sarama.SASLTypeSCRAMSHA256, sarama.SASLTypeSCRAMSHA512:
	default:
		errs = append(errs, fmt.Errorf("kafka: SASL mechanism %q is not supported", c.SASLMechanism))
	}
	if c.TxnIDPrefix == "" {
		errs = append(errs, errors.New("kafka: the transactional id prefix must be set"))
	}
	if _, err := c.compression(); err != nil {
		errs = append(errs, fmt.Errorf("kafka: %w", err))
	}
	return errors.Join(errs...)
}

// compression maps the setting to sarama's codec (empty: lz4, the measured default).
func (c Config) compression() (sarama.CompressionCodec, error) {
	switch c.Compression {
	case "none":
		return sarama.CompressionNone, nil
	case "", "lz4":
		return sarama.CompressionLZ4, nil
	case "zstd":
		if v, err := sarama.ParseKafkaVersion(c.Version); err == nil && !v.IsAtLeast(sarama.V2_1_0_0) {
			return 0, fmt.Errorf("zstd needs Kafka version 2.1.0 or later, got %s", c.Version)
		}
		return sarama.CompressionZSTD, nil
	}
	return 0, fmt.Errorf("compression must be none, lz4 or zstd, got %q", c.Compression)
}

// TransactionalID is the transactional.id of the producer of topic (D3).
func (c Config) TransactionalID(topic string) string { return c.TxnIDPrefix + "." + topic }

// Topics returns the two topic names.
func (c Config) Topics() []string { return []string{c.TopicChanges, c.TopicState} }

// NewSaramaConfig is the one config builder. It always sets D3 and then verifies it.
func NewSaramaConfig(c Config) (*sarama.Config, error) {
	if err := c.usable(); err != nil {
		return nil, err
	}
	version, _ := sarama.ParseKafkaVersion(c.Version)

	sc := sarama.NewConfig()
	sc.ClientID = c.ClientID
	sc.Version = version

	sc.Net.DialTimeout = c.DialTimeout
	sc.Net.ReadTimeout = c.IOTimeout
	sc.Net.WriteTimeout = c.IOTimeout
	sc.Net.MaxOpenRequests = 1

	sc.Producer.Idempotent = true
	sc.Producer.RequiredAcks = sarama.WaitForAll
	sc.Producer.Timeout = c.ProduceTimeout
	sc.Producer.Retry.Max = producerRetries
	sc.Producer.Retry.Backoff = 100 * time.Millisecond
	sc.Producer.Return.Successes = true
	sc.Producer.Return.Errors = true
	sc.Producer.Partitioner = sarama.NewHashPartitioner
	sc.Producer.Compression, _ = c.compression() // checked by usable
	sc.Producer.Transaction.Timeout = c.TxnTimeout
	sc.Producer.Transaction.Retry.Max = producerRetries
	sc.Producer.Transaction.Retry.Backoff = 100 * time.Millisecond
	// Batch what the dispatcher hands over at once; a short linger lets a whole batch share
	// one request per broker.
	sc.Producer.Flush.Frequency = 2 * time.Millisecond
	sc.Producer.Flush.MaxMessages = 0

	sc.Metadata.Retry.Max = 3
	sc.Metadata.Retry.Backoff = 250 * time.Millisecond
	sc.Admin.Timeout = c.ProduceTimeout

	if c.TLS {
		tc, err := tlsConfig(c.TLSCAFile)
		if err != nil {
			return nil, err
		}
		sc.Net.TLS.Enable = true
		sc.Net.TLS.Config = tc
	}
	if c.SASLMechanism != "" {
		sc.Net.SASL.Enable = true
		sc.Net.SASL.Handshake = true
		sc.Net.SASL.Mechanism = sarama.SASLMechanism(c.SASLMechanism)
		sc.Net.SASL.User = c.SASLUser
		sc.Net.SASL.Password = c.SASLPassword
		if mech := sarama.SASLMechanism(c.SASLMechanism); mech == sarama.SASLTypeSCRAMSHA256 || mech == sarama.SASLTypeSCRAMSHA512 {
			if _, err := newSCRAM(mech); err != nil {
				return nil, err
			}
			sc.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient {
				s, _ := newSCRAM(mech) // checked above
				return s
			}
		}
	}
	if err := VerifyD3(sc, c); err != nil {
		return nil, err
	}
	return sc, nil
}

// NewTxnSaramaConfig is the configuration of topic's transactional producer: the D3 builder's
// with the topic's transactional id, verified again.
func NewTxnSaramaConfig(c Config, topic string) (*sarama.Config, error) {
	sc, err := NewSaramaConfig(c)
	if err != nil {
		return nil, err
	}
	sc.Producer.Transaction.ID = c.TransactionalID(topic)
	if err := VerifyProducerD3(sc, c, topic); err != nil {
		return nil, err
	}
	return sc, nil
}

// VerifyProducerD3 is VerifyD3 for the producer of topic: it must also be transactional with the
// topic's stable transactional id.
func VerifyProducerD3(sc *sarama.Config, c Config, topic string) error {
	err := VerifyD3(sc, c)
	if want := c.TransactionalID(topic); sc.Producer.Transaction.ID != want {
		err = errors.Join(err, fmt.Errorf("kafka: producer rule D3 violated: Producer.Transaction.ID must be %q (transactional), got %q", want, sc.Producer.Transaction.ID))
	}
	return err
}

// VerifyD3 refuses a producer configuration that breaks rule D3, one line per violation. It is
// run on every configuration before a producer is made, so no code path can weaken D3.
func VerifyD3(sc *sarama.Config, c Config) error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("kafka: producer rule D3 violated: "+format, args...))
	}
	if !sc.Producer.Idempotent {
		bad("Producer.Idempotent must be true")
	}
	if sc.Producer.RequiredAcks != sarama.WaitForAll {
		bad("Producer.RequiredAcks must be WaitForAll (acks=all), got %d", sc.Producer.RequiredAcks)
	}
	if sc.Net.MaxOpenRequests != 1 {
		bad("Net.MaxOpenRequests must be 1, got %d", sc.Net.MaxOpenRequests)
	}
	bounded := func(name string, d time.Duration) {
		if d <= 0 || d > MaxTimeout {
			bad("%s must be between 1ms and %s, got %s", name, MaxTimeout, d)
		}
	}
	bounded("Net.DialTimeout", sc.Net.DialTimeout)
	bounded("Net.ReadTimeout", sc.Net.ReadTimeout)
	bounded("Net.WriteTimeout", sc.Net.WriteTimeout)
	bounded("Producer.Timeout", sc.Producer.Timeout)
	bounded("Producer.Transaction.Timeout", sc.Producer.Transaction.Timeout)
	bounded("send timeout (MSGX_KAFKA_SEND_TIMEOUT)", c.SendTimeout)
	if !sc.Version.IsAtLeast(sarama.V0_11_0_0) {
		bad("Version must be at least 0.11.0 (idempotence), got %s", sc.Version)
	}
	if want, err := sarama.ParseKafkaVersion(c.Version); err == nil && sc.Version != want {
		bad("Version must be the configured %s, got %s", want, sc.Version)
	}
	if sc.Producer.Retry.Max < 1 || sc.Producer.Retry.Max > MaxProducerRetries {
		bad("Producer.Retry.Max must be between 1 and %d, got %d", MaxProducerRetries, sc.Producer.Retry.Max)
	}
	if r := sc.Producer.Transaction.Retry.Max; r < 1 || r > MaxProducerRetries {
		bad("Producer.Transaction.Retry.Max must be between 1 and %d, got %d", MaxProducerRetries, r)
	}
	if id := sc.Producer.Transaction.ID; id != "" && !strings.HasPrefix(id, c.TxnIDPrefix+".") {
		bad("Producer.Transaction.ID must be %s.<topic>, got %q", c.TxnIDPrefix, id)
	}
	if len(errs) == 0 {
		if err := sc.Validate(); err != nil {
			bad("sarama refuses the configuration: %v", err)
		}
	}
	return errors.Join(errs...)
}

func tlsConfig(caFile string) (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile == "" {
		return tc, nil
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("kafka: read TLS CA file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("kafka: TLS CA file %s holds no PEM certificate", caFile)
	}
	tc.RootCAs = pool
	return tc, nil
}

// Header is one record header.
type Header struct {
	Key   string
	Value string
}

// Record is one message to produce. A nil Value is a null value (a tombstone on a compacted
// topic).
type Record struct {
	Topic   string
	Key     string
	Value   []byte
	Headers []Header
}

// ErrFenced means a newer producer with the same transactional id (a newer dispatcher leader)
// was initialised: this producer can never send again.
var ErrFenced = errors.New("kafka: producer fenced by a newer producer with the same transactional id")

// ErrBroken answers every Send of a producer that abandoned a transaction (send timeout,
// cancellation) or reached a fatal state: it must be closed and a new one dialled.
var ErrBroken = errors.New("kafka: producer broken (transaction abandoned or fatal error): dial a new one")

// ErrAborted answers a record that the broker accepted but whose transaction was aborted
// because another record of the same Send failed: it was never visible to read_committed
// consumers and can be sent again at once.
var ErrAborted = errors.New("kafka: transaction aborted (another record of the batch failed)")

// Producer sends records with D3: one transactional producer per topic of the configuration.
// Send may be called concurrently for different topics; the sends of one topic take turns.
type Producer struct {
	cfg    Config
	client sarama.Client // metadata and admin requests
	txn    bool
	topics map[string]*topicProducer
	shared sarama.SyncProducer // non-transactional mode (DialNonTransactional)
}

// topicProducer is the transactional producer of one topic.
type topicProducer struct {
	topic string
	mu    sync.Mutex // one transaction at a time
	cur   *txnProducer
}

type txnProducer struct {
	client sarama.Client
	sync   sarama.SyncProducer
	// broken is set when a transaction was abandoned (timeout, cancellation) or the producer
	// reached a fatal state (fenced): it must be replaced before the next transaction.
	broken atomic.Pointer[error]
	done   sync.WaitGroup // the abandoned transaction's goroutine
}

func dialTxn(c Config, topic string) (*txnProducer, error) {
	sc, err := NewTxnSaramaConfig(c, topic)
	if err != nil {
		return nil, err
	}
	client, err := sarama.NewClient(c.Brokers, sc)
	if err != nil {
		return nil, &Error{Op: "connect", Err: err}
	}
	sp, err := sarama.NewSyncProducerFromClient(client) // InitProducerID: fences older producers
	if err != nil {
		_ = client.Close()
		if errors.Is(err, sarama.ErrProducerFenced) {
			return nil, &Error{Op: "init producer " + sc.Producer.Transaction.ID, Err: ErrFenced}
		}
		return nil, &Error{Op: "init producer " + sc.Producer.Transaction.ID, Err: err}
	}
	return &txnProducer{client: client, sync: sp}, nil
}

func (t *txnProducer) close() error {
	t.done.Wait()
	err := t.sync.Close()
	if cerr := t.client.Close(); cerr != nil && !errors.Is(cerr, sarama.ErrClosedClient) {
		err = errors.Join(err, cerr)
	}
	return err
}

// Dial builds the D3 configuration (refusing a violation), connects, and initialises one
// transactional producer per topic; initialising fences any older producer of the same
// transactional id (a deposed leader's).
func Dial(c Config) (*Producer, error) {
	p, err := dialClient(c)
	if err != nil {
		return nil, err
	}
	p.txn = true
	for _, topic := range c.Topics() {
		tp, err := dialTxn(c, topic)
		if err != nil {
			_ = p.Close()
			return nil, err
		}
		p.topics[topic] = &topicProducer{topic: topic, cur: tp}
	}
	return p, nil
}

// DialNonTransactional connects an idempotent producer without transactions: the comparison
// point of the benchmarks and the producer of development tools. The dispatcher never uses it.
func DialNonTransactional(c Config) (*Producer, error) {
	p, err := dialClient(c)
	if err != nil {
		return nil, err
	}
	sp, err := sarama.NewSyncProducerFromClient(p.client)
	if err != nil {
		_ = p.client.Close()
		return nil, &Error{Op: "producer", Err: err}
	}
	p.shared = sp
	return p, nil
}

func dialClient(c Config) (*Producer, error) {
	sc, err := NewSaramaConfig(c)
	if err != nil {
		return nil, err
	}
	for _, topic := range c.Topics() {
		if _, err := NewTxnSaramaConfig(c, topic); err != nil {
			return nil, err
		}
	}
	client, err := sarama.NewClient(c.Brokers, sc)
	if err != nil {
		return nil, &Error{Op: "connect", Err: err}
	}
	return &Producer{cfg: c, client: client, topics: map[string]*topicProducer{}}, nil
}

// Close stops the producers and the client.
func (p *Producer) Close() error {
	var err error
	for _, tp := range p.topics {
		tp.mu.Lock()
		if tp.cur != nil {
			err = errors.Join(err, tp.cur.close())
			tp.cur = nil
		}
		tp.mu.Unlock()
	}
	if p.shared != nil {
		err = errors.Join(err, p.shared.Close())
	}
	if cerr := p.client.Close(); cerr != nil && !errors.Is(cerr, sarama.ErrClosedClient) {
		err = errors.Join(err, cerr)
	}
	return err
}

// Send produces recs and returns one error per record (nil: acknowledged by all in-sync
// replicas and, transactional, committed). Records with the same key go to the same partition
// in the given order. Transactional, the records of each topic are one transaction: when one
// record fails, the others of its topic answer ErrAborted. Send returns within the send timeout
// (or when ctx ends): a transaction still unfinished then is abandoned, never committed, and
// the topic's producer is replaced at the next Send (which aborts it).
func (p *Producer) Send(ctx context.Context, recs []Record) []error {
	errs := make([]error, len(recs))
	if len(recs) == 0 {
		return errs
	}
	ctx, cancel := context.WithTimeout(ctx, p.cfg.SendTimeout)
	defer cancel()
	if !p.txn {
		return p.sendPlain(ctx, recs)
	}
	byTopic := map[string][]int{}
	var order []string
	for i, r := range recs {
		if _, ok := byTopic[r.Topic]; !ok {
			order = append(order, r.Topic)
		}
		byTopic[r.Topic] = append(byTopic[r.Topic], i)
	}
	for _, topic := range order {
		idx := byTopic[topic]
		tp := p.topics[topic]
		if tp == nil {
			for _, i := range idx {
				errs[i] = &Error{Op: "produce", Err: fmt.Errorf("topic %q is not one of the configured topics", topic)}
			}
			continue
		}
		sub := make([]Record, len(idx))
		for j, i := range idx {
			sub[j] = recs[i]
		}
		for j, err := range tp.send(ctx, sub) {
			errs[idx[j]] = err
		}
	}
	return errs
}

func (p *Producer) sendPlain(ctx context.Context, recs []Record) []error {
	res := make(chan []error, 1)
	go func() { res <- produce(p.shared, recs) }()
	select {
	case errs := <-res:
		return errs
	case <-ctx.Done():
		return fill(len(recs), &Error{Op: "produce", Err: ctx.Err()})
	}
}

// Broken reports why the producer cannot send any more (nil: it can).
func (p *Producer) Broken() error {
	for _, tp := range p.topics {
		tp.mu.Lock()
		cur := tp.cur
		tp.mu.Unlock()
		if cur == nil {
			return ErrBroken
		}
		if err := cur.broken.Load(); err != nil {
			return fmt.Errorf("%w: %w", ErrBroken, *err)
		}
	}
	return nil
}

// send runs one transaction of the topic's records.
func (tp *topicProducer) send(ctx context.Context, recs []Record) []error {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	if tp.cur == nil {
		return fill(len(recs), &Error{Op: "produce", Err: ErrBroken})
	}
	if err := tp.cur.broken.Load(); err != nil {
		return fill(len(recs), &Error{Op: "produce", Err: fmt.Errorf("%w: %w", ErrBroken, *err)})
	}
	cur := tp.cur
	var abandoned atomic.Bool
	res := make(chan []error, 1)
	cur.done.Add(1)
	go func() {
		defer cur.done.Done()
		res <- cur.transaction(recs, &abandoned)
	}()
	select {
	case errs := <-res:
		return errs
	case <-ctx.Done():
		abandoned.Store(true)
		err := fmt.Errorf("transaction abandoned: %w", ctx.Err())
		cur.broken.Store(&err)
		return fill(len(recs), &Error{Op: "produce", Err: fmt.Errorf("%w: %w", ErrBroken, err)})
	}
}

// transaction is begin, produce, commit; every failure aborts (a fatal one breaks the
// producer). abandoned, once set, turns the commit into an abort.
func (t *txnProducer) transaction(recs []Record, abandoned *atomic.Bool) []error {
	fail := func(op string, err error) []error {
		if t.sync.TxnStatus()&sarama.ProducerTxnFlagFatalError != 0 {
			if errors.Is(err, sarama.ErrProducerFenced) || errors.Is(err, sarama.ErrInvalidProducerEpoch) {
				err = fmt.Errorf("%w: %w", ErrFenced, err)
			}
			t.broken.Store(&err)
		}
		return fill(len(recs), &Error{Op: op, Err: err})
	}
	if err := t.sync.BeginTxn(); err != nil {
		return fail("begin transaction", err)
	}
	errs := produce(t.sync, recs)
	failed := false
	for _, err := range errs {
		failed = failed || err != nil
	}
	if failed || abandoned.Load() {
		if err := t.sync.AbortTxn(); err != nil {
			return fail("abort transaction", err)
		}
		if t.sync.TxnStatus()&sarama.ProducerTxnFlagFatalError != 0 {
			return fail("produce", firstErr(errs))
		}
		for i, err := range errs {
			if err == nil {
				errs[i] = &Error{Op: "produce", Err: ErrAborted}
			}
		}
		return errs
	}
	if err := t.sync.CommitTxn(); err != nil {
		if t.sync.TxnStatus()&sarama.ProducerTxnFlagAbortableError != 0 {
			_ = t.sync.AbortTxn()
		}
		return fail("commit transaction", err)
	}
	return errs
}

func firstErr(errs []error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func fill(n int, err error) []error {
	errs := make([]error, n)
	for i := range errs {
		errs[i] = err
	}
	return errs
}

// produce sends recs with sp and answers each.
func produce(sp sarama.SyncProducer, recs []Record) []error {
	errs := make([]error, len(recs))
	msgs := make([]*sarama.ProducerMessage, len(recs))
	for i, r := range recs {
		m := &sarama.ProducerMessage{Topic: r.Topic, Key: sarama.StringEncoder(r.Key), Metadata: i}
		if r.Value != nil {
			m.Value = sarama.ByteEncoder(r.Value)
		}
		if len(r.Headers) > 0 {
			m.Headers = make([]sarama.RecordHeader, len(r.Headers))
			for j, h := range r.Headers {
				m.Headers[j] = sarama.RecordHeader{Key: []byte(h.Key), Value: []byte(h.Value)}
			}
		}
		msgs[i] = m
	}
	err := sp.SendMessages(msgs)
	if err == nil {
		return errs
	}
	var perrs sarama.ProducerErrors
	if !errors.As(err, &perrs) {
		return fill(len(recs), &Error{Op: "produce", Err: err})
	}
	for _, pe := range perrs {
		if i, ok := pe.Msg.Metadata.(int); ok && i >= 0 && i < len(errs) {
			perr := pe.Err
			if errors.Is(perr, sarama.ErrProducerFenced) || errors.Is(perr, sarama.ErrInvalidProducerEpoch) {
				perr = fmt.Errorf("%w: %w", ErrFenced, perr)
			}
			errs[i] = &Error{Op: "produce", Err: perr}
		}
	}
	return errs
}

// Ping asks a broker for the metadata of the two topics with a bounded request (Probe).
func (p *Producer) Ping(ctx context.Context) error {
	return Probe(ctx, p.cfg, p.cfg.DialTimeout)
}

// Probe makes one real request, a metadata request for the two topics, to the first bootstrap
// broker that answers, the whole probe bounded by timeout (and ctx): a broker that accepts
// connections but does not answer (frozen, overloaded) fails it within the timeout. It is the
// dispatcher's readiness check. (A probe given up at the timeout finishes in the background,
// each of its network steps bounded by the timeout too.)
func Probe(ctx context.Context, c Config, timeout time.Duration) error {
	if dl, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(dl))
	}
	if timeout <= 0 {
		return &Error{Op: "metadata", Err: context.DeadlineExceeded}
	}
	done := make(chan error, 1)
	go func() { done <- probe(ctx, c, timeout) }()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
		return &Error{Op: "metadata", Err: fmt.Errorf("no broker answered within %s", timeout)}
	case <-ctx.Done():
		return &Error{Op: "metadata", Err: ctx.Err()}
	}
}

// probe is Probe's request, each network step bounded by timeout.
func probe(ctx context.Context, c Config, timeout time.Duration) error {
	sc, err := NewSaramaConfig(c)
	if err != nil {
		return err
	}
	sc.Net.DialTimeout, sc.Net.ReadTimeout, sc.Net.WriteTimeout = timeout, timeout, timeout
	var errs []error
	for _, addr := range c.Brokers {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		b := sarama.NewBroker(addr)
		if err := b.Open(sc); err != nil {
			errs = append(errs, err)
			continue
		}
		req := &sarama.MetadataRequest{Version: 1, Topics: c.Topics()}
		_, err := b.GetMetadata(req)
		_ = b.Close()
		if err == nil {
			return nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", addr, err))
	}
	return &Error{Op: "metadata", Err: fmt.Errorf("no broker answered within %s: %w", timeout, errors.Join(errs...))}
}

// TopicInfo is what the start-up check learnt of one topic.
type TopicInfo struct {
	Name          string
	Partitions    int
	CleanupPolicy string
}

// CheckTopics verifies that both topics exist with at least one partition, and that the state
// topic is compacted. A missing topic is a configuration error (ErrTopicMissing).
func (p *Producer) CheckTopics(_ context.Context) ([]TopicInfo, error) {
	admin, err := sarama.NewClusterAdminFromClient(p.client)
	if err != nil {
		return nil, &Error{Op: "admin", Err: err}
	}
	// Closing an admin made from a client would close the client: it is left to Close.
	return checkTopics(admin, p.cfg)
}

// ErrTopicMissing means a configured topic does not exist on the cluster.
var ErrTopicMissing = errors.New("kafka: topic missing")

func checkTopics(admin sarama.ClusterAdmin, c Config) ([]TopicInfo, error) {
	meta, err := admin.DescribeTopics(c.Topics())
	if err != nil {
		return nil, &Error{Op: "describe topics", Err: err}
	}
	var infos []TopicInfo
	var errs []error
	for _, tm := range meta {
		if errors.Is(tm.Err, sarama.ErrUnknownTopicOrPartition) {
			errs = append(errs, fmt.Errorf("%w: %s (create it, or set MSGX_KAFKA_TOPIC_CHANGES / MSGX_KAFKA_TOPIC_STATE)", ErrTopicMissing, tm.Name))
			continue
		}
		if tm.Err != sarama.ErrNoError {
			errs = append(errs, &Error{Op: "describe topic " + tm.Name, Err: tm.Err})
			continue
		}
		if len(tm.Partitions) == 0 {
			errs = append(errs, fmt.Errorf("%w: %s has no partitions", ErrTopicMissing, tm.Name))
			continue
		}
		info := TopicInfo{Name: tm.Name, Partitions: len(tm.Partitions)}
		entries, err := admin.DescribeConfig(sarama.ConfigResource{Type: sarama.TopicResource, Name: tm.Name, ConfigNames: []string{"cleanup.policy"}})
		if err == nil {
			for _, e := range entries {
				if e.Name == "cleanup.policy" {
					info.CleanupPolicy = e.Value
				}
			}
		}
		infos = append(infos, info)
	}
	return infos, errors.Join(errs...)
}

// EnsureTopics is the admin step of development and tests: it creates the two topics when
// missing (the state topic compacted) with the given partition count. Production topics are
// created by the platform team and only checked.
func EnsureTopics(c Config, partitions int32) error {
	sc, err := NewSaramaConfig(c)
	if err != nil {
		return err
	}
	admin, err := sarama.NewClusterAdmin(c.Brokers, sc)
	if err != nil {
		return &Error{Op: "admin connect", Err: err}
	}
	defer admin.Close()
	compact := "compact"
	for _, t := range []struct {
		name    string
		configs map[string]*string
	}{
		{c.TopicChanges, nil},
		{c.TopicState, map[string]*string{"cleanup.policy": &compact}},
	} {
		err := admin.CreateTopic(t.name, &sarama.TopicDetail{NumPartitions: partitions, ReplicationFactor: 1, ConfigEntries: t.configs}, false)
		if err != nil && !errors.Is(err, sarama.ErrTopicAlreadyExists) {
			return &Error{Op: "create topic " + t.name, Err: err}
		}
	}
	return nil
}

// Error is a Kafka failure with the operation it came from.
type Error struct {
	Op  string
	Err error
}

func (e *Error) Error() string { return "kafka " + e.Op + ": " + e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// nonRetryable are broker answers about the record itself: sending it again cannot succeed.
var nonRetryable = map[sarama.KError]bool{
	sarama.ErrMessageSizeTooLarge:         true,
	sarama.ErrMessageSetSizeTooLarge:      true,
	sarama.ErrInvalidRecord:               true,
	sarama.ErrInvalidTimestamp:            true,
	sarama.ErrUnsupportedForMessageFormat: true,
}

// NonRetryable reports whether err rejects the record itself (too large, invalid): it goes DEAD
// at once. Every other failure (timeouts, leader moves, lost connections, authorization) is
// retried with backoff.
func NonRetryable(err error) bool {
	if err == nil {
		return false
	}
	var kerr sarama.KError
	if errors.As(err, &kerr) {
		return nonRetryable[kerr]
	}
	var cerr sarama.ConfigurationError
	if errors.As(err, &cerr) {
		// The client's own size check ("larger than configured Producer.MaxMessageBytes").
		return strings.Contains(string(cerr), "larger than")
	}
	var perr sarama.PacketEncodingError
	return errors.As(err, &perr)
}
