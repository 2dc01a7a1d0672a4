package flight_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/dev/flighttest"
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

// BenchmarkStateJSON writes a flight state as the state topic publishes it: every field set,
// half of them times, two rows in every collection, instants in the airport's zone.
func BenchmarkStateJSON(b *testing.B) {
	loc, err := time.LoadLocation("Asia/Shanghai")
	require.NoError(b, err)
	s, _, err := flight.Apply(nil, rec(1000, "CA1234", 0))
	require.NoError(b, err)
	at := time.Date(2026, 12, 6, 8, 35, 0, 0, time.UTC)
	flighttest.FillFields(&s, at)
	for c := range s.C {
		for r := range 2 {
			var row flight.Row
			for i, col := range flight.Collections[c].Cols {
				switch col.Kind {
				case flight.KindTime:
					row[i] = flight.Time(at.Add(time.Duration(r*10+i) * time.Minute))
				case flight.KindInt:
					row[i] = flight.Int(int64(r + 1))
				default:
					row[i] = flight.Text("X" + fmt.Sprint(i))
				}
			}
			s.C[c] = append(s.C[c], row)
		}
	}
	var buf []byte
	for b.Loop() {
		buf = s.AppendJSONIn(buf[:0], loc)
	}
	b.ReportMetric(float64(len(buf)), "bytes")
}

// BenchmarkMarshalProv writes the stored provenance of a flight as a processor batch saves it:
// every field, the state and the collections set by a schedule, a sixth of the fields set again
// by three later FLOPs, and two entries merged since.
func BenchmarkMarshalProv(b *testing.B) {
	var p flight.Prov
	snap := flight.Stamp{DTTM: 1_796_000_000, MsgID: 100}
	for f := range p.F {
		p.F[f] = snap
		if f%6 == 5 { // every sixth field, re-stamped by the three FLOPs in turn
			k := int64(f / 6 % 3)
			p.F[f] = flight.Stamp{DTTM: snap.DTTM + 1 + k, MsgID: snap.MsgID + 1 + k}
		}
	}
	p.Status = snap
	for c := range p.W {
		p.W[c] = snap
	}
	p.E = map[flight.EntryKey]flight.Stamp{
		{C: flight.GTDT, K: flight.Int(2)}: {DTTM: snap.DTTM + 5, MsgID: 110},
		{C: flight.GTDT, K: flight.Int(1)}: {DTTM: snap.DTTM + 6, MsgID: 111},
	}
	b.ReportAllocs()
	var out []byte
	for b.Loop() {
		out = flight.MarshalProv(&p)
	}
	b.ReportMetric(float64(len(out)), "bytes")
}

// BenchmarkBatchApplySnapshot applies one message of 2,000 new flights (a schedule snapshot,
// one flight in ten a code share of another): every flight of the message is a candidate master
// whose MAFL is derived.
func BenchmarkBatchApplySnapshot(b *testing.B) {
	const flights = 2000
	inputs := make([]flight.Input, 0, flights)
	for i := range int64(flights) {
		id, maid := 1000+i, int64(0)
		if i%10 == 9 {
			maid = id - 1
		}
		inputs = append(inputs, rec(id, fmt.Sprintf("CA%04d", i), maid))
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		bt := flight.NewBatch(&storeLoader{states: map[int64]*flight.State{}})
		r, err := bt.Apply(ctx, 1, inputs)
		require.NoError(b, err)
		require.Equal(b, flights, r.Inserted)
	}
}
