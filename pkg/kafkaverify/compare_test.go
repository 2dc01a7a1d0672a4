package kafkaverify_test

import (
	"crypto/sha256"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/event"
	"github.com/msgx/msgx/pkg/flight"
	"github.com/msgx/msgx/pkg/kafka"
	"github.com/msgx/msgx/pkg/kafkaverify"
	"github.com/msgx/msgx/pkg/outbox"
)

const changes, state = "msgx.flight.changes", "msgx.flight.state"

// rec is a record as the dispatcher writes it (event.Record): key, value and headers.
func rec(topic string, offset int64, flid string, version, eventID, epoch int64, value []byte) kafka.ConsumedRecord {
	c := event.Claimed{EventID: eventID, Target: event.TargetMsg, FLID: flid, Type: event.Upsert, StateVersion: version,
		Payload: value, CreatedAt: time.Date(2021, 1, 23, 0, 10, 0, 0, time.UTC)}
	if topic == state {
		c.Target = event.TargetSchd
	}
	if value == nil {
		c.Type = event.Tombstone
	}
	r := event.Record(c, epoch)
	out := kafka.ConsumedRecord{Topic: topic, Partition: 0, Offset: offset, Key: r.Key, Value: r.Value}
	for _, h := range r.Headers {
		out.Headers = append(out.Headers, kafka.Header(h))
	}
	return out
}

func sent(eventID int64, flid string, version int64, value string) outbox.ChangeEvent {
	s := sha256.Sum256([]byte(value))
	return outbox.ChangeEvent{EventID: eventID, FLID: flid, StateVersion: version, Status: outbox.StatusSent, ValueSHA256: s[:]}
}

// world is a clean case: flight 100 (two changes, the second sent twice by two leaders, its
// state at version 2), flight 101 deleted (its tombstone compacted away), flight 102 new and
// not sent yet, flight 200 purged (a tombstone last), flight 300's change older than the
// retention, flight 400's change on the topic but PENDING in PostgreSQL.
func world() (*kafkaverify.Topics, []kafka.ConsumedRecord, []kafka.ConsumedRecord, kafkaverify.Stored) {
	f100 := &flight.State{FLID: 100, Status: flight.Active, Version: 2}
	ch := []kafka.ConsumedRecord{
		rec(changes, 0, "100", 1, 11, 1, []byte(`{"v":1}`)),
		rec(changes, 1, "100", 2, 13, 1, []byte(`{"v":2}`)),
		rec(changes, 2, "100", 2, 13, 2, []byte(`{"v":2}`)),
		rec(changes, 3, "300", 4, 3, 1, []byte(`{"old":1}`)),
		rec(changes, 4, "400", 1, 20, 2, []byte(`{"p":1}`)),
	}
	st := []kafka.ConsumedRecord{
		rec(state, 0, "100", 1, 12, 1, []byte(`{"old":1}`)),
		rec(state, 1, "200", 4, 5, 1, []byte(`{"x":1}`)),
		rec(state, 2, "100", 2, 14, 1, f100.AppendJSON(nil)),
		rec(state, 3, "200", 5, 8, 1, nil),
	}
	s := kafkaverify.Stored{
		Changes: []outbox.ChangeEvent{sent(11, "100", 1, `{"v":1}`), sent(13, "100", 2, `{"v":2}`),
			{EventID: 20, FLID: "400", StateVersion: 1, Status: outbox.StatusPending}},
		States: outbox.StateProgress{Sent: map[string]int64{"100": 2, "101": 3, "200": 5}, Unsent: map[string]int64{"102": 1}},
		Flights: map[int64]*flight.State{100: f100, 101: {FLID: 101, Status: flight.Deleted, Version: 3},
			102: {FLID: 102, Status: flight.Active, Version: 1}},
	}
	return kafkaverify.NewTopics(changes, state), ch, st, s
}

func compare(t *kafkaverify.Topics, ch, st []kafka.ConsumedRecord, s kafkaverify.Stored) kafkaverify.Report {
	for _, r := range ch {
		t.AddChange(r)
	}
	for _, r := range st {
		t.AddState(r)
	}
	return kafkaverify.Compare(t, s)
}

func TestCleanCasePasses(t *testing.T) {
	t.Parallel()
	r := compare(world())
	require.True(t, r.OK(), "%+v", r.Differences)
	require.NotNil(t, r.Differences, "[] in JSON")
	require.Equal(t, kafkaverify.ChangesSummary{Topic: changes, Records: 5, SentEvents: 2, Matched: 2, IdenticalDuplicates: 1,
		NotInPostgreSQL: 1, Unsent: map[string]int{outbox.StatusPending: 1}}, r.Changes)
	require.Equal(t, kafkaverify.StateSummary{Topic: state, Records: 4, FLIDs: 2, Compared: 2, Matched: 2, Pending: 1, TombstonesGone: 1}, r.State)
}

