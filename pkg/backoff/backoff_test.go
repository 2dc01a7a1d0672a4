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
}
