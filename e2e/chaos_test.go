package e2e_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/dev/apachekafka"
	"github.com/msgx/msgx/pkg/dev/chaos"
)

// TestChaosShort is the short form of the fault suite (make chaos runs the whole): one SIGKILL
// of each binary, one PostgreSQL restart and one broker freeze, each against fresh databases of
// a private PostgreSQL cluster and MariaDB instance, with a simulated day through the supervised
// binaries, checked with the end-to-end comparison (pkg/dev/verify). Every scenario must pass.
// The binaries run as make chaos runs them, in production's configuration: each as its own role,
// over verified TLS to both databases, Kafka over TLS with SCRAM-SHA-512, MSGX_ENV=production;
// the freeze on the development broker, the others on a single-node Apache Kafka (on the
// development broker too with MSGX_KAFKA_SKIP=1).
func TestChaosShort(t *testing.T) {
	t.Parallel()
	srv, err := chaos.StartServers()
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, srv.Close()) })
	work, err := os.MkdirTemp("", "msgx-chaos-short-")
	require.NoError(t, err)
	t.Cleanup(func() { // after the node's Close (cleanups run last first): its directory is in work
		if !t.Failed() {
			_ = os.RemoveAll(work)
		}
	})
	var node *chaos.RealKafka
	if os.Getenv(apachekafka.SkipEnv) != "1" {
		node = chaos.NewKafkaNode(filepath.Join(work, "apache-kafka"))
		t.Cleanup(func() { require.NoError(t, node.Close()) })
	}
	var log strings.Builder
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	results, err := chaos.RunAll(ctx, chaos.Config{
		BinDir: binDir, WorkDir: work, Seed: uint64(time.Now().Unix()), Date: airportToday(t), Log: &log,
		Feed: 20 * time.Second, Flights: 40, Kafka: node,
	}, srv, chaos.Short())
	t.Log("\n" + log.String())
	require.NoError(t, err)
	require.Len(t, results, len(chaos.Short()))
	failed := chaos.Failures(results)
	require.Empty(t, failed, "chaos scenarios failed (logs kept in %s)", work)
	for _, r := range results {
		require.Positive(t, r.Messages)
		require.Zero(t, r.Lost, r.Name)
		require.Contains(t, r.Configuration, "roles + TLS (PG verify-full, MySQL tls=msgx-ca) + Kafka TLS/SCRAM-SHA-512", r.Name)
		require.Contains(t, r.Configuration, "MSGX_ENV=production", r.Name)
	}
}
