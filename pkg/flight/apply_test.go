package flight_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/msgx/msgx/pkg/flight"
	"github.com/msgx/msgx/pkg/sis"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var loc = func() *time.Location {
	l, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		panic(err)
	}
	return l
}()

func at(h, m int) time.Time { return time.Date(2021, 1, 23, h, m, 0, 0, loc) }

func base() *flight.State {
	s := flight.State{FLID: 15, Status: flight.Active, Version: 3, OperationDay: "2021-01-23"}
	s.F[flight.FLNO] = flight.Text("YG9028")
	s.F[flight.SODT] = flight.Time(at(5, 35))
	s.C[flight.PSDT] = []flight.Row{{flight.Int(1), flight.Text("504")}, {flight.Int(2), flight.Text("503")}}
	s.C[flight.DELY] = []flight.Row{{flight.Text("AA"), flight.Null, flight.Int(10)}}
	return &s
}

func op(styp string, p sis.FlightRecord) flight.Input {
	return flight.Input{Op: &sis.FlightOp{FLID: 15, Subtype: styp, Payload: p}}
}

func TestApply(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		cur   *flight.State
		in    flight.Input
		check func(t *testing.T, s flight.State)
		keys  []string // changed
		err   error
		viol  bool
	}{
		{name: "time set", cur: base(), in: op("CNCL", sis.FlightRecord{CNCL: sis.Val(at(6, 0))}),
			check: func(t *testing.T, s flight.State) { require.Equal(t, flight.Time(at(6, 0)), s.F[flight.CNCL]) },
			keys:  []string{"cncl"}},
		{name: "time absent on unset field: no change", cur: base(), in: op("CNCL", sis.FlightRecord{})},
		{name: "free text empty stored empty", cur: base(), in: op("REMC", sis.FlightRecord{REMC: sis.EmptyField[string]()}),
			check: func(t *testing.T, s flight.State) { require.Equal(t, flight.Text(""), s.F[flight.REMC]) },
			keys:  []string{"remc"}},
		{name: "free text absent rejected", cur: base(), in: op("STND", sis.FlightRecord{}), viol: true},
		{name: "ACFT empty rejected", cur: base(), in: op("ACFT", sis.FlightRecord{ACFT: sis.EmptyField[string]()}), viol: true},
		{name: "TAOP partial unlinks", cur: base(), in: op("TAOP", sis.FlightRecord{TAOP: sis.Val("YG"), TAID: sis.Val[int64](16)})},
		{name: "DELY merge by code, minutes", cur: base(),
			in: op("DELY", sis.FlightRecord{DELY: sis.List[sis.Delay]{Present: true, Items: []sis.Delay{{CODE: sis.Val("BB"), DURA: sis.Val(121)}}}}),
			check: func(t *testing.T, s flight.State) {
				require.Equal(t, []flight.Row{{flight.Text("AA"), flight.Null, flight.Int(10)}, {flight.Text("BB"), flight.Null, flight.Int(121)}}, s.C[flight.DELY])
			}, keys: []string{"dely"}},
		{name: "DELY clear all", cur: base(), in: op("DELY", sis.FlightRecord{DELY: sis.List[sis.Delay]{Present: true, ClearAll: true, Items: []sis.Delay{}}}),
			check: func(t *testing.T, s flight.State) { require.Empty(t, s.C[flight.DELY]) }, keys: []string{"dely"}},
		{name: "PSDT replace by seq keeps patches of unchanged rows",
			cur: func() *flight.State {
				s := base()
				s.C[flight.PSDT][0][4] = flight.Time(at(5, 0))
				return s
			}(),
			in: op("PSDT", sis.FlightRecord{PSDT: sis.List[sis.StandAllocation]{Present: true, Items: []sis.StandAllocation{{PSNO: sis.Val(1), PSST: sis.Val("504")}}}}),
			check: func(t *testing.T, s flight.State) {
				require.Equal(t, []flight.Row{{flight.Int(1), flight.Text("504"), flight.Null, flight.Null, flight.Time(at(5, 0))}}, s.C[flight.PSDT])
			}, keys: []string{"psdt"}},
		{name: "replace by seq: duplicate number rejected", cur: base(),
			in: op("GTDT", sis.FlightRecord{GTDT: sis.List[sis.GateAllocation]{Present: true, Items: []sis.GateAllocation{
				{GTNO: sis.Val(1), GATE: sis.Val("G1")}, {GTNO: sis.Val(1), GATE: sis.Val("G2")}}}}), viol: true},
		{name: "TIPT patch, unknown stand noted", cur: base(),
			in: op("TIPT", sis.FlightRecord{TIPT: sis.List[sis.TractorInPlace]{Present: true, Items: []sis.TractorInPlace{
				{TRTM: sis.Val(at(5, 1)), TRST: sis.Val("503")}, {TRTM: sis.Val(at(5, 1)), TRST: sis.Val("999")}}}}),
			check: func(t *testing.T, s flight.State) { require.Equal(t, flight.Time(at(5, 1)), s.C[flight.PSDT][1][4]) },
			keys:  []string{"psdt"}},
		{name: "FLOP for unknown flight", cur: nil, in: op("CNCL", sis.FlightRecord{}), err: flight.ErrNoFlight},
		{name: "FLOP for deleted flight", cur: func() *flight.State { s := base(); s.Status = flight.Deleted; return s }(),
			in: op("CNCL", sis.FlightRecord{CNCL: sis.Val(at(6, 0))}), err: flight.ErrDeleted},
		{name: "FDEL", cur: base(), in: op("FDEL", sis.FlightRecord{}),
			check: func(t *testing.T, s flight.State) { require.Equal(t, flight.Deleted, s.Status) }, keys: []string{"state"}},
		{name: "schedule record keeps uncarried fields, sets operation day",
			cur: func() *flight.State { s := base(); s.F[flight.CNCL] = flight.Time(at(6, 0)); return s }(),
			in:  flight.Input{Record: &sis.FlightRecord{FLID: sis.Val[int64](15), SODT: sis.Val(at(5, 40)), TRML: sis.EmptyField[string]()}},
			check: func(t *testing.T, s flight.State) {
				require.Equal(t, flight.Time(at(6, 0)), s.F[flight.CNCL])
				require.Equal(t, flight.Text(""), s.F[flight.TRML])
				require.Len(t, s.C[flight.PSDT], 2)
			}, keys: []string{"sodt", "trml"}},
		{name: "schedule record: operation day conflict", cur: base(),
			in: flight.Input{Record: &sis.FlightRecord{FLID: sis.Val[int64](15), SODT: sis.Val(at(5, 40).AddDate(0, 0, 1))}}, viol: true},
		{name: "schedule record creates", cur: nil,
			in: flight.Input{Record: &sis.FlightRecord{FLID: sis.Val[int64](15), SODT: sis.Val(time.Date(2021, 1, 23, 23, 59, 0, 0, loc)), FLNO: sis.Val("X1")}},
			check: func(t *testing.T, s flight.State) {
				require.Equal(t, "2021-01-23", s.OperationDay)
				require.Equal(t, flight.Active, s.Status)
			}, keys: []string{"state", "operation_day", "flno", "sodt"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			next, ch, err := flight.Apply(c.cur, c.in)
			if c.viol {
				var v *flight.Violation
				require.True(t, errors.As(err, &v), "%v", err)
				return
			}
			if c.err != nil {
				require.ErrorIs(t, err, c.err)
				return
			}
			require.NoError(t, err)
			var keys []string
			for _, f := range ch.Fields {
				keys = append(keys, f.Name)
			}
			require.ElementsMatch(t, c.keys, keys)
			if c.check != nil {
				c.check(t, next)
			}
			// INV-20: the same input on its own result changes nothing.
			if c.in.Op == nil || c.in.Op.Subtype != "FDEL" {
				if next.Version == 0 {
					next.Version = 1 // the store numbers a created flight
				}
				again, ch2, err := flight.Apply(&next, c.in)
				require.NoError(t, err)
				require.True(t, ch2.Empty(), "%v", ch2.Fields)
				require.Equal(t, next, again)
			}
		})
	}
}

