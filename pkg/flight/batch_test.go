package flight_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/flight"
	"github.com/msgx/msgx/pkg/sis"
)

// storeLoader is a Loader over an in-memory "database": the stored states, their MAFL children
// derived as flightstore derives them, and the purged histories. It counts the loads.
type storeLoader struct {
	states map[int64]*flight.State
	purged map[int64]int64
	loads  [][]int64
	// handed are the states Load returned and a deep copy of each: a batch never changes a
	// stored state (unchanged checks it).
	handed, copies []*flight.State
}

// unchanged checks that no state Load returned was changed since.
func (l *storeLoader) unchanged(t *testing.T) {
	t.Helper()
	for i, s := range l.handed {
		require.Equal(t, *l.copies[i], *s, "stored state of FLID %d changed in place", s.FLID)
	}
}

func (l *storeLoader) Load(_ context.Context, flids []int64) (flight.Stored, error) {
	l.loads = append(l.loads, flids)
	out := flight.Stored{States: map[int64]*flight.State{}, Children: map[int64][]flight.Child{}, Purged: map[int64]int64{}}
	for _, id := range flids {
		for _, s := range l.states {
			if m, c, ok := flight.ChildOf(s); ok && m == id {
				out.Children[id] = append(out.Children[id], c)
			}
		}
		if s, ok := l.states[id]; ok {
			c := s.Clone()
			if c.Status == flight.Active {
				c.MAFL = flight.Project(id, out.Children[id], nil)
			}
			out.States[id] = &c
			cp := c.Clone()
			l.handed, l.copies = append(l.handed, &c), append(l.copies, &cp)
		} else if v, ok := l.purged[id]; ok {
			out.Purged[id] = v
		}
	}
	return out, nil
}

// rec is a valid schedule record of flight flid (flno, optional MAID).
func rec(flid int64, flno string, maid int64) flight.Input {
	r := sis.FlightRecord{FLID: sis.Val(flid), ALCD: sis.Val(flno[:2]), FLNO: sis.Val(flno), MVIN: sis.Val("D"),
		SODT: sis.Val(at(5, 35)), FLTY: sis.Val("W"), FLIN: sis.Val("D"), ACFT: sis.Val("733")}
	if maid != 0 {
		r.MAID = sis.Val(maid)
	}
	return flight.Input{Record: &r}
}

func del(flid int64) flight.Input {
	return flight.Input{Record: &sis.FlightRecord{FLID: sis.Val(flid)}, Delete: true}
}

func cncl(flid int64, h int) flight.Input {
	return flight.Input{Op: &sis.FlightOp{FLID: flid, Subtype: "CNCL", Payload: sis.FlightRecord{CNCL: sis.Val(at(h, 0))}}}
}

// stored returns the state rec(flid, flno, maid) gives, stored at version.
func stored(t *testing.T, flid int64, flno string, maid int64, version int64) *flight.State {
	t.Helper()
	s, _, err := flight.Apply(nil, rec(flid, flno, maid))
	require.NoError(t, err)
	s.Version, s.LastMsgID = version, 1
	return &s
}

// changed is what a Result's Changed says of a flight: FLID, version, MAFL FLIDs.
type changed struct {
	FLID, Version int64
	MAFL          []int64
}

func summary(r flight.Result) []changed {
	var out []changed
	for _, c := range r.Changed {
		ch := changed{FLID: c.Next.FLID, Version: c.Next.Version}
		for _, m := range c.Next.MAFL {
			ch.MAFL = append(ch.MAFL, m.FLID)
		}
		out = append(out, ch)
	}
	return out
}

