package change_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/event"
	"github.com/msgx/msgx/pkg/event/change"
	"github.com/msgx/msgx/pkg/flight"
)

// The payload bytes are the consumer contract (docs/events.md): these tests pin them.

func TestChangedPayloads(t *testing.T) {
	t.Parallel()
	next := &flight.State{FLID: 7, Status: flight.Active, Version: 1, OperationDay: "2021-01-23"}
	next.F[flight.FLNO] = flight.Text("CA101")
	evs := change.Append(nil, nil, event.Source{MsgID: 42, Type: "SCHD", Styp: "DNLD"}, nil, next)
	require.Len(t, evs, 2)
	require.Equal(t, event.Event{Target: event.TargetMsg, FLID: 7, Type: event.Upsert, StateVersion: 1, MsgID: 42, Payload: evs[0].Payload}, evs[0])
	require.Equal(t, `{"flid":7,"msg_id":42,"type":"SCHD","styp":"DNLD","state_version":1,"event":"UPSERT","changed":{"state":{"old":null,"new":"ACTIVE"},"operation_day":{"old":null,"new":"2021-01-23"},"flno":{"old":null,"new":"CA101"}}}`,
		string(evs[0].Payload))
	require.Equal(t, event.TargetSchd, evs[1].Target)
	evs = event.Latest(evs)
	require.Equal(t, string(next.AppendJSON(nil)), string(evs[1].AppendBody(nil)), "KAFKA:schd carries the full state")

	del := next.Clone()
	del.Status, del.Version = flight.Deleted, 2
	evs = change.Append(nil, nil, event.Source{MsgID: 43, Type: "FLOP", Styp: "FDEL"}, next, &del)
	require.Equal(t, `{"flid":7,"msg_id":43,"type":"FLOP","styp":"FDEL","state_version":2,"event":"TOMBSTONE","changed":{"state":{"old":"ACTIVE","new":"DELETED"}}}`,
		string(evs[0].Payload))
	require.Equal(t, event.Event{Target: event.TargetSchd, FLID: 7, Type: event.Tombstone, StateVersion: 2, MsgID: 43}, evs[1], "a deleted flight's state is a null tombstone")
}

// twoFlights: flight 7 at version 1 and at version 2 (a stand set), flight 8 at version 1.
func twoFlights() (v1 *flight.State, v2 flight.State, other *flight.State) {
	v1 = &flight.State{FLID: 7, Status: flight.Active, Version: 1, OperationDay: "2021-01-23"}
	v2 = v1.Clone()
	v2.Version, v2.F[flight.STND] = 2, flight.Text("215")
	other = &flight.State{FLID: 8, Status: flight.Active, Version: 1, OperationDay: "2021-01-23"}
	return v1, v2, other
}

// TestLatestKeepsTheNewestStatePerFlight: of one transaction's KAFKA:schd events only the newest
// of each flight is written (the state topic carries the latest state); every change stays.
func TestLatestKeepsTheNewestStatePerFlight(t *testing.T) {
	t.Parallel()
	v1, v2, other := twoFlights()
	v3 := v2.Clone()
	v3.Status, v3.Version = flight.Deleted, 3
	src := event.Source{MsgID: 1, Type: "FLOP", Styp: "STND"}
	evs := change.Append(nil, nil, src, nil, v1)
	evs = change.Append(evs, nil, src, nil, other)
	evs = change.Append(evs, nil, src, v1, &v2)

	got := event.Latest(evs)
	require.Len(t, got, 5, "three changes, two flights' states")
	for i, want := range []struct {
		target  string
		flid, v int64
	}{{event.TargetMsg, 7, 1}, {event.TargetMsg, 8, 1}, {event.TargetSchd, 8, 1}, {event.TargetMsg, 7, 2}, {event.TargetSchd, 7, 2}} {
		require.Equal(t, want.target, got[i].Target, "event %d", i)
		require.Equal(t, want.flid, got[i].FLID, "event %d", i)
		require.Equal(t, want.v, got[i].StateVersion, "event %d", i)
	}
	require.Equal(t, string(v2.AppendJSON(nil)), string(got[4].AppendBody(nil)))
	require.Equal(t, string(other.AppendJSON(nil)), string(got[2].AppendBody(nil)))
	require.Equal(t, string(got[3].Payload), string(got[3].AppendBody([]byte("x"))[1:]), "a change's body is its payload")

	// A deletion after the change: the newest state is the tombstone (a null value).
	got = event.Latest(change.Append(evs, nil, src, &v2, &v3))
	last := got[len(got)-1]
	require.Equal(t, event.Event{Target: event.TargetSchd, FLID: 7, Type: event.Tombstone, StateVersion: 3, MsgID: 1}, last)
	for _, e := range got[:len(got)-1] {
		require.False(t, e.Target == event.TargetSchd && e.FLID == 7, "an older state of flight 7 was kept")
	}
}

