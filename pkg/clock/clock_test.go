package clock

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestSleepOnFake: Sleep on a Fake returns once the fake time has moved d past the call (in
// steps, by Advance or Set), and false when ctx ends first; nothing sleeps on the wall clock.
func TestSleepOnFake(t *testing.T) {
	t.Parallel()
	f := NewFake(time.Date(2026, 12, 3, 8, 0, 0, 0, time.UTC))
	done := make(chan bool, 1)
	go func() { done <- Sleep(context.Background(), f, 5*time.Second) }()
	// Less than 5s after the call: still asleep, whenever the sleeper read the time.
	for range 4 {
		f.Advance(time.Second)
		select {
		case <-done:
			t.Fatal("Sleep returned before 5s passed on the fake clock")
		default:
		}
	}
	// Then it returns after a few more seconds (the sleeper may have read the time late).
	deadline := time.Now().Add(10 * time.Second)
	for returned := false; !returned; {
		require.True(t, time.Now().Before(deadline), "Sleep did not return")
		f.Advance(time.Second)
		select {
		case ok := <-done:
			require.True(t, ok)
			returned = true
		case <-time.After(10 * time.Millisecond):
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	go func() { done <- Sleep(ctx, f, time.Hour) }()
	cancel()
	require.False(t, <-done)
	require.True(t, Sleep(context.Background(), f, 0), "no wait")
	require.True(t, Sleep(context.Background(), System{}, 0), "no wait")
}

// TestAdvanceWhileWaiting: a sleeper of an hour in steps of a minute runs to its end on the fake
// clock, which moves only while someone sleeps on it; a done that never closes reports false.
func TestAdvanceWhileWaiting(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 12, 3, 8, 0, 0, 0, time.UTC)
	f := NewFake(start)
	done := make(chan struct{})
	go func() {
		defer close(done)
		Sleep(context.Background(), f, time.Hour)
	}()
	require.True(t, f.AdvanceWhileWaiting(done, time.Minute, 30*time.Second))
	require.False(t, f.Now().Before(start.Add(time.Hour)))
	require.True(t, f.Now().Before(start.Add(time.Hour+2*time.Minute)), "moved only while the sleeper waited: %s", f.Now())
	require.False(t, f.AdvanceWhileWaiting(make(chan struct{}), time.Minute, 10*time.Millisecond))
}