func TestProject(t *testing.T) {
	t.Parallel()
	child := func(flid, maid int64, status string) *flight.State {
		s := &flight.State{FLID: flid, Status: status, Version: 1}
		s.F[flight.MAID] = flight.Int(maid)
		s.F[flight.FLNO] = flight.Text("F" + string(rune('0'+flid%10)))
		return s
	}
	stored := []flight.Child{{FLID: 3, FLNO: "F3"}, {FLID: 1, FLNO: "F1"}}
	got := flight.Project(100, stored, map[int64]*flight.State{
		3:   child(3, 200, flight.Active),  // moved away
		2:   child(2, 100, flight.Active),  // added
		4:   child(4, 100, flight.Deleted), // deleted
		100: child(100, 100, flight.Active),
	})
	require.Equal(t, []flight.Child{{FLID: 1, FLNO: "F1"}, {FLID: 2, FLNO: "F2"}}, got)
	require.ElementsMatch(t, []int64{100, 200}, flight.Masters(child(3, 100, flight.Active), child(3, 200, flight.Active)))
	require.Nil(t, flight.Masters(child(3, 100, flight.Active), child(3, 100, flight.Active)))
	require.Equal(t, []int64{100}, flight.Masters(child(3, 100, flight.Active), child(3, 100, flight.Deleted)))
	require.Nil(t, flight.Masters(nil, child(5, 5, flight.Active)), "self-reference")
}

