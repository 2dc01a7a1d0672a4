// Package kafka is msgx's one adapter to Kafka: every sarama type stays inside it. It builds the
// producer configuration under rule D3 and refuses to start when any part of D3 is missing,
// checks (and, in tests, creates) the topics, sends batches of records with one answer per
// record, and classifies broker rejections. The development broker is pkg/dev/broker.
//
// Producer rule D3 (docs/spec.md §9), not overridable by any setting:
//
//	Producer.Idempotent   = true
//	Producer.RequiredAcks = WaitForAll (acks=all)
//	Net.MaxOpenRequests   = 1 (one request in flight per broker: no reordering on retry)
//	Net.Dial/Read/WriteTimeout, Producer.Timeout bounded (> 0, ≤ MaxTimeout)
//	Version               = the configured version, at least 0.11.0 (idempotence)
//	Producer.Retry.Max    between 1 and MaxProducerRetries (sarama's own retries stay short;
//	                      the dispatcher's backoff does the long retrying)
package kafka

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
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
	}{{"MSGX_KAFKA_DIAL_TIMEOUT", c.DialTimeout}, {"MSGX_KAFKA_IO_TIMEOUT", c.IOTimeout}, {"MSGX_KAFKA_PRODUCE_TIMEOUT", c.ProduceTimeout}} {
		if t.d <= 0 || t.d > MaxTimeout {
			p.Add(t.name, "must be between 1ms and 5m (D3: bounded), got %s", t.d)
		}
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
	return errors.Join(errs...)
}

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
	if !sc.Version.IsAtLeast(sarama.V0_11_0_0) {
		bad("Version must be at least 0.11.0 (idempotence), got %s", sc.Version)
	}
	if want, err := sarama.ParseKafkaVersion(c.Version); err == nil && sc.Version != want {
		bad("Version must be the configured %s, got %s", want, sc.Version)
	}
	if sc.Producer.Retry.Max < 1 || sc.Producer.Retry.Max > MaxProducerRetries {
		bad("Producer.Retry.Max must be between 1 and %d, got %d", MaxProducerRetries, sc.Producer.Retry.Max)
	}
	if sc.Producer.Transaction.ID != "" {
		bad("transactional producers are not used")
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

// Producer sends records with D3.
type Producer struct {
	cfg    Config
	client sarama.Client
	sync   sarama.SyncProducer
}

// Dial builds the D3 configuration (refusing a violation), connects and returns a Producer.
func Dial(c Config) (*Producer, error) {
	sc, err := NewSaramaConfig(c)
	if err != nil {
		return nil, err
	}
	client, err := sarama.NewClient(c.Brokers, sc)
	if err != nil {
		return nil, &Error{Op: "connect", Err: err}
	}
	sp, err := sarama.NewSyncProducerFromClient(client)
	if err != nil {
		_ = client.Close()
		return nil, &Error{Op: "producer", Err: err}
	}
	return &Producer{cfg: c, client: client, sync: sp}, nil
}

// Close stops the producer and its client.
func (p *Producer) Close() error {
	err := p.sync.Close()
	if cerr := p.client.Close(); cerr != nil && !errors.Is(cerr, sarama.ErrClosedClient) {
		err = errors.Join(err, cerr)
	}
	return err
}

// Send produces recs and returns one error per record (nil: acknowledged by all in-sync
// replicas). Records with the same key go to the same partition in the given order.
func (p *Producer) Send(_ context.Context, recs []Record) []error {
	errs := make([]error, len(recs))
	if len(recs) == 0 {
		return errs
	}
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
	err := p.sync.SendMessages(msgs)
	if err == nil {
		return errs
	}
	var perrs sarama.ProducerErrors
	if !errors.As(err, &perrs) {
		for i := range errs {
			errs[i] = &Error{Op: "produce", Err: err}
		}
		return errs
	}
	for _, pe := range perrs {
		if i, ok := pe.Msg.Metadata.(int); ok && i >= 0 && i < len(errs) {
			errs[i] = &Error{Op: "produce", Err: pe.Err}
		}
	}
	return errs
}

// Ping refreshes the metadata of the two topics: it fails when no broker answers.
func (p *Producer) Ping(_ context.Context) error {
	if err := p.client.RefreshMetadata(p.cfg.Topics()...); err != nil {
		return &Error{Op: "metadata", Err: err}
	}
	return nil
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

// Reachable dials the bootstrap brokers and succeeds when one accepts a TCP connection: the
// readiness check of a dispatcher that may be standby (and so has no producer).
func Reachable(ctx context.Context, brokers []string, timeout time.Duration) error {
	var errs []error
	for _, b := range brokers {
		d := net.Dialer{Timeout: timeout}
		conn, err := d.DialContext(ctx, "tcp", b)
		if err == nil {
			_ = conn.Close()
			return nil
		}
		errs = append(errs, err)
	}
	return fmt.Errorf("no Kafka broker reachable: %w", errors.Join(errs...))
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
