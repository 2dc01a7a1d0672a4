package flight_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/flight"
)

// BenchmarkBatchApply applies a pump batch of 500 one-flight updates over a 1,200-flight day (one
// flight in ten a code share of another) in memory, without loads: the cost of deriving MAFL as
// a batch grows.
func BenchmarkBatchApply(b *testing.B) {
	const flights, batch = 1200, 500
	l := &storeLoader{states: map[int64]*flight.State{}}
	ids := make([]int64, 0, flights)
	for i := range int64(flights) {
		id, maid := 1000+i, int64(0)
		if i%10 == 9 {
			maid = id - 1
		}
		s, _, err := flight.Apply(nil, rec(id, fmt.Sprintf("CA%04d", i), maid))
		require.NoError(b, err)
		s.Version, s.LastMsgID = 1, 1
		l.states[id] = &s
		ids = append(ids, id)
	}
	ctx := context.Background()
	all, err := l.Load(ctx, ids)
	require.NoError(b, err)
	for b.Loop() {
		b.StopTimer()
		bt := flight.NewBatch(loaded(all))
		require.NoError(b, bt.Preload(ctx, ids))
		b.StartTimer()
		for m := range batch {
			_, err := bt.Apply(ctx, int64(2+m), []flight.Input{cncl(ids[(m*7)%flights], m%24)})
			require.NoError(b, err)
		}
		bt.Take()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batch), "ns/msg")
}

// loaded is a Loader that returns one preloaded Stored (every FLID of the day at once).
type loaded flight.Stored

func (l loaded) Load(context.Context, []int64) (flight.Stored, error) {
	out := flight.Stored{States: make(map[int64]*flight.State, len(l.States)), Children: l.Children, Purged: l.Purged}
	for id, s := range l.States {
		c := s.Clone()
		out.States[id] = &c
	}
	return out, nil
}
