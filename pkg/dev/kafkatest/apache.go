package kafkatest

import (
	"context"
	"os"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/dev/apachekafka"
	"github.com/msgx/msgx/pkg/kafka"
)

// sharedApache is one Apache Kafka node shared by a test package's real-broker tests (a JVM
// takes seconds to start); the package's TestMain closes it with CloseApache.
var sharedApache struct {
	once    sync.Once
	cluster *apachekafka.Cluster
	err     error
}

// Apache returns the package's shared real broker, starting it on first use; it skips the test
// when apachekafka.SkipEnv says so.
func Apache(t *testing.T) *apachekafka.Cluster {
	t.Helper()
	if os.Getenv(apachekafka.SkipEnv) == "1" {
		t.Skipf("%s=1: the tests against a real Apache Kafka broker are skipped", apachekafka.SkipEnv)
	}
	sharedApache.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), apachekafka.StartTimeout)
		defer cancel()
		sharedApache.cluster, sharedApache.err = apachekafka.Launch(ctx, 1, apachekafka.Options{})
	})
	require.NoError(t, sharedApache.err, "start Apache Kafka (%s prepares the machine; %s=1 skips these tests)",
		apachekafka.EnsureScript, apachekafka.SkipEnv)
	return sharedApache.cluster
}

// ApacheConfig is the adapter's configuration for the shared real broker with topics of its own
// (prefix.changes, prefix.state, prefix.heartbeat) and their transactional ids, the topics created.
func ApacheConfig(t *testing.T, prefix string) (*apachekafka.Cluster, kafka.Config) {
	t.Helper()
	c := Apache(t)
	cfg := Config(c.Addrs())
	cfg.TopicChanges, cfg.TopicState, cfg.TopicHeartbeat = prefix+".changes", prefix+".state", prefix+".heartbeat"
	cfg.TxnIDPrefix = "msgx-" + prefix
	require.NoError(t, kafka.EnsureTopics(cfg, Partitions))
	return c, cfg
}

// CloseApache stops the shared broker if a test started it.
func CloseApache() error {
	if sharedApache.cluster == nil {
		return nil
	}
	return sharedApache.cluster.Close()
}
