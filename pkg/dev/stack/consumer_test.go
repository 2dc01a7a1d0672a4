package stack_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/msgx/msgx/pkg/dev/stack"
	"github.com/msgx/msgx/pkg/dev/verify"
	"github.com/msgx/msgx/pkg/event"
)

// TestFromKgoReadsTheContract: the consumer reads a record's headers through event.Parse; a
// record whose headers do not follow the contract keeps why, and verify.Malformed lists it.
func TestFromKgoReadsTheContract(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 2, 1, 30, 0, 0, time.UTC)
	r := event.Record(event.Claimed{EventID: 11, Target: event.TargetMsg, FLID: "42", Type: event.Tombstone, StateVersion: 3,
		MsgID: 2010, Payload: []byte(`{}`), CreatedAt: at}, 7)
	kr := &kgo.Record{Topic: verify.TopicChanges, Partition: 2, Offset: 5, Key: []byte(r.Key), Value: r.Value}
	for _, h := range r.Headers {
		kr.Headers = append(kr.Headers, kgo.RecordHeader{Key: h.Key, Value: []byte(h.Value)})
	}
	got := stack.FromKgo(kr, at)
	require.Equal(t, stack.Record{Topic: verify.TopicChanges, FLID: "42", MsgID: 2010, StateVersion: 3, EventID: 11,
		EventType: event.Tombstone, Epoch: 7, Partition: 2, Offset: 5, Value: []byte(`{}`), At: at, Headers: r.Headers}, got)
	require.Empty(t, verify.Malformed([]stack.Record{got}))

	kr.Headers = kr.Headers[1:] // schema_version gone
	got = stack.FromKgo(kr, at)
	require.Contains(t, got.Malformed, "record header schema_version: missing")
	require.Zero(t, got.StateVersion, "a record that does not parse carries no header fields")
	require.Equal(t, []string{verify.TopicChanges + "/2@5: " + got.Malformed}, verify.Malformed([]stack.Record{got}))
}
