package event_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/event"
)

// The payload bytes are the consumer contract (docs/events.md): these tests pin them.

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

// AppendJSONString writes what encoding/json.Marshal writes: every byte alone and inside text,
// the characters Marshal escapes, U+2028, invalid UTF-8 and the empty string.
func TestAppendJSONStringMatchesMarshal(t *testing.T) {
	t.Parallel()
	in := []string{"", "FLOP", "ESTT", "child_purged", "a<b>c&d", "\u2028\u2029", "é", "\xff", "x\"y\\z", "tab\there"}
	for c := range 256 {
		in = append(in, string([]byte{byte(c)}), "AB"+string([]byte{byte(c)})+"CD")
	}
	for _, s := range in {
		want, err := json.Marshal(s)
		require.NoError(t, err)
		require.Equal(t, "["+string(want), string(event.AppendJSONString([]byte("["), s)), "%q", s)
	}
}

// BenchmarkLatest keeps the newest state per flight of a processor batch's events: 1,000
// changes over 400 flights (half of a default batch), each a KAFKA:msg and a KAFKA:schd event.
func BenchmarkLatest(b *testing.B) {
	var evs []event.Event
	for i := range 1000 {
		flid, v := int64(1000+i%400), int64(2+i/400)
		evs = append(evs, event.Event{Target: event.TargetMsg, FLID: flid, Type: event.Upsert, StateVersion: v, MsgID: int64(i + 1), Payload: []byte(`{}`)},
			event.Event{Target: event.TargetSchd, FLID: flid, Type: event.Upsert, StateVersion: v, MsgID: int64(i + 1), Payload: []byte(`{}`)})
	}
	b.ReportAllocs()
	for b.Loop() {
		if n := len(event.Latest(evs)); n != 1400 {
			b.Fatal(n)
		}
	}
}
