package apachekafka

import (
	"context"
	"os"
	"time"
)

// SkipEnv set to 1 skips the tests that need a real broker. Without it, a machine that cannot
// run one (no Java 17, no jars) fails those tests, saying how to fix it.
const SkipEnv = "MSGX_KAFKA_SKIP"

// ClusterEnv set to 1 runs the tests that start a three-node cluster (three JVMs, minutes on a
// small machine). make test leaves them out; make chaos-kafka is their end-to-end counterpart.
const ClusterEnv = "MSGX_KAFKA_CLUSTER"

// StartTimeout bounds Start and StartCluster, format included: JVMs start slowly on a busy
// machine.
const StartTimeout = 3 * time.Minute

// TB is what Start and StartCluster need of a test (testing.TB has it); the package does not
// import testing, so that the development tools that launch clusters (cmd/chaos) link no test
// machinery.
type TB interface {
	Helper()
	Cleanup(func())
	Failed() bool
	Logf(format string, args ...any)
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
	Skipf(format string, args ...any)
}

// Start starts a single-node cluster for the test (see StartCluster).
func Start(t TB, o Options) *Cluster {
	t.Helper()
	return StartCluster(t, 1, o)
}

// StartCluster starts a cluster of n nodes for the test and removes it when the test ends,
// printing the tail of every node's log first if the test failed.
func StartCluster(t TB, n int, o Options) *Cluster {
	t.Helper()
	if os.Getenv(SkipEnv) == "1" {
		t.Skipf("%s=1: the tests against a real Apache Kafka broker are skipped", SkipEnv)
	}
	ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
	defer cancel()
	c, err := Launch(ctx, n, o)
	if err != nil {
		t.Fatalf("start Apache Kafka (%s prepares the machine; %s=1 skips these tests): %v", EnsureScript, SkipEnv, err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("Apache Kafka logs:\n%s", c.LogTails(60))
		}
		if err := c.Close(); err != nil {
			t.Errorf("close Apache Kafka: %v", err)
		}
	})
	return c
}