func TestBatchRules(t *testing.T) {
	t.Parallel()
	type msg struct {
		inputs []flight.Input
		want   []changed // the message's changed flights, by FLID
		counts [3]int    // inserted, updated (masters included), unchanged
		skips  []flight.Skip
	}
	cases := []struct {
		name   string
		stored func(t *testing.T) map[int64]*flight.State
		purged map[int64]int64
		msgs   []msg
		take   []changed // what Take returns after every message
	}{
		{
			name: "a new flight starts at version 1",
			msgs: []msg{{inputs: []flight.Input{rec(1, "CA101", 0)}, want: []changed{{1, 1, nil}}, counts: [3]int{1, 0, 0}}},
			take: []changed{{1, 1, nil}},
		},
		{
			name: "one bump per flight and message, however many records name it (INV-13)",
			stored: func(t *testing.T) map[int64]*flight.State {
				return map[int64]*flight.State{1: stored(t, 1, "CA101", 0, 4)}
			},
			msgs: []msg{
				{inputs: []flight.Input{cncl(1, 6), cncl(1, 7)}, want: []changed{{1, 5, nil}}, counts: [3]int{0, 1, 0}},
				{inputs: []flight.Input{cncl(1, 8)}, want: []changed{{1, 6, nil}}, counts: [3]int{0, 1, 0}},
			},
			take: []changed{{1, 6, nil}},
		},
		{
			name: "an unchanged flight keeps its version and is counted unchanged",
			stored: func(t *testing.T) map[int64]*flight.State {
				return map[int64]*flight.State{1: stored(t, 1, "CA101", 0, 4)}
			},
			msgs: []msg{{inputs: []flight.Input{rec(1, "CA101", 0)}, counts: [3]int{0, 0, 1}}},
		},
		{
			// History ends at 7, the purge TOMBSTONE took 8: the flight comes back at 9.
			name:   "a re-used FLID continues above its purged history and purge tombstone",
			purged: map[int64]int64{1: 7},
			msgs:   []msg{{inputs: []flight.Input{rec(1, "CA101", 0)}, want: []changed{{1, 9, nil}}, counts: [3]int{1, 0, 0}}},
			take:   []changed{{1, 9, nil}},
		},
		{
			name: "a FLOP for an unknown flight is skipped",
			msgs: []msg{
				{inputs: []flight.Input{cncl(9, 6)}, skips: []flight.Skip{{Err: flight.ErrNoFlight}}},
			},
		},
		{
			name: "a new child makes its stored master recompute its MAFL, bumped once (INV-22b)",
			stored: func(t *testing.T) map[int64]*flight.State {
				return map[int64]*flight.State{10: stored(t, 10, "CA100", 0, 2)}
			},
			msgs: []msg{{inputs: []flight.Input{rec(11, "MU111", 10), rec(12, "MU112", 10)},
				want: []changed{{10, 3, []int64{11, 12}}, {11, 1, nil}, {12, 1, nil}}, counts: [3]int{2, 1, 0}}},
			take: []changed{{10, 3, []int64{11, 12}}, {11, 1, nil}, {12, 1, nil}},
		},
		{
			name: "a child moving masters changes both; a later delete leaves the new master",
			stored: func(t *testing.T) map[int64]*flight.State {
				return map[int64]*flight.State{
					10: stored(t, 10, "CA100", 0, 2), 20: stored(t, 20, "CA200", 0, 5), 11: stored(t, 11, "MU111", 10, 1),
				}
			},
			msgs: []msg{
				{inputs: []flight.Input{rec(11, "MU111", 20)},
					want: []changed{{10, 3, nil}, {11, 2, nil}, {20, 6, []int64{11}}}, counts: [3]int{0, 3, 0}},
				{inputs: []flight.Input{del(11)},
					want: []changed{{11, 3, nil}, {20, 7, nil}}, counts: [3]int{0, 2, 0}},
			},
			take: []changed{{10, 3, nil}, {11, 3, nil}, {20, 7, nil}},
		},
		{
			name: "a created master derives its MAFL from the children stored before it",
			stored: func(t *testing.T) map[int64]*flight.State {
				return map[int64]*flight.State{11: stored(t, 11, "MU111", 10, 1)}
			},
			msgs: []msg{{inputs: []flight.Input{rec(10, "CA100", 0)}, want: []changed{{10, 1, []int64{11}}}, counts: [3]int{1, 0, 0}}},
			take: []changed{{10, 1, []int64{11}}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			l := &storeLoader{states: map[int64]*flight.State{}, purged: tc.purged}
			if tc.stored != nil {
				l.states = tc.stored(t)
			}
			b := flight.NewBatch(l)
			for i, m := range tc.msgs {
				r, err := b.Apply(context.Background(), int64(100+i), m.inputs)
				require.NoError(t, err)
				require.Equal(t, m.want, summary(r), "message %d", i)
				require.Equal(t, m.counts, [3]int{r.Inserted, r.Updated, r.Unchanged}, "message %d", i)
				require.Equal(t, m.skips, r.Skips, "message %d", i)
				for _, c := range r.Changed {
					require.Equal(t, int64(100+i), c.Next.LastMsgID)
				}
			}
			var got []changed
			for _, c := range b.Take() {
				got = append(got, changed{FLID: c.Next.FLID, Version: c.Next.Version})
				for _, m := range c.Next.MAFL {
					got[len(got)-1].MAFL = append(got[len(got)-1].MAFL, m.FLID)
				}
				if st := l.states[c.Next.FLID]; st != nil {
					require.Equal(t, st.Version, c.Old.Version, "Take starts from the stored state")
				} else {
					require.Nil(t, c.Old)
				}
			}
			require.Equal(t, tc.take, got)
			require.Empty(t, b.Take(), "a second Take has nothing left")
			l.unchanged(t)
		})
	}
}