// Each kind of difference is found, named with its FLID, version and record.
func TestEachDifference(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		tamper func(ch, st *[]kafka.ConsumedRecord, s *kafkaverify.Stored)
		want   kafkaverify.Difference
	}{
		{"a sent change missing", func(ch, _ *[]kafka.ConsumedRecord, _ *kafkaverify.Stored) { *ch = (*ch)[1:] },
			kafkaverify.Difference{Kind: kafkaverify.ChangeMissing, Topic: changes, FLID: "100", StateVersion: 1, Offset: -1}},
		{"a change's value not the event's", func(ch, _ *[]kafka.ConsumedRecord, _ *kafkaverify.Stored) {
			(*ch)[0] = rec(changes, 0, "100", 1, 11, 1, []byte(`{"v":9}`))
		}, kafkaverify.Difference{Kind: kafkaverify.ChangeDiffers, Topic: changes, FLID: "100", StateVersion: 1, Offset: 0}},
		{"a duplicate not identical", func(ch, _ *[]kafka.ConsumedRecord, _ *kafkaverify.Stored) {
			(*ch)[2] = rec(changes, 2, "100", 2, 14, 2, []byte(`{"v":2}`))
		}, kafkaverify.Difference{Kind: kafkaverify.DuplicateDiffers, Topic: changes, FLID: "100", StateVersion: 2, Offset: 2}},
		{"versions out of order", func(ch, _ *[]kafka.ConsumedRecord, _ *kafkaverify.Stored) {
			*ch = append(*ch, rec(changes, 5, "100", 1, 11, 3, []byte(`{"v":1}`)))
		}, kafkaverify.Difference{Kind: kafkaverify.OutOfOrder, Topic: changes, FLID: "100", StateVersion: 1, Offset: 5}},
		{"a record without a version", func(ch, _ *[]kafka.ConsumedRecord, _ *kafkaverify.Stored) {
			*ch = append(*ch, kafka.ConsumedRecord{Topic: changes, Offset: 5, Key: "100", Value: []byte("x")})
		}, kafkaverify.Difference{Kind: kafkaverify.Malformed, Topic: changes, FLID: "100", Offset: 5}},
		{"a state record of a schema version this msgx does not know", func(_, st *[]kafka.ConsumedRecord, _ *kafkaverify.Stored) {
			r := rec(state, 4, "100", 3, 15, 1, []byte(`{"v":3}`))
			r.Headers[0] = kafka.Header{Key: event.HeaderSchemaVersion, Value: "2"}
			*st = append(*st, r)
		}, kafkaverify.Difference{Kind: kafkaverify.Malformed, Topic: state, FLID: "100", Offset: 4}},
		{"a change record whose flid header is not its key", func(ch, _ *[]kafka.ConsumedRecord, _ *kafkaverify.Stored) {
			r := rec(changes, 5, "100", 3, 15, 1, []byte(`{"v":3}`))
			r.Key = "101"
			*ch = append(*ch, r)
		}, kafkaverify.Difference{Kind: kafkaverify.Malformed, Topic: changes, FLID: "101", Offset: 5}},
		{"an older state written last", func(_, st *[]kafka.ConsumedRecord, _ *kafkaverify.Stored) {
			*st = append(*st, rec(state, 4, "100", 1, 12, 1, []byte(`{"old":1}`)))
		}, kafkaverify.Difference{Kind: kafkaverify.StateBehind, Topic: state, FLID: "100", StateVersion: 1, Offset: 4}},
		{"a state not the stored one", func(_, st *[]kafka.ConsumedRecord, _ *kafkaverify.Stored) {
			(*st)[2] = rec(state, 2, "100", 2, 14, 1, []byte(`{"flid":100}`))
		}, kafkaverify.Difference{Kind: kafkaverify.StateDiffers, Topic: state, FLID: "100", StateVersion: 2, Offset: 2}},
		{"a purged flight's last record not a tombstone", func(_, st *[]kafka.ConsumedRecord, _ *kafkaverify.Stored) {
			(*st)[3] = rec(state, 3, "200", 5, 8, 1, []byte(`{}`))
		}, kafkaverify.Difference{Kind: kafkaverify.StateDiffers, Topic: state, FLID: "200", StateVersion: 5, Offset: 3}},
		{"a sent state missing", func(_, st *[]kafka.ConsumedRecord, _ *kafkaverify.Stored) {
			*st = slices.DeleteFunc(*st, func(r kafka.ConsumedRecord) bool { return r.Key == "100" })
		}, kafkaverify.Difference{Kind: kafkaverify.StateMissing, Topic: state, FLID: "100", StateVersion: 2, Offset: -1}},
		{"a stored state never to be sent", func(_, _ *[]kafka.ConsumedRecord, s *kafkaverify.Stored) {
			s.States.Unsent = nil
		}, kafkaverify.Difference{Kind: kafkaverify.StateMissing, Topic: state, FLID: "102", StateVersion: 1, Offset: -1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			top, ch, st, s := world()
			tc.tamper(&ch, &st, &s)
			r := compare(top, ch, st, s)
			require.False(t, r.OK())
			var got []kafkaverify.Difference
			for _, d := range r.Differences {
				require.NotEmpty(t, d.Detail)
				d.Detail = ""
				got = append(got, d)
			}
			require.Contains(t, got, tc.want)
			n := 1
			if tc.want.Kind == kafkaverify.StateBehind {
				n = 2 // and the state topic going back: out-of-order
			}
			require.Len(t, got, n, "%+v", r.Differences)
		})
	}
}

