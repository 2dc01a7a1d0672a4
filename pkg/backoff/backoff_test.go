package backoff_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/backoff"
)

func TestBackoffSchedule(t *testing.T) {
	t.Parallel()
	var got []time.Duration
	for n := 1; n <= 8; n++ {
		got = append(got, backoff.Delay(n, time.Second, time.Minute))
	}
	require.Equal(t, []time.Duration{1e9, 2e9, 4e9, 8e9, 16e9, 32e9, 60e9, 60e9}, got)
	require.Equal(t, time.Second, backoff.Delay(0, time.Second, time.Minute))
	require.Equal(t, time.Minute, backoff.Delay(1, 2*time.Minute, time.Minute), "the cap bounds the first wait too")
}

// Next doubles the previous wait from base up to the cap: the same schedule as Delay.
func TestNext(t *testing.T) {
	t.Parallel()
	var got []time.Duration
	d := time.Duration(0)
	for range 8 {
		d = backoff.Next(d, time.Second, time.Minute)
		got = append(got, d)
	}
	require.Equal(t, []time.Duration{1e9, 2e9, 4e9, 8e9, 16e9, 32e9, 60e9, 60e9}, got)
	require.Equal(t, 5*time.Second, backoff.Next(time.Second, 5*time.Second, time.Minute), "at least base")
	require.Zero(t, backoff.Next(0, 0, time.Minute), "a zero base stays zero")
}