func TestBatchViolationLeavesNoTrace(t *testing.T) {
	t.Parallel()
	l := &storeLoader{states: map[int64]*flight.State{1: stored(t, 1, "CA101", 0, 4)}}
	b := flight.NewBatch(l)
	_, err := b.Apply(context.Background(), 100, []flight.Input{cncl(1, 6)})
	require.NoError(t, err)
	// STND with no value is a violation (see TestApply): the whole message is rejected.
	bad := flight.Input{Op: &sis.FlightOp{FLID: 1, Subtype: "STND"}}
	_, err = b.Apply(context.Background(), 101, []flight.Input{cncl(1, 7), bad})
	var v *flight.Violation
	require.True(t, errors.As(err, &v), "got %v", err)
	r, err := b.Apply(context.Background(), 102, []flight.Input{cncl(1, 8)})
	require.NoError(t, err)
	require.Equal(t, []changed{{1, 6, nil}}, summary(r), "the rejected message took no version")
	take := b.Take()
	require.Len(t, take, 1)
	require.Equal(t, flight.Time(at(8, 0)), take[0].Next.F[flight.CNCL])
}

func TestBatchLoadsEachFlightOnce(t *testing.T) {
	t.Parallel()
	l := &storeLoader{states: map[int64]*flight.State{1: stored(t, 1, "CA101", 0, 4), 2: stored(t, 2, "CA102", 0, 1)}}
	b := flight.NewBatch(l)
	require.NoError(t, b.Preload(context.Background(), []int64{2, 1, 2}))
	for i := range 3 {
		_, err := b.Apply(context.Background(), int64(100+i), []flight.Input{cncl(1, 6+i), cncl(2, 6+i)})
		require.NoError(t, err)
	}
	require.Equal(t, [][]int64{{1, 2}}, l.loads)
}

// INV-22b on purge: the masters of purged ACTIVE children lose them from their MAFL and take
// their next version once; a master purged too, a DELETED child and a flight with no master
// change nothing.
func TestUnlinked(t *testing.T) {
	t.Parallel()
	deleted := stored(t, 4, "CA104", 1, 2)
	deleted.Status = flight.Deleted
	l := &storeLoader{states: map[int64]*flight.State{
		1: stored(t, 1, "CA101", 0, 7), 2: stored(t, 2, "CA102", 1, 1), 3: stored(t, 3, "CA103", 1, 1), 4: deleted,
		5: stored(t, 5, "CA105", 0, 3), 6: stored(t, 6, "CA106", 5, 1), 7: stored(t, 7, "CA107", 0, 1),
	}}
	gone := []*flight.State{l.states[2], l.states[4], l.states[5], l.states[6], l.states[7]}
	out, err := flight.Unlinked(context.Background(), l, gone)
	require.NoError(t, err)
	require.Len(t, out, 1)
	require.Equal(t, int64(1), out[0].Next.FLID)
	require.Equal(t, int64(8), out[0].Next.Version)
	require.Equal(t, int64(1), out[0].Next.LastMsgID, "no message caused it")
	require.Equal(t, []flight.Child{{FLID: 3, FLNO: "CA103"}}, out[0].Next.MAFL)
	require.Equal(t, []flight.Child{{FLID: 2, FLNO: "CA102"}, {FLID: 3, FLNO: "CA103"}}, out[0].Old.MAFL)
	require.Equal(t, [][]int64{{1}}, l.loads, "only the surviving master is loaded")

	out, err = flight.Unlinked(context.Background(), l, []*flight.State{l.states[4]})
	require.NoError(t, err)
	require.Empty(t, out)
}

