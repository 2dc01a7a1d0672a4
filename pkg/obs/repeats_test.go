package obs

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A fault retried every second for 95 s logs at 0, 30, 60 and 90 s, each line counting the
// tries it stands for; after Reset the next fault logs at once.
func TestRepeatsThinsAFault(t *testing.T) {
	r := Repeats{Every: 30 * time.Second}
	t0 := time.Date(2026, 12, 4, 8, 0, 0, 0, time.UTC)
	var logged, counts []int
	for s := 0; s <= 95; s++ {
		if n, ok := r.Due(t0.Add(time.Duration(s) * time.Second)); ok {
			logged, counts = append(logged, s), append(counts, n)
		}
	}
	require.Equal(t, []int{0, 30, 60, 90}, logged)
	require.Equal(t, []int{1, 30, 30, 30}, counts)

	r.Reset()
	n, ok := r.Due(t0.Add(96 * time.Second))
	require.True(t, ok)
	require.Equal(t, 1, n)
}