// After a failover that lost a tail: flight 100's version 3 is on the topic (event 30 of the old
// timeline) but the database has not derived it again (beyond-database); version 2's record is
// the held one (event 13) while the database re-derived it as event 50 with the same value.
func TestFailoverLostTail(t *testing.T) {
	t.Parallel()
	tp, ch, st, s := world()
	ch = append(ch, rec(changes, 5, "100", 3, 30, 1, []byte(`{"v":3}`)))
	s.Changes[1] = sent(50, "100", 2, `{"v":2}`)
	v2 := sha256.Sum256([]byte(`{"v":2}`))
	s.Held = map[string]map[int64]outbox.Held{"100": {2: {FLID: "100", StateVersion: 2, EventID: 13, ValueSHA256: v2, Beyond: true}}}
	s.Timelines, s.Timeline = []int64{1, 2}, 2
	r := compare(tp, ch, st, s)
	require.Equal(t, 1, r.Changes.MatchedHeld)
	require.Equal(t, kafkaverify.FailoverSummary{Timeline: 2, Timelines: []int64{1, 2}, Held: 1, HeldBeyond: 1}, r.Failover)
	require.Len(t, r.Differences, 1, "%+v", r.Differences)
	require.Equal(t, kafkaverify.BeyondDatabase, r.Differences[0].Kind)
	require.Equal(t, int64(3), r.Differences[0].StateVersion)

	// A held record whose value is not the re-derived event's is still a difference.
	s.Changes[1] = sent(50, "100", 2, `{"v":22}`)
	r = compare(kafkaverify.NewTopics(changes, state), ch, st, s)
	require.Contains(t, kinds(r), kafkaverify.ChangeDiffers)
}

func kinds(r kafkaverify.Report) []kafkaverify.Kind {
	var out []kafkaverify.Kind
	for _, d := range r.Differences {
		out = append(out, d.Kind)
	}
	return out
}

// A state record with the stored state's instants agrees; one written before msgx published
// instants (the same state without them) agrees too and is counted; any other value differs.
func TestStateWithAndWithoutInstants(t *testing.T) {
	t.Parallel()
	shanghai, err := time.LoadLocation("Asia/Shanghai")
	require.NoError(t, err)
	f := &flight.State{FLID: 100, Status: flight.Active, Version: 2}
	f.F[flight.SODT] = flight.Time(time.Date(2021, 1, 23, 8, 0, 0, 0, time.UTC))
	for _, tc := range []struct {
		value   []byte
		without int
		ok      bool
	}{{f.AppendJSONIn(nil, shanghai), 0, true}, {f.AppendJSON(nil), 1, true}, {f.AppendJSONIn(nil, time.UTC), 0, false}} {
		s := kafkaverify.Stored{States: outbox.StateProgress{Sent: map[string]int64{"100": 2}}, Flights: map[int64]*flight.State{100: f}, Loc: shanghai}
		r := compare(kafkaverify.NewTopics(changes, state), nil, []kafka.ConsumedRecord{rec(state, 0, "100", 2, 14, 1, tc.value)}, s)
		require.Equal(t, tc.ok, r.OK(), "%s: %+v", tc.value, r.Differences)
		require.Equal(t, tc.without, r.State.WithoutInstants)
	}
}
