package obs_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/obs"
)

// A refresh loop keeps its period while its counts are cheap and takes at most 5% of a database
// backend when they are not.
func TestGaugePause(t *testing.T) {
	t.Parallel()
	require.Equal(t, 5*time.Second, obs.GaugePause(5*time.Second, 20*time.Millisecond))
	require.Equal(t, 5*time.Second, obs.GaugePause(5*time.Second, 0))
	require.Equal(t, 9500*time.Millisecond, obs.GaugePause(5*time.Second, 500*time.Millisecond))
	took, pause := 2*time.Second, obs.GaugePause(time.Second, 2*time.Second)
	require.InDelta(t, 0.05, took.Seconds()/(took+pause).Seconds(), 1e-9)
}
