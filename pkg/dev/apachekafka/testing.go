package apachekafka

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// SkipEnv set to 1 skips the tests that need a real broker. Without it, a machine that cannot
// run one (no Java 17, no jars) fails those tests, saying how to fix it.
const SkipEnv = "MSGX_KAFKA_SKIP"

// StartTimeout bounds Start and StartCluster, format included: JVMs start slowly on a busy
// machine.
const StartTimeout = 3 * time.Minute

// Start starts a single-node cluster for the test (see StartCluster).
func Start(t testing.TB, o Options) *Cluster {
	t.Helper()
	return StartCluster(t, 1, o)
}

// StartCluster starts a cluster of n nodes for the test and removes it when the test ends,
// printing the tail of every node's log first if the test failed.
func StartCluster(t testing.TB, n int, o Options) *Cluster {
	t.Helper()
	if os.Getenv(SkipEnv) == "1" {
		t.Skipf("%s=1: the tests against a real Apache Kafka broker are skipped", SkipEnv)
	}
	ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
	defer cancel()
	c, err := Launch(ctx, n, o)
	require.NoError(t, err, "start Apache Kafka (%s prepares the machine; %s=1 skips these tests)", EnsureScript, SkipEnv)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("Apache Kafka logs:\n%s", c.LogTails(60))
		}
		require.NoError(t, c.Close())
	})
	return c
}
