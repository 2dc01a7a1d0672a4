package obs_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/obs"
)

// A refresh loop keeps its period while its counts are cheap, takes at most 5% of a database
// backend when they are not, and never pauses so long that its lease looks hung.
func TestGaugePause(t *testing.T) {
	t.Parallel()
	require.Equal(t, 5*time.Second, obs.GaugePause(5*time.Second, 20*time.Millisecond, nil))
	require.Equal(t, 5*time.Second, obs.GaugePause(5*time.Second, 0, nil))
	require.Equal(t, 9500*time.Millisecond, obs.GaugePause(5*time.Second, 500*time.Millisecond, nil))
	took, pause := 2*time.Second, obs.GaugePause(time.Second, 2*time.Second, nil)
	require.InDelta(t, 0.05, took.Seconds()/(took+pause).Seconds(), 1e-9)

	require.Equal(t, time.Minute, obs.GaugePause(5*time.Second, 20*time.Second, nil), "a 20 s count: capped")
	require.Equal(t, 5*time.Second, obs.GaugePause(5*time.Second, 20*time.Second, errors.New("connect: timeout")),
		"a refresh that failed after 20 s keeps the period")
}

// The loop ticks before each refresh, reports failures other than its own end, and stops with
// its context.
func TestRefreshGauges(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	var ticks, refreshes int
	var failures []error
	obs.RefreshGauges(ctx, time.Nanosecond, func() { ticks++ }, func(context.Context) error {
		refreshes++
		switch refreshes {
		case 1:
			return errors.New("database away")
		case 3:
			cancel()
			return context.Canceled
		}
		return nil
	}, func(err error) { failures = append(failures, err) })
	require.Equal(t, 3, ticks)
	require.Equal(t, 3, refreshes)
	require.Len(t, failures, 1)
	require.EqualError(t, failures[0], "database away")
}
