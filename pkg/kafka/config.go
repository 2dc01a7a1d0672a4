package kafka

import (
	"fmt"
	"strings"
	"time"

	"github.com/IBM/sarama"

	"github.com/msgx/msgx/pkg/envconf"
)

// minVersion is the oldest protocol version the adapter speaks: Kafka 4 removed every request
// version older than Kafka 2.1's (KIP-896), and transactions need far less.
var minVersion = sarama.V2_1_0_0

// MaxTimeout bounds every D3b timeout.
const MaxTimeout = 5 * time.Minute

// maxCheckTimeout bounds the readiness check: the readiness budget.
const maxCheckTimeout = 2 * time.Second

// Config is what the adapter needs. Its fields are the dispatcher's Kafka settings: variable,
// default and description in the tags (pkg/envconf, docs/configuration.md).
type Config struct {
	Brokers        []string      `envconfig:"MSGX_KAFKA_BROKERS" default:"127.0.0.1:9092" desc:"dispatcher: Kafka bootstrap brokers"`
	ClientID       string        `envconfig:"MSGX_KAFKA_CLIENT_ID" default:"msgx-dispatcher" desc:"dispatcher: Kafka client id"`
	Version        string        `envconfig:"MSGX_KAFKA_VERSION" default:"2.8.0" desc:"dispatcher: Kafka protocol version sarama speaks (at least 2.1.0: Kafka 4 brokers refuse older request versions)"`
	TopicChanges   string        `envconfig:"MSGX_KAFKA_TOPIC_CHANGES" default:"msgx.flight.changes" desc:"dispatcher: topic of KAFKA:msg (one event per flight change)"`
	TopicState     string        `envconfig:"MSGX_KAFKA_TOPIC_STATE" default:"msgx.flight.state" desc:"dispatcher: compacted topic of KAFKA:schd (latest full state per FLID)"`
	TopicHeartbeat string        `envconfig:"MSGX_KAFKA_TOPIC_HEARTBEAT" default:"msgx.heartbeat" desc:"dispatcher: topic of the heartbeat (every MSGX_HEARTBEAT_PERIOD: the watermark and the newest event ids sent; docs/events.md); empty: no heartbeat"`
	DialTimeout    time.Duration `envconfig:"MSGX_KAFKA_DIAL_TIMEOUT" default:"10s" desc:"dispatcher: broker dial timeout (bounded, D3b)"`
	IOTimeout      time.Duration `envconfig:"MSGX_KAFKA_IO_TIMEOUT" default:"15s" desc:"dispatcher: broker read and write timeout (bounded, D3b; above MSGX_KAFKA_PRODUCE_TIMEOUT, which a produce request may wait on the broker)"`
	ProduceTimeout time.Duration `envconfig:"MSGX_KAFKA_PRODUCE_TIMEOUT" default:"10s" desc:"dispatcher: produce request timeout (bounded, D3b)"`
	SendTimeout    time.Duration `envconfig:"MSGX_KAFKA_SEND_TIMEOUT" default:"30s" desc:"dispatcher: bound of one send (a Kafka transaction: begin, produce, commit; D3b)"`
	TxnTimeout     time.Duration `envconfig:"MSGX_KAFKA_TXN_TIMEOUT" default:"30s" desc:"dispatcher: transaction timeout the broker enforces (an abandoned transaction aborts after it; D3b)"`
	CheckTimeout   time.Duration `envconfig:"MSGX_KAFKA_CHECK_TIMEOUT" default:"1s" desc:"dispatcher: readiness check: a metadata request must be answered within this (at most 2s, the readiness budget); a producer dial and the topic tail read start from the brokers that answer within it; while a send waits, the brokers are asked this often which brokers the cluster lists (a broker the controller fenced is cut off)"`
	TxnIDPrefix    string        `envconfig:"MSGX_KAFKA_TRANSACTIONAL_ID_PREFIX" default:"msgx-dispatcher" desc:"dispatcher: transactional.id prefix; the id of each topic's producer is <prefix>.<topic> (one per deployment: a second deployment sharing it would fence the first)"`
	Compression    string        `envconfig:"MSGX_KAFKA_COMPRESSION" default:"lz4" desc:"dispatcher: record batch compression: none, lz4 or zstd (zstd needs MSGX_KAFKA_VERSION ≥ 2.1.0)"`
	TLS            bool          `envconfig:"MSGX_KAFKA_TLS" default:"false" desc:"dispatcher: connect to brokers with TLS"`
	TLSCAFile      string        `envconfig:"MSGX_KAFKA_TLS_CA_FILE" default:"" desc:"dispatcher: PEM CA bundle for broker TLS (empty: system roots)"`
	SASLMechanism  string        `envconfig:"MSGX_KAFKA_SASL_MECHANISM" default:"" desc:"dispatcher: empty, PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512"`
	SASLUser       string        `envconfig:"MSGX_KAFKA_SASL_USER" default:"" desc:"dispatcher: SASL user (from a Secret)"`
	SASLPassword   string        `envconfig:"MSGX_KAFKA_SASL_PASSWORD" default:"" desc:"dispatcher: SASL password (from a Secret)"`
}

