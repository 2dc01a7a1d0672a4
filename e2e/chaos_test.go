package e2e_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/dev/chaos"
)

// TestChaosShort is the short form of the fault suite (make chaos runs the whole): one SIGKILL
// of each binary, one PostgreSQL restart and one broker freeze, each against fresh databases of
// a private PostgreSQL cluster and MariaDB instance, with a simulated day through the supervised
// binaries, checked with the end-to-end comparison (pkg/dev/verify). Every scenario must pass.
func TestChaosShort(t *testing.T) {
	t.Parallel()
	srv, err := chaos.StartServers()
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, srv.Close()) })
	work, err := os.MkdirTemp("", "msgx-chaos-short-")
	require.NoError(t, err)
	var log strings.Builder
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	results, err := chaos.RunAll(ctx, chaos.Config{
		BinDir: binDir, WorkDir: work, Seed: uint64(time.Now().Unix()), Date: airportToday(t), Log: &log,
		Feed: 20 * time.Second, Flights: 40,
	}, srv, chaos.Short())
	t.Log("\n" + log.String())
	require.NoError(t, err)
	require.Len(t, results, len(chaos.Short()))
	failed := chaos.Failures(results)
	if len(failed) == 0 {
		_ = os.RemoveAll(work)
	}
	require.Empty(t, failed, "chaos scenarios failed (logs kept in %s)", work)
	for _, r := range results {
		require.Positive(t, r.Messages)
		require.Zero(t, r.Lost, r.Name)
	}
}
