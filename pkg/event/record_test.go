package event_test

import (
	"errors"
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

// TestParseIsRecordsInverse: a record read back gives the claimed event and the epoch it was
// built from, for both targets and both event types, with and without a message behind it (a
// KAFKA:schd TOMBSTONE carries no value, so its event has none; the target is the topic's).
func TestParseIsRecordsInverse(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 2, 1, 30, 0, 123456789, time.UTC)
	for _, target := range event.Targets {
		for _, typ := range []string{event.Upsert, event.Tombstone} {
			for _, msgID := range []int64{2010, 0} {
				c := event.Claimed{EventID: 1<<40 + 11, Target: target, FLID: "20261202001234", Type: typ, StateVersion: 3,
					MsgID: msgID, Payload: []byte(`{"flid":20261202001234}`), CreatedAt: at}
				if target == event.TargetSchd && typ == event.Tombstone {
					c.Payload = nil
				}
				r := event.Record(c, 7)
				got, err := event.Parse(r.Key, r.Value, r.Headers)
				require.NoError(t, err, "%s %s msg_id %d", target, typ, msgID)
				got.Target = target
				require.Equal(t, event.Received{Claimed: c, Epoch: 7}, got, "%s %s msg_id %d", target, typ, msgID)
			}
		}
	}
}

// kafkaHeader has the shape of kafka.Header: Parse reads the adapter's headers as they are.
type kafkaHeader struct {
	Key   string
	Value string
}

// TestParseRejectsEachBadHeader: each header missing, repeated or with a value outside the
// contract is named in a *HeaderError; other headers are ignored.
func TestParseRejectsEachBadHeader(t *testing.T) {
	t.Parallel()
	good := event.Record(event.Claimed{EventID: 11, Target: event.TargetMsg, FLID: "42", Type: event.Upsert, StateVersion: 3,
		MsgID: 2010, Payload: []byte(`{}`), CreatedAt: time.Date(2026, 12, 2, 1, 30, 0, 0, time.UTC)}, 7)
	with := func(name, value string) []kafkaHeader { // good's headers, name's value replaced ("-": removed)
		var out []kafkaHeader
		for _, h := range good.Headers {
			switch {
			case h.Key != name:
				out = append(out, kafkaHeader(h))
			case value != "-":
				out = append(out, kafkaHeader{Key: name, Value: value})
			}
		}
		return out
	}
	ok, err := event.Parse("42", good.Value, append(with("", ""), kafkaHeader{Key: "trace_id", Value: "x"}))
	require.NoError(t, err, "an unknown header is ignored")
	require.Equal(t, int64(2010), ok.MsgID)
	noMsg, err := event.Parse("42", good.Value, with(event.HeaderMsgID, "-"))
	require.NoError(t, err, "msg_id is optional")
	require.Zero(t, noMsg.MsgID)

	for _, tc := range []struct {
		header, value string // value "-": the header is missing
	}{
		{event.HeaderSchemaVersion, "-"}, {event.HeaderSchemaVersion, "2"}, {event.HeaderSchemaVersion, ""},
		{event.HeaderEventTime, "-"}, {event.HeaderEventTime, "2026-12-02 01:30:00"}, {event.HeaderEventTime, ""},
		{event.HeaderEventID, "-"}, {event.HeaderEventID, "x"}, {event.HeaderEventID, "0"}, {event.HeaderEventID, "-5"}, {event.HeaderEventID, "99999999999999999999"},
		{event.HeaderFLID, "-"}, {event.HeaderFLID, "43"}, {event.HeaderFLID, "CA1234"}, {event.HeaderFLID, ""},
		{event.HeaderStateVersion, "-"}, {event.HeaderStateVersion, "3.0"}, {event.HeaderStateVersion, "0"}, {event.HeaderStateVersion, " 3"},
		{event.HeaderEpoch, "-"}, {event.HeaderEpoch, "seven"}, {event.HeaderEpoch, "0"},
		{event.HeaderEventType, "-"}, {event.HeaderEventType, "upsert"}, {event.HeaderEventType, "DELETE"},
		{event.HeaderMsgID, "0"}, {event.HeaderMsgID, "x"}, {event.HeaderMsgID, ""},
	} {
		_, err := event.Parse("42", good.Value, with(tc.header, tc.value))
		var he *event.HeaderError
		require.ErrorAs(t, err, &he, "%s=%q", tc.header, tc.value)
		require.Equal(t, tc.header, he.Header, "%s=%q: %v", tc.header, tc.value, err)
		require.Equal(t, tc.value == "-", he.Missing, "%s=%q: %v", tc.header, tc.value, err)
		require.ErrorContains(t, err, tc.header)
		require.Equal(t, tc.header == event.HeaderSchemaVersion && tc.value != "-", errors.Is(err, event.ErrSchemaVersion), "%s=%q", tc.header, tc.value)
	}

	// A repeated header, even with the same value, is not guessed between.
	_, err = event.Parse("42", good.Value, append(with("", ""), kafkaHeader{Key: event.HeaderStateVersion, Value: "3"}))
	var he *event.HeaderError
	require.ErrorAs(t, err, &he)
	require.Equal(t, event.HeaderStateVersion, he.Header)

	// A record that is not msgx's names every header it lacks.
	_, err = event.Parse[kafkaHeader]("42", nil, nil)
	for _, h := range []string{event.HeaderSchemaVersion, event.HeaderEventTime, event.HeaderEventID, event.HeaderFLID,
		event.HeaderStateVersion, event.HeaderEpoch, event.HeaderEventType} {
		require.ErrorContains(t, err, "record header "+h+": missing")
	}
	require.NotContains(t, err.Error(), event.HeaderMsgID)
}
