package tlsenv

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/msgx/msgx/pkg/dev/broker"
	"github.com/msgx/msgx/pkg/dev/kafkatest"
	"github.com/msgx/msgx/pkg/kafka"
)

// KafkaMechanism is the SASL mechanism of Kafka's broker: SCRAM-SHA-512, as production uses.
const KafkaMechanism = "SCRAM-SHA-512"

// Authority returns the process's CA (made on first use; no server is started).
func Authority(t testing.TB) *CA {
	t.Helper()
	mu.Lock()
	defer mu.Unlock()
	_, c, err := setup()
	require.NoError(t, err)
	return c
}

// Kafka starts an in-process broker (stopped when the test ends) that speaks only TLS with the
// CA's server certificate and authenticates with SASL/SCRAM-SHA-512 (user is a superuser), with
// both test topics created. cfg is the adapter's configuration for it: TLS verified against the
// CA, SCRAM-SHA-512 with user and password.
func Kafka(t testing.TB, user, password string) (*broker.InProcess, kafka.Config) {
	t.Helper()
	c := Authority(t)
	b, err := broker.Start(kfake.TLS(c.ServerTLS()), kfake.EnableSASL(), kfake.Superuser(KafkaMechanism, user, password))
	require.NoError(t, err)
	t.Cleanup(b.Close)
	cfg := kafkatest.Config(b.Addrs())
	cfg.TLS, cfg.TLSCAFile = true, c.CAFile
	cfg.SASLMechanism, cfg.SASLUser, cfg.SASLPassword = KafkaMechanism, user, password
	require.NoError(t, kafka.EnsureTopics(cfg, kafkatest.Partitions))
	return b, cfg
}
