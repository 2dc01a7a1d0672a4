package flight_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/flight"
	"github.com/msgx/msgx/pkg/sis"
)

// stamped returns in with the stamp of message id created at h:m.
func stamped(in flight.Input, id int64, h, m int) flight.Input {
	in.At = flight.StampOf(id, at(h, m))
	return in
}

func apply(t *testing.T, s flight.State, in flight.Input) (flight.State, flight.Changes) {
	t.Helper()
	next, ch, err := flight.Apply(&s, in)
	require.NoError(t, err)
	return next, ch
}

func estt(h, m int) flight.Input { return op("ESTT", sis.FlightRecord{ESTT: sis.Val(at(h, m))}) }

func delays(clear bool, codes ...string) flight.Input {
	var items []sis.Delay
	for _, c := range codes {
		items = append(items, sis.Delay{CODE: sis.Val(c), DURA: sis.Val(5)})
	}
	return op("DELY", sis.FlightRecord{DELY: sis.List[sis.Delay]{Present: true, ClearAll: clear, Items: items}})
}

func gates(gs ...string) flight.Input {
	var items []sis.GateAllocation
	for i, g := range gs {
		items = append(items, sis.GateAllocation{GTNO: sis.Val(i + 1), GATE: sis.Val(g)})
	}
	return op("GTDT", sis.FlightRecord{GTDT: sis.List[sis.GateAllocation]{Present: true, Items: items}})
}

func codes(rows []flight.Row) []string {
	var out []string
	for _, r := range rows {
		out = append(out, r[0].S)
	}
	return out
}