// TestBatchNamesStaleUnitsWithTheirFlight: a message of several inputs names its stale units
// "FLID unit" in Stale and as StaleUnits; a message of one input names the bare unit, and
// StaleUnits still carries its flight.
func TestBatchNamesStaleUnitsWithTheirFlight(t *testing.T) {
	t.Parallel()
	l := &storeLoader{states: map[int64]*flight.State{1: stored(t, 1, "CA101", 0, 4), 2: stored(t, 2, "CA102", 0, 1)}}
	b := flight.NewBatch(l)
	_, err := b.Apply(context.Background(), 200, []flight.Input{stamped(cncl(2, 10), 200, 10, 22)})
	require.NoError(t, err)

	one, err := b.Apply(context.Background(), 150, []flight.Input{stamped(cncl(2, 9), 150, 9, 11)})
	require.NoError(t, err)
	require.Len(t, one.Stale, 1)
	unit := one.Stale[0]
	require.Equal(t, []flight.StaleUnit{{FLID: 2, Unit: unit}}, one.StaleUnits)

	two, err := b.Apply(context.Background(), 151, []flight.Input{stamped(cncl(1, 9), 151, 9, 12), stamped(cncl(2, 9), 151, 9, 12)})
	require.NoError(t, err)
	require.Equal(t, []string{"2 " + unit}, two.Stale)
	require.Equal(t, []flight.StaleUnit{{FLID: 2, Unit: unit}}, two.StaleUnits)
	require.Equal(t, 1, two.Applied, "flight 1 takes its cancellation")
}

// TestBatchMAFLMatchesChildren applies random messages (records moving flights between masters,
// to dangling and to their own FLID, deletes, cancellations; up to a whole day in one message)
// to a stored day and checks after each that every ACTIVE flight's MAFL is its ACTIVE children
// as the batch's current states have them (INV-21).
func TestBatchMAFLMatchesChildren(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(5, 6))
	const n = 40
	flno := func(id int64) string { return fmt.Sprintf("CA%04d", id) }
	maid := func(id int64) int64 {
		switch rng.IntN(6) {
		case 0:
			return 0
		case 1:
			return id // self-reference: no child
		case 2:
			return 9999 // dangling
		default:
			return 1000 + rng.Int64N(n)
		}
	}
	for round := range 20 {
		l := &storeLoader{states: map[int64]*flight.State{}}
		for i := range int64(n) {
			if id := 1000 + i; rng.IntN(4) > 0 {
				l.states[id] = stored(t, id, flno(id), maid(id), 1)
			}
		}
		ctx := context.Background()
		cur := map[int64]*flight.State{}
		all, err := l.Load(ctx, slices.Collect(maps.Keys(l.states)))
		require.NoError(t, err)
		maps.Copy(cur, all.States)
		bt := flight.NewBatch(l)
		for m := range 30 {
			var inputs []flight.Input
			size := 1 + rng.IntN(4)
			if rng.IntN(10) == 0 {
				size = n
			}
			for range size {
				id := 1000 + rng.Int64N(n)
				switch rng.IntN(5) {
				case 0:
					inputs = append(inputs, del(id))
				case 1:
					inputs = append(inputs, cncl(id, 1+rng.IntN(20)))
				default:
					inputs = append(inputs, rec(id, flno(id), maid(id)))
				}
			}
			r, err := bt.Apply(ctx, int64(2+m), inputs)
			require.NoError(t, err)
			for _, c := range r.Changed {
				cur[c.Next.FLID] = c.Next
			}
			for id, s := range cur {
				if s.Status != flight.Active {
					continue
				}
				var want []flight.Child
				for _, o := range cur {
					if mm, c, ok := flight.ChildOf(o); ok && mm == id {
						want = append(want, c)
					}
				}
				slices.SortFunc(want, func(a, b flight.Child) int { return cmp.Compare(a.FLID, b.FLID) })
				require.Equal(t, want, s.MAFL, "round %d, message %d: MAFL of %d", round, m, id)
			}
		}
	}
}
