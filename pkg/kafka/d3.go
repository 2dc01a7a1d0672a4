package kafka

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/IBM/sarama"

	"github.com/msgx/msgx/pkg/backoff"
)

// MaxProducerRetries bounds sarama's internal retries of one produce request.
const MaxProducerRetries = 10

// producerRetries is the value the builder sets: a few quick in-client retries for leader moves.
const producerRetries = 3

// Transaction requests (AddPartitionsToTxn, EndTxn, InitProducerId) are retried txnRetries
// times, waiting txnBackoffFirst, doubling up to txnBackoffMax. A real coordinator answers
// CONCURRENT_TRANSACTIONS to the first AddPartitionsToTxn of a transaction until the previous
// one's markers are written, and COORDINATOR_NOT_AVAILABLE or NOT_COORDINATOR while it moves;
// the budget outlasts the longest such window measured (docs/kafka.md). It is not larger
// because the retries nest: each produce retry runs the transaction retries again, so a send to
// a dead broker would near the send timeout and break the producer instead of being an outage.
const (
	txnRetries      = 4
	txnBackoffFirst = 20 * time.Millisecond
	txnBackoffMax   = 320 * time.Millisecond
)

// Produce requests answered NOT_ENOUGH_REPLICAS, NOT_LEADER or with a lost connection are retried
// producerRetries times, waiting produceBackoffFirst, doubling up to produceBackoffMax: past
// that the dispatcher's own backoff takes over.
const (
	produceBackoffFirst = 100 * time.Millisecond
	produceBackoffMax   = 400 * time.Millisecond
)

// doubling is a sarama BackoffFunc: msgx's one retry delay rule (pkg/backoff), first doubled on
// each retry, at most limit.
func doubling(first, limit time.Duration) func(retries, maxRetries int) time.Duration {
	return func(retries, _ int) time.Duration { return backoff.Delay(retries+1, first, limit) }
}

// VerifyD3 builds the configuration of every producer Dial would make, without connecting, and
// reports what it refuses: a bad setting (Validate) or a breach of producer rule D3b.
func VerifyD3(c Config) error {
	for _, topic := range c.Topics() {
		if _, err := newTxnSaramaConfig(c, topic); err != nil {
			return err
		}
	}
	return nil
}

// newSaramaConfig is the one config builder. It refuses bad settings, always sets D3b and then
// verifies it.
func newSaramaConfig(c Config) (*sarama.Config, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	version, _ := sarama.ParseKafkaVersion(c.Version) // checked by Validate

	sc := sarama.NewConfig()
	sc.ClientID = c.ClientID
	sc.MetricRegistry = clientMetrics // NewCollector exports them
	sc.Version = version

	sc.Net.DialTimeout = c.DialTimeout
	sc.Net.ReadTimeout = c.IOTimeout
	sc.Net.WriteTimeout = c.IOTimeout
	sc.Net.MaxOpenRequests = 1

	sc.Producer.Idempotent = true
	sc.Producer.RequiredAcks = sarama.WaitForAll
	sc.Producer.Timeout = c.ProduceTimeout
	sc.Producer.Retry.Max = producerRetries
	sc.Producer.Retry.Backoff = produceBackoffFirst
	sc.Producer.Retry.BackoffFunc = doubling(produceBackoffFirst, produceBackoffMax)
	sc.Producer.Return.Successes = true
	sc.Producer.Return.Errors = true
	sc.Producer.Partitioner = sarama.NewHashPartitioner
	sc.Producer.Compression, _ = c.compression() // checked by Validate
	sc.Producer.Transaction.Timeout = c.TxnTimeout
	sc.Producer.Transaction.Retry.Max = txnRetries
	sc.Producer.Transaction.Retry.Backoff = txnBackoffFirst
	sc.Producer.Transaction.Retry.BackoffFunc = doubling(txnBackoffFirst, txnBackoffMax)
	// Batch what the dispatcher hands over at once; a short linger lets a whole batch share
	// one request per broker.
	sc.Producer.Flush.Frequency = 2 * time.Millisecond
	sc.Producer.Flush.MaxMessages = 0

	sc.Metadata.Retry.Max = 3
	sc.Metadata.Retry.Backoff = 250 * time.Millisecond
	// No msgx client ever creates a topic: a broker with auto.create.topics.enable (Apache
	// Kafka's default) would create a missing state topic with cleanup.policy=delete, and its
	// retention would then drop every flight that stayed quiet (docs/kafka.md).
	sc.Metadata.AllowAutoTopicCreation = false
	sc.Admin.Timeout = c.ProduceTimeout

	if err := secure(sc, c); err != nil {
		return nil, err
	}
	if err := checkD3(sc, c); err != nil {
		return nil, err
	}
	return sc, nil
}

// secure sets TLS and SASL as configured.
func secure(sc *sarama.Config, c Config) error {
	if c.TLS {
		tc, err := tlsConfig(c.TLSCAFile)
		if err != nil {
			return err
		}
		sc.Net.TLS.Enable = true
		sc.Net.TLS.Config = tc
	}
	if c.SASLMechanism == "" {
		return nil
	}
	mech := sarama.SASLMechanism(c.SASLMechanism)
	sc.Net.SASL.Enable = true
	sc.Net.SASL.Handshake = true
	sc.Net.SASL.Mechanism = mech
	sc.Net.SASL.User = c.SASLUser
	sc.Net.SASL.Password = c.SASLPassword
	if mech == sarama.SASLTypeSCRAMSHA256 || mech == sarama.SASLTypeSCRAMSHA512 {
		if _, err := newSCRAM(mech); err != nil {
			return err
		}
		sc.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient {
			s, _ := newSCRAM(mech) // checked above
			return s
		}
	}
	return nil
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

// newTxnSaramaConfig is the configuration of topic's transactional producer: the D3b builder's
// with the topic's transactional id, verified again.
func newTxnSaramaConfig(c Config, topic string) (*sarama.Config, error) {
	sc, err := newSaramaConfig(c)
	if err != nil {
		return nil, err
	}
	sc.Producer.Transaction.ID = c.TransactionalID(topic)
	if err := checkProducerD3(sc, c, topic); err != nil {
		return nil, err
	}
	return sc, nil
}

// checkProducerD3 is checkD3 for the producer of topic: it must also be transactional with the
// topic's stable transactional id.
func checkProducerD3(sc *sarama.Config, c Config, topic string) error {
	err := checkD3(sc, c)
	if want := c.TransactionalID(topic); sc.Producer.Transaction.ID != want {
		err = errors.Join(err, fmt.Errorf("kafka: producer rule D3b violated: Producer.Transaction.ID must be %q (transactional), got %q", want, sc.Producer.Transaction.ID))
	}
	return err
}

// checkD3 refuses a producer configuration that breaks rule D3b, one line per violation. It is
// run on every configuration before a producer is made, so no code path can weaken D3b.
func checkD3(sc *sarama.Config, c Config) error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("kafka: producer rule D3b violated: "+format, args...))
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
	if !sc.Version.IsAtLeast(minVersion) {
		bad("Version must be at least %s (transactions; older request versions are gone from Kafka 4), got %s", minVersion, sc.Version)
	}
	if want, err := sarama.ParseKafkaVersion(c.Version); err == nil && sc.Version != want {
		bad("Version must be the configured %s, got %s", want, sc.Version)
	}
	if sc.Metadata.AllowAutoTopicCreation {
		bad("Metadata.AllowAutoTopicCreation must be false: msgx never creates a topic")
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