// TestLateRowNeverRegresses is INV-24b on one flight: the reproduction (an ESTT sent at
// 09:11 reaching the head after one sent at 10:22) and the partial, collection and lifecycle cases.
func TestLateRowNeverRegresses(t *testing.T) {
	t.Parallel()
	s := *base()

	t.Run("late estimate after a newer one is stale as a whole", func(t *testing.T) {
		cur, _ := apply(t, s, stamped(estt(10, 40), 200, 10, 22))   // sent 10:22, msg 200
		next, ch := apply(t, cur, stamped(estt(9, 30), 150, 9, 11)) // sent 09:11, committed late: msg 150
		require.Equal(t, flight.Time(at(10, 40)), next.F[flight.ESTT])
		require.Empty(t, ch.Fields)
		require.Equal(t, []string{"estt"}, ch.Stale)
		require.Zero(t, ch.Written)
		require.Equal(t, flight.StampOf(200, at(10, 22)), next.P.F[flight.ESTT], "the newer stamp stays")
	})

	t.Run("a late message with nothing newer applies and is stamped", func(t *testing.T) {
		cur, _ := apply(t, s, stamped(estt(10, 40), 200, 10, 22))
		next, ch := apply(t, cur, stamped(op("CNCL", sis.FlightRecord{CNCL: sis.Val(at(9, 0))}), 150, 9, 11))
		require.Equal(t, flight.Time(at(9, 0)), next.F[flight.CNCL])
		require.Empty(t, ch.Stale)
		require.Equal(t, flight.StampOf(150, at(9, 11)), next.P.F[flight.CNCL])
	})

	t.Run("mailbox order wins over an AODB clock step backwards", func(t *testing.T) {
		cur, _ := apply(t, s, stamped(estt(10, 40), 200, 10, 22))
		next, ch := apply(t, cur, stamped(estt(11, 0), 201, 9, 0)) // later id, earlier DTTM
		require.Equal(t, flight.Time(at(11, 0)), next.F[flight.ESTT])
		require.Empty(t, ch.Stale)
	})

	t.Run("a late message created after the stamp's message applies", func(t *testing.T) {
		cur, _ := apply(t, s, stamped(estt(10, 40), 200, 9, 0))
		next, ch := apply(t, cur, stamped(estt(11, 0), 150, 9, 30))
		require.Equal(t, flight.Time(at(11, 0)), next.F[flight.ESTT])
		require.Empty(t, ch.Stale)
	})

	t.Run("a re-confirmed value counts as set", func(t *testing.T) {
		cur, _ := apply(t, s, stamped(estt(10, 40), 100, 8, 0))
		cur, ch := apply(t, cur, stamped(estt(10, 40), 200, 10, 22)) // same value: no change, new stamp
		require.Empty(t, ch.Fields)
		require.Equal(t, 1, ch.Written)
		next, ch := apply(t, cur, stamped(estt(9, 30), 150, 9, 11))
		require.Equal(t, flight.Time(at(10, 40)), next.F[flight.ESTT])
		require.Equal(t, []string{"estt"}, ch.Stale)
	})

	t.Run("partly stale compound: only the fresh part is written", func(t *testing.T) {
		cur, _ := apply(t, s, stamped(op("TAOP", sis.FlightRecord{TAOP: sis.Val("YG"), TAFL: sis.Val("1"), TAID: sis.Val[int64](16)}), 100, 8, 0))
		rec := sis.FlightRecord{FLID: sis.Val[int64](15), SODT: sis.Val(at(5, 35)), TAID: sis.Val[int64](17), ACFT: sis.Val("A320")}
		next, ch := apply(t, cur, stamped(flight.Input{Record: &rec}, 90, 7, 0))
		require.Equal(t, flight.Int(16), next.F[flight.TAID])
		require.Equal(t, flight.Text("A320"), next.F[flight.ACFT])
		require.Equal(t, []string{"taid"}, ch.Stale)
		require.Positive(t, ch.Written)
		require.Equal(t, []string{"acft"}, names(ch))
	})

	t.Run("merge by key: newer entries and a newer clear-all win", func(t *testing.T) {
		cur, _ := apply(t, s, stamped(delays(false, "BB"), 200, 10, 22))
		next, ch := apply(t, cur, stamped(delays(false, "BB", "CC"), 150, 9, 11))
		require.Equal(t, []string{"AA", "BB", "CC"}, codes(next.C[flight.DELY]))
		require.Equal(t, flight.Int(5), next.C[flight.DELY][1][2])
		require.Equal(t, []string{"dely/BB"}, ch.Stale)

		// A late clear-all keeps the newer entry and removes the older one.
		next, ch = apply(t, cur, stamped(delays(true), 150, 9, 11))
		require.Equal(t, []string{"BB"}, codes(next.C[flight.DELY]))
		require.Equal(t, []string{"dely/BB"}, ch.Stale)

		// After a newer clear-all nothing older comes back.
		cleared, _ := apply(t, s, stamped(delays(true), 200, 10, 22))
		next, ch = apply(t, cleared, stamped(delays(false, "CC"), 150, 9, 11))
		require.Empty(t, next.C[flight.DELY])
		require.Equal(t, []string{"dely/CC"}, ch.Stale)
		require.Zero(t, ch.Written)
	})

	t.Run("replace by sequence: a newer complete list wins, newer patches stay", func(t *testing.T) {
		cur, _ := apply(t, s, stamped(gates("G1"), 200, 10, 22))
		next, ch := apply(t, cur, stamped(gates("G7", "G8"), 150, 9, 11))
		require.Equal(t, cur.C[flight.GTDT], next.C[flight.GTDT])
		require.Equal(t, []string{"gtdt"}, ch.Stale)

		push := op("PSHT", sis.FlightRecord{PSHT: sis.List[sis.Push]{Present: true, Items: []sis.Push{{PUST: sis.Val("503"), PSID: sis.Val("P1")}}}})
		patched, _ := apply(t, s, stamped(push, 200, 10, 22))
		stands := op("PSDT", sis.FlightRecord{PSDT: sis.List[sis.StandAllocation]{Present: true, Items: []sis.StandAllocation{
			{PSNO: sis.Val(1), PSST: sis.Val("601")}, {PSNO: sis.Val(2), PSST: sis.Val("602")}}}})
		next, ch = apply(t, patched, stamped(stands, 150, 9, 11))
		require.Equal(t, flight.Text("601"), next.C[flight.PSDT][0][1])
		require.Equal(t, patched.C[flight.PSDT][1], next.C[flight.PSDT][1], "the newer patched row stays")
		require.Equal(t, []string{"psdt/2"}, ch.Stale)
	})

	t.Run("lifecycle: a late schedule record does not bring back a newer delete", func(t *testing.T) {
		del, _ := apply(t, s, stamped(op("FDEL", sis.FlightRecord{}), 200, 10, 22))
		rec := sis.FlightRecord{FLID: sis.Val[int64](15), SODT: sis.Val(at(5, 35)), ACFT: sis.Val("A320")}
		next, ch := apply(t, del, stamped(flight.Input{Record: &rec}, 150, 9, 11))
		require.Equal(t, flight.Deleted, next.Status)
		require.Empty(t, ch.Fields)
		require.Equal(t, []string{"state"}, ch.Stale)
	})
}

