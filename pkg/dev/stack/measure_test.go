package stack

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestLatenciesSplit: a message's latency is its wait to be ingested (commit → enqueued) plus
// the rest (enqueued → first record); later records of the same message and records of
// messages never committed do not count.
func TestLatenciesSplit(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	l := NewLatencies()
	l.Commit(1, 3, t0) // ids 1, 2, 3
	l.Arrive(Record{Topic: "msgx.flight.changes", MsgID: 1, At: t0.Add(500 * time.Millisecond)})
	l.Arrive(Record{Topic: "msgx.flight.changes", MsgID: 1, At: t0.Add(9 * time.Second)}) // a second record
	l.Arrive(Record{Topic: "msgx.flight.changes", MsgID: 2, At: t0.Add(4 * time.Second)}) // behind a gap
	l.Arrive(Record{Topic: "msgx.flight.state", MsgID: 3, At: t0.Add(time.Second)})       // other topic
	l.Arrive(Record{Topic: "msgx.flight.changes", MsgID: 7, At: t0.Add(time.Second)})     // never committed

	committed, arrived := l.Counts()
	require.Equal(t, 3, committed)
	require.Equal(t, 2, arrived)
	require.Equal(t, []time.Duration{500 * time.Millisecond, 4 * time.Second}, l.Percentiles(0, 0.99))

	wait, deliver := l.Split(map[int64]time.Time{1: t0.Add(100 * time.Millisecond), 2: t0.Add(3100 * time.Millisecond)})
	require.ElementsMatch(t, []time.Duration{100 * time.Millisecond, 3100 * time.Millisecond}, wait)
	require.ElementsMatch(t, []time.Duration{400 * time.Millisecond, 900 * time.Millisecond}, deliver)
	require.Equal(t, []time.Duration{400 * time.Millisecond, 900 * time.Millisecond, 900 * time.Millisecond}, Quantiles(deliver, 0, 0.5, 0.99))
}