func TestStateJSON(t *testing.T) {
	t.Parallel()
	s := base()
	b, err := s.MarshalJSON()
	require.NoError(t, err)
	require.Contains(t, string(b), `"sodt":"2021-01-23T05:35:00"`)
	require.Contains(t, string(b), `"psdt":[{"psno":1,"psst":"504","stst":null`)
	require.NotContains(t, string(b), `"null"`)
}

// TestApplyLeavesItsInputAlone: Apply shares the collections and the entry stamps of the state
// it starts from with the state it returns, and copies what it changes. A chain of inputs that
// change rows in place (merges of a known key, VIPF without VIPT, stand patches), replace and
// clear lists and add and drop entry stamps must leave every earlier state as it was.
func TestApplyLeavesItsInputAlone(t *testing.T) {
	t.Parallel()
	vip := func(code string, withServices bool) flight.Input {
		e := sis.VIP{VPCD: sis.Val(code), VFES: sis.Val(2)}
		if withServices {
			e.VIPT = sis.List[sis.VIPService]{Present: true, Items: []sis.VIPService{{VSCD: sis.Val("S1"), VTQY: sis.Val(int64(1))}}}
		}
		return op("VIPF", sis.FlightRecord{VIPF: sis.List[sis.VIP]{Present: true, Items: []sis.VIP{e}}})
	}
	push := op("PSHT", sis.FlightRecord{PSHT: sis.List[sis.Push]{Present: true, Items: []sis.Push{{PUST: sis.Val("504"), PSTM: sis.Val(at(6, 1)), PSHN: sis.Val(3)}}}})
	tractor := op("TIPT", sis.FlightRecord{TIPT: sis.List[sis.TractorInPlace]{Present: true, Items: []sis.TractorInPlace{{TRST: sis.Val("503"), TRTM: sis.Val(at(6, 2))}}}})
	chain := []flight.Input{
		stamped(delays(false, "AA", "BB"), 20, 6, 0), // AA's row changes in place, entry stamps added
		stamped(vip("V1", true), 21, 6, 1),
		stamped(vip("V1", false), 22, 6, 2), // keeps V1's VIPT: a row changed in place
		push, tractor,                       // stand rows patched in place
		stamped(delays(false, "BB"), 23, 6, 3),
		stamped(delays(true, "CC"), 24, 6, 4),  // clear-all: entry stamps dropped
		stamped(delays(false, "DD"), 10, 5, 0), // out of order: stale
		stamped(gates("A1", "A2"), 25, 6, 5),
		stamped(estt(7, 0), 26, 6, 6),
	}
	cur := *base()
	var states, snapshots []flight.State
	for i, in := range chain {
		states, snapshots = append(states, cur), append(snapshots, cur.Clone())
		next, _, err := flight.Apply(&states[len(states)-1], in)
		require.NoError(t, err, "input %d", i)
		for j := range states {
			require.Equal(t, snapshots[j], states[j], "state %d after input %d", j, i)
		}
		cur = next
	}
	require.Equal(t, []string{"CC"}, codes(cur.C[flight.DELY]))
	require.Equal(t, flight.Time(at(6, 1)), cur.C[flight.PSDT][0][5], "the chain's patches reached the last state")
}

// TestTimeValueKeepsTheWallClock: a time value keeps its wall clock (in microseconds) over the
// whole range a SIS date can name, whatever the zone it came in.
func TestTimeValueKeepsTheWallClock(t *testing.T) {
	t.Parallel()
	for _, tc := range []time.Time{
		time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC),
		at(5, 35), // the airport's zone: labelled UTC, clock kept
		time.Date(2026, 3, 29, 2, 30, 15, 123456789, loc),
		time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC),
	} {
		v := flight.Time(tc)
		want := flight.Wall(tc).Truncate(time.Microsecond)
		require.Equal(t, want, v.T(), "%v", tc)
		require.Equal(t, flight.Time(want), v, "the same clock is the same value")
		require.Equal(t, want.Format(flight.TimeLayout), v.T().Format(flight.TimeLayout))
	}
}

// TestRowsEqual: collections sharing their rows are equal; otherwise the rows are compared.
func TestRowsEqual(t *testing.T) {
	t.Parallel()
	rows := base().C[flight.PSDT]
	require.True(t, flight.RowsEqual(rows, rows))
	require.True(t, flight.RowsEqual(nil, []flight.Row{}))
	require.True(t, flight.RowsEqual(rows, slices.Clone(rows)))
	require.False(t, flight.RowsEqual(rows, rows[:1]), "a prefix of the same rows")
	other := slices.Clone(rows)
	other[1][1] = flight.Text("505")
	require.False(t, flight.RowsEqual(rows, other))
}
