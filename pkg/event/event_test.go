package event_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/event"
	"github.com/msgx/msgx/pkg/flight"
)

// The payload bytes are the consumer contract (docs/events.md): these tests pin them.

func TestChangedPayloads(t *testing.T) {
	t.Parallel()
	next := &flight.State{FLID: 7, Status: flight.Active, Version: 1, OperationDay: "2021-01-23"}
	next.F[flight.FLNO] = flight.Text("CA101")
	evs := event.Changed(nil, event.Source{MsgID: 42, Type: "SCHD", Styp: "DNLD"}, nil, next)
	require.Len(t, evs, 2)
	require.Equal(t, event.Event{Target: event.TargetMsg, FLID: 7, Type: event.Upsert, StateVersion: 1, MsgID: 42, Payload: evs[0].Payload}, evs[0])
	require.Equal(t, `{"flid":7,"msg_id":42,"type":"SCHD","styp":"DNLD","state_version":1,"event":"UPSERT","changed":{"state":{"old":null,"new":"ACTIVE"},"operation_day":{"old":null,"new":"2021-01-23"},"flno":{"old":null,"new":"CA101"}}}`,
		string(evs[0].Payload))
	require.Equal(t, event.TargetSchd, evs[1].Target)
	require.Equal(t, string(next.AppendJSON(nil)), string(evs[1].Payload), "KAFKA:schd carries the full state")

	del := next.Clone()
	del.Status, del.Version = flight.Deleted, 2
	evs = event.Changed(nil, event.Source{MsgID: 43, Type: "FLOP", Styp: "FDEL"}, next, &del)
	require.Equal(t, `{"flid":7,"msg_id":43,"type":"FLOP","styp":"FDEL","state_version":2,"event":"TOMBSTONE","changed":{"state":{"old":"ACTIVE","new":"DELETED"}}}`,
		string(evs[0].Payload))
	require.Equal(t, event.Event{Target: event.TargetSchd, FLID: 7, Type: event.Tombstone, StateVersion: 2, MsgID: 43}, evs[1], "a deleted flight's state is a null tombstone")
}

func TestPurgedPayloads(t *testing.T) {
	t.Parallel()
	evs := event.Purged(nil, 7, 9)
	require.Equal(t, []event.Event{
		{Target: event.TargetMsg, FLID: 7, Type: event.Tombstone, StateVersion: 9,
			Payload: []byte(`{"flid":7,"event":"TOMBSTONE","reason":"purged","state_version":9}`)},
		{Target: event.TargetSchd, FLID: 7, Type: event.Tombstone, StateVersion: 9},
	}, evs)
}

func TestValidate(t *testing.T) {
	t.Parallel()
	ok := event.Event{Target: event.TargetMsg, FLID: 1, Type: event.Upsert, StateVersion: 1, Payload: []byte(`{}`)}
	require.NoError(t, ok.Validate())
	for name, e := range map[string]event.Event{
		"target":  {Target: "KAFKA:x", FLID: 1, Type: event.Upsert, StateVersion: 1, Payload: []byte(`{}`)},
		"type":    {Target: event.TargetMsg, FLID: 1, Type: "X", StateVersion: 1, Payload: []byte(`{}`)},
		"version": {Target: event.TargetMsg, FLID: 1, Type: event.Upsert, Payload: []byte(`{}`)},
		"payload": {Target: event.TargetMsg, FLID: 1, Type: event.Upsert, StateVersion: 1},
	} {
		require.Error(t, e.Validate(), name)
	}
}
