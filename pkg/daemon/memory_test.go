package daemon_test

import (
	"os"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/daemon"
)

// TestLimitMemory: without GOMEMLIMIT a binary takes DefaultMemoryLimit; with it, the runtime's
// own reading of it stays. Not parallel: the limit is the process's.
func TestLimitMemory(t *testing.T) {
	prev := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(prev) })

	t.Setenv("GOMEMLIMIT", "1GiB") // what the runtime read at start
	debug.SetMemoryLimit(1 << 30)
	daemon.LimitMemory()
	require.Equal(t, int64(1<<30), debug.SetMemoryLimit(-1), "the deployment's limit stays")

	require.NoError(t, os.Unsetenv("GOMEMLIMIT")) // t.Setenv restores it
	daemon.LimitMemory()
	require.Equal(t, int64(daemon.DefaultMemoryLimit), debug.SetMemoryLimit(-1))
}

// TestCollectLess: without GOGC a small-heap binary takes SmallHeapGCPercent; with it, the
// runtime's own reading of it stays. Not parallel: the target is the process's.
func TestCollectLess(t *testing.T) {
	prev := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(prev) })

	t.Setenv("GOGC", "150") // what the runtime read at start
	debug.SetGCPercent(150)
	daemon.CollectLess()
	require.Equal(t, 150, debug.SetGCPercent(150), "the deployment's GOGC stays")

	require.NoError(t, os.Unsetenv("GOGC")) // t.Setenv restores it
	daemon.CollectLess()
	require.Equal(t, daemon.SmallHeapGCPercent, debug.SetGCPercent(daemon.SmallHeapGCPercent))
}