func names(ch flight.Changes) []string {
	var out []string
	for _, f := range ch.Fields {
		out = append(out, f.Name)
	}
	return out
}

// TestProvRoundTrip: the stored form decodes to the same provenance.
func TestProvRoundTrip(t *testing.T) {
	t.Parallel()
	s := *base()
	s, _ = apply(t, s, stamped(estt(10, 40), 200, 10, 22))
	s, _ = apply(t, s, stamped(delays(false, "BB"), 201, 10, 23))
	s, _ = apply(t, s, stamped(gates("G1"), 202, 10, 24))
	s, _ = apply(t, s, stamped(op("PSHT", sis.FlightRecord{PSHT: sis.List[sis.Push]{Present: true, Items: []sis.Push{{PUST: sis.Val("503")}}}}), 203, 10, 25))
	text := flight.MarshalProv(&s.P)
	p, err := flight.UnmarshalProv(string(text))
	require.NoError(t, err)
	require.True(t, p.Equal(&s.P), "%s", text)
	require.JSONEq(t, `[[1611397320,200,"estt"],[1611397380,201,"dely/BB"],[1611397440,202,"gtdt"],[1611397500,203,"psdt/2"]]`, string(text))
	empty, err := flight.UnmarshalProv("")
	require.NoError(t, err)
	require.True(t, empty.Equal(&flight.Prov{}))
	_, err = flight.UnmarshalProv(`[[1,2,"nope"]]`)
	require.Error(t, err)
}

// TestForcedReplayOverwritesNewer is INV-24b: an operator's forced replay of an older message
// writes what later-created messages set (a field, an entry, a complete list) and stamps it; the
// units it overwrites are the ones its unforced apply names stale, each with its setter (Prov.Of).
func TestForcedReplayOverwritesNewer(t *testing.T) {
	t.Parallel()
	s := *base()
	cur, _ := apply(t, s, stamped(estt(10, 40), 200, 10, 22))
	cur, _ = apply(t, cur, stamped(delays(false, "BB"), 201, 10, 23))
	cur, _ = apply(t, cur, stamped(gates("G1"), 202, 10, 24))
	for _, in := range []flight.Input{estt(9, 30), delays(true), gates("G7", "G8")} {
		_, ch := apply(t, cur, stamped(in, 150, 9, 11))
		require.Len(t, ch.Stale, 1)
		setter := cur.P.Of(ch.Stale[0])
		require.Greater(t, setter.MsgID, int64(150), "%s: set by a later message", ch.Stale[0])

		in = stamped(in, 150, 9, 11)
		in.Force = true
		next, ch := apply(t, cur, in)
		require.Empty(t, ch.Stale, "forced: nothing is stale")
		require.Positive(t, ch.Written)
		require.NotEmpty(t, ch.Fields, "forced: the older value is written")
		require.Equal(t, flight.StampOf(150, at(9, 11)), next.P.Of(names(ch)[0]), "and stamped with the forced message")
	}
	require.Equal(t, flight.Stamp{}, cur.P.Of("no-such-unit"))
	require.Equal(t, cur.P.W[flight.DELY], cur.P.Of("dely/AA"), "an entry not merged since its list: the list's stamp")
}