// Validate reports every bad setting, one line each naming its variable. It is the one check of
// the settings: the D3b builder runs it before building anything.
func (c Config) Validate() error {
	var p envconf.Problems
	if len(c.Brokers) == 0 {
		p.Add("MSGX_KAFKA_BROKERS", "must list at least one broker")
	}
	if c.TopicChanges == "" || c.TopicState == "" || c.TopicChanges == c.TopicState {
		p.Add("MSGX_KAFKA_TOPIC_CHANGES", "and MSGX_KAFKA_TOPIC_STATE must be set and differ")
	}
	if c.TopicHeartbeat != "" && (c.TopicHeartbeat == c.TopicChanges || c.TopicHeartbeat == c.TopicState) {
		p.Add("MSGX_KAFKA_TOPIC_HEARTBEAT", "must differ from MSGX_KAFKA_TOPIC_CHANGES and MSGX_KAFKA_TOPIC_STATE, got %q", c.TopicHeartbeat)
	}
	if v, err := sarama.ParseKafkaVersion(c.Version); err != nil {
		p.Add("MSGX_KAFKA_VERSION", "%v", err)
	} else if !v.IsAtLeast(minVersion) {
		p.Add("MSGX_KAFKA_VERSION", "must be at least %s, got %s (Kafka 4 brokers no longer answer request versions older than 2.1, KIP-896)", minVersion, c.Version)
	}
	for _, t := range []struct {
		name string
		d    time.Duration
	}{{"MSGX_KAFKA_DIAL_TIMEOUT", c.DialTimeout}, {"MSGX_KAFKA_IO_TIMEOUT", c.IOTimeout}, {"MSGX_KAFKA_PRODUCE_TIMEOUT", c.ProduceTimeout},
		{"MSGX_KAFKA_SEND_TIMEOUT", c.SendTimeout}, {"MSGX_KAFKA_TXN_TIMEOUT", c.TxnTimeout}} {
		if t.d <= 0 || t.d > MaxTimeout {
			p.Add(t.name, "must be between 1ms and 5m (D3b: bounded), got %s", t.d)
		}
	}
	if c.CheckTimeout <= 0 || c.CheckTimeout > maxCheckTimeout {
		p.Add("MSGX_KAFKA_CHECK_TIMEOUT", "must be between 1ms and %s, got %s", maxCheckTimeout, c.CheckTimeout)
	}
	if c.TxnIDPrefix == "" {
		p.Add("MSGX_KAFKA_TRANSACTIONAL_ID_PREFIX", "must be set (D3b: transactional producers)")
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

// compression maps the setting to sarama's codec (empty: lz4, the default).
func (c Config) compression() (sarama.CompressionCodec, error) {
	switch c.Compression {
	case "none":
		return sarama.CompressionNone, nil
	case "", "lz4":
		return sarama.CompressionLZ4, nil
	case "zstd": // needs 2.1.0, the oldest version Validate accepts
		return sarama.CompressionZSTD, nil
	}
	return 0, fmt.Errorf("compression must be none, lz4 or zstd, got %q", c.Compression)
}

// TransactionalID is the transactional.id of the producer of topic (D3b).
func (c Config) TransactionalID(topic string) string { return c.TxnIDPrefix + "." + topic }

// Topics returns the topics the dispatcher produces to: the two event topics and, when set, the
// heartbeat's.
func (c Config) Topics() []string {
	if c.TopicHeartbeat == "" {
		return []string{c.TopicChanges, c.TopicState}
	}
	return []string{c.TopicChanges, c.TopicState, c.TopicHeartbeat}
}

// ProductionRefusals are the Kafka settings production refuses: a connection without TLS, and
// above all a SASL PLAIN password sent in clear (docs/security.md).
func (c Config) ProductionRefusals() error {
	var p envconf.Problems
	switch {
	case !c.TLS && strings.EqualFold(c.SASLMechanism, "PLAIN"):
		p.Add("MSGX_KAFKA_SASL_MECHANISM", "PLAIN without MSGX_KAFKA_TLS=true sends the Kafka password in clear; production refuses it")
	case !c.TLS:
		p.Add("MSGX_KAFKA_TLS", "production requires TLS to the Kafka brokers (MSGX_KAFKA_TLS=true)")
	}
	return p.Err()
}