// TestLogKeepsOneStatePerFlight: a Log gives what Latest gives of the same changes, and the
// KAFKA:schd events it superseded hold no state any more (nothing to render: nothing kept).
func TestLogKeepsOneStatePerFlight(t *testing.T) {
	t.Parallel()
	v1, v2, other := twoFlights()
	v3 := v2.Clone()
	v3.Version, v3.F[flight.STND] = 3, flight.Text("216")
	src := event.Source{MsgID: 1, Type: "FLOP", Styp: "STND"}

	gone := other.Clone()
	gone.Version, gone.Status = other.Version+1, flight.Deleted

	shanghai, err := time.LoadLocation("Asia/Shanghai")
	require.NoError(t, err)
	for _, loc := range []*time.Location{nil, shanghai} {
		var plain []event.Event
		log := change.Log{Loc: loc}
		for _, c := range []struct{ old, next *flight.State }{{nil, v1}, {nil, other}, {v1, &v2}, {&v2, &v3}, {other, &gone}} {
			plain = change.Append(plain, loc, src, c.old, c.next)
			log.Changed(src, c.old, c.next)
		}
		require.Len(t, log.Events, 10)
		for _, i := range []int{1, 5} { // flight 7's states 1 and 2
			require.Equal(t, event.TargetSchd, log.Events[i].Target)
			require.NotEmpty(t, plain[i].AppendBody(nil))
			require.Empty(t, log.Events[i].AppendBody(nil), "event %d: a superseded state is let go", i)
		}
		got, want := event.Latest(log.Take()), event.Latest(plain)
		require.Equal(t, len(want), len(got))
		for i := range want {
			require.Equal(t, want[i].Target, got[i].Target)
			require.Equal(t, want[i].Type, got[i].Type)
			require.Equal(t, want[i].MsgID, got[i].MsgID)
			require.Equal(t, want[i].FLID, got[i].FLID)
			require.Equal(t, want[i].StateVersion, got[i].StateVersion)
			require.Equal(t, string(want[i].AppendBody(nil)), string(got[i].AppendBody(nil)), "event %d", i)
		}
		require.Empty(t, log.Events, "Take empties the log")
	}
}

// TestChangedPayloadsCarryInstants: in a zone, a changed time has the instants of its old and
// new wall times beside them, a changed collection's rows their columns' instants, and the
// state its fields'.
func TestChangedPayloadsCarryInstants(t *testing.T) {
	t.Parallel()
	berlin, err := time.LoadLocation("Europe/Berlin")
	require.NoError(t, err)
	old := &flight.State{FLID: 7, Status: flight.Active, Version: 1, OperationDay: "2026-03-29"}
	old.F[flight.ESTT] = flight.Time(time.Date(2026, 3, 29, 1, 40, 0, 0, time.UTC))
	next := old.Clone()
	next.Version = 2
	next.F[flight.ESTT] = flight.Time(time.Date(2026, 3, 29, 3, 10, 0, 0, time.UTC))
	next.C[flight.GTDT] = []flight.Row{{flight.Int(1), flight.Text("B14"), flight.Time(time.Date(2026, 3, 29, 2, 30, 0, 0, time.UTC))}}
	evs := change.Append(nil, berlin, event.Source{MsgID: 44, Type: "FLOP", Styp: "ESTT"}, old, &next)
	require.Equal(t, `{"flid":7,"msg_id":44,"type":"FLOP","styp":"ESTT","state_version":2,"event":"UPSERT","changed":{`+
		`"estt":{"old":"2026-03-29T01:40:00","new":"2026-03-29T03:10:00","old_instant":"2026-03-29T01:40:00+01:00","new_instant":"2026-03-29T03:10:00+02:00"},`+
		`"gtdt":{"old":[],"new":[{"gtno":1,"gate":"B14","pgot":"2026-03-29T02:30:00","pgot_instant":null,"pgct":null,"pgct_instant":null,`+
		`"gotm":null,"gotm_instant":null,"gctm":null,"gctm_instant":null,"gtyp":null}]}}}`, string(evs[0].Payload),
		"02:30 does not exist in Berlin that night")
	require.Equal(t, string(next.AppendJSONIn(nil, berlin)), string(evs[1].AppendBody(nil)), "KAFKA:schd carries the state with its instants")
}
