package flightstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/dev/testdb"
	"github.com/msgx/msgx/pkg/flight"
	"github.com/msgx/msgx/pkg/flightstore"
)

// TestSaveWritesEveryValue: one Save of many new flights with every time set, then of a change to
// each, writes every value of every flight as given: the saved arrays point into the states and
// into chunks of converted times, which the flights' times fill more than once.
func TestSaveWritesEveryValue(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx := context.Background()
	var flids []int64
	var olds, nexts []*flight.State
	var ins, upd []flight.Transition
	for i := range int64(20) {
		s := newFlight(1000+i, "S"+string(rune('A'+i)))
		for f := range s.F {
			if flight.Fields[f].Kind == flight.KindTime {
				s.F[f] = flight.Time(t0.Add(time.Duration(i*100+int64(f)) * time.Minute))
			}
		}
		s.C[flight.GTDT] = []flight.Row{{flight.Int(1), flight.Text("G1"), flight.Time(t0.Add(time.Duration(i) * time.Hour))}}
		next := s.Clone()
		next.Version, next.LastMsgID = 2, 2
		next.F[flight.ESTT] = flight.Time(t0.Add(time.Duration(i) * time.Second))
		next.F[flight.STND] = flight.Null
		next.C[flight.GTDT] = append(next.C[flight.GTDT], flight.Row{flight.Int(2), flight.Text("G2"), flight.Time(t0.Add(-time.Duration(i) * time.Hour))})
		flids, olds, nexts = append(flids, s.FLID), append(olds, s), append(nexts, &next)
		ins, upd = append(ins, flight.Transition{Next: s}), append(upd, flight.Transition{Old: s, Next: &next})
	}
	check := func(want []*flight.State) {
		t.Helper()
		require.NoError(t, in(t, db, func(tx pgx.Tx) error {
			got, err := flightstore.Load(ctx, tx, flids)
			require.NoError(t, err)
			for _, w := range want {
				g := got.States[w.FLID]
				require.NotNil(t, g, "flight %d", w.FLID)
				require.Equal(t, w.F, g.F, "flight %d", w.FLID)
				require.Equal(t, w.C, g.C, "flight %d", w.FLID)
			}
			return nil
		}))
	}
	require.NoError(t, in(t, db, func(tx pgx.Tx) error { return flightstore.Save(ctx, tx, ins, nil, t0) }))
	check(olds)
	require.NoError(t, in(t, db, func(tx pgx.Tx) error { return flightstore.Save(ctx, tx, upd, nil, t0) }))
	check(nexts)
}
