package daemon

import (
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestGCPercent: the start-up log's gc_percent is the target in force, -1 when collection is off.
// Not parallel: the target is the process's.
func TestGCPercent(t *testing.T) {
	prev := debug.SetGCPercent(400)
	t.Cleanup(func() { debug.SetGCPercent(prev) })
	require.Equal(t, int64(400), gcPercent())
	debug.SetGCPercent(-1)
	require.Equal(t, int64(-1), gcPercent())
}
