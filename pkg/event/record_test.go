package event_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/event"
)

// TestRecordHeaders: every record carries the headers of docs/events.md, in this order, and
// msg_id only when a message caused the event; the key is the FLID.
func TestRecordHeaders(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 2, 9, 30, 0, 123456789, time.FixedZone("CST", 8*3600))
	c := event.Claimed{EventID: 11, Target: event.TargetMsg, FLID: "42", Type: event.Upsert, StateVersion: 3,
		MsgID: 2010, Payload: []byte(`{"flid":42}`), CreatedAt: at}
	r := event.Record(c, 7)
	require.Equal(t, "42", r.Key)
	require.Equal(t, []event.Header{
		{Key: "schema_version", Value: "1"},
		{Key: "event_time", Value: "2026-12-02T01:30:00.123456789Z"},
		{Key: "event_id", Value: "11"},
		{Key: "flid", Value: "42"},
		{Key: "state_version", Value: "3"},
		{Key: "epoch", Value: "7"},
		{Key: "event_type", Value: "UPSERT"},
		{Key: "msg_id", Value: "2010"},
	}, r.Headers)
	require.Equal(t, event.SchemaVersion, r.Headers[0].Value)

	c.MsgID = 0 // a purge: no message behind it
	for _, h := range event.Record(c, 7).Headers {
		require.NotEqual(t, "msg_id", h.Key)
	}
}

// TestRecordValue: a record carries a value only for an UPSERT or a KAFKA:msg event; a
// KAFKA:schd TOMBSTONE is a null value (it deletes the FLID from the compacted topic).
func TestRecordValue(t *testing.T) {
	t.Parallel()
	payload := []byte(`{"flid":9}`)
	for _, tc := range []struct {
		target, typ string
		payload     []byte
		want        []byte
	}{
		{event.TargetMsg, event.Upsert, payload, payload},
		{event.TargetMsg, event.Tombstone, payload, payload},
		{event.TargetSchd, event.Upsert, payload, payload},
		{event.TargetSchd, event.Tombstone, payload, nil},
		{event.TargetSchd, event.Tombstone, nil, nil},
		{event.TargetMsg, event.Upsert, nil, nil},
	} {
		r := event.Record(event.Claimed{EventID: 1, Target: tc.target, FLID: "9", Type: tc.typ, StateVersion: 1, Payload: tc.payload}, 1)
		require.Equal(t, tc.want, r.Value, "%s %s payload %v", tc.target, tc.typ, tc.payload != nil)
	}
}
