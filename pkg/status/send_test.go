package status_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/dev/testdb"
	"github.com/msgx/msgx/pkg/event"
	"github.com/msgx/msgx/pkg/leader"
	"github.com/msgx/msgx/pkg/outbox"
	"github.com/msgx/msgx/pkg/roles"
	"github.com/msgx/msgx/pkg/status"
)

// TestSendReportVerdict: the dispatcher's report of its sends, written as the dispatcher writes
// it (its database role, under its lease) and read as the console reads it. Sends blocked
// longer than the dispatcher's own bound while events wait degrade the verdict with the broker,
// the topic and the events waiting; blocked for less, or blocked with nothing waiting, do not;
// a report older than three report periods says the send state is unknown; a deposed
// dispatcher's report is refused.
func TestSendReportVerdict(t *testing.T) {
	t.Parallel()
	db, ctx := testdb.New(t), context.Background()
	r := db.Roles(t)
	at := time.Date(2026, 12, 6, 8, 0, 0, 0, time.UTC)
	_, err := db.Pool.Exec(ctx, `INSERT INTO leader_lease VALUES ('ingest', 1, 'a', 0, $1, $1), ('processor', 1, 'b', 0, $1, $1),
		('dispatcher', 2, 'c', 0, $1, $1)`, at)
	require.NoError(t, err)
	store, err := outbox.New(r.Pool(t, roles.Dispatcher), outbox.Policy{MaxAttempts: 3, BackoffBase: time.Second, BackoffMax: time.Minute})
	require.NoError(t, err)
	lease := leader.Lease{Role: "dispatcher", Epoch: 2}
	report := func(blockedSince time.Time) {
		t.Helper()
		st := outbox.SendState{Target: event.TargetMsg, Topic: "msgx.flight.changes", Brokers: []string{"127.0.0.1:9093"},
			StallAfter: 5 * time.Second, ReportEvery: 5 * time.Second}
		if !blockedSince.IsZero() {
			st.BlockedSince, st.Class, st.Error, st.BrokersSilent = blockedSince, "stalled", "kafka send waiting for the brokers for 4s", true
		}
		require.NoError(t, store.ReportSends(ctx, lease, []outbox.SendState{st}, at))
	}
	reader := r.Pool(t, roles.Reader)
	verdict := func(now time.Time) status.Verdict {
		t.Helper()
		s, err := status.ReadWith(ctx, reader, now, status.Options{OpenOnly: true})
		require.NoError(t, err)
		return s.Verdict(time.Hour)
	}

	report(at.Add(-12 * time.Second))
	require.Equal(t, status.Verdict{State: "healthy"}, verdict(at), "blocked, but no event waits")

	var evs []event.Event
	for f := range 340 {
		evs = append(evs, event.Event{Target: event.TargetMsg, FLID: int64(f + 1), Type: event.Upsert, StateVersion: 1, Payload: json.RawMessage(`{}`)})
	}
	require.NoError(t, outbox.Enqueue(ctx, db.Pool, at, evs...))
	require.Equal(t, status.Verdict{State: "degraded", Reasons: []string{
		"Kafka broker 127.0.0.1:9093 not answering for 12s: 340 events waiting (msgx.flight.changes): kafka send waiting for the brokers for 4s",
	}}, verdict(at))

	report(at.Add(-4 * time.Second))
	require.Equal(t, "healthy", verdict(at).State, "blocked within the dispatcher's bound")
	report(time.Time{})
	require.Equal(t, "healthy", verdict(at.Add(15*time.Second)).State, "three report periods old: not yet stale")
	require.Equal(t, status.Verdict{State: "degraded", Reasons: []string{
		"dispatcher's send state unknown for msgx.flight.changes: its last report is 16s old (it reports every 5s)",
	}}, verdict(at.Add(16*time.Second)))

	_, err = db.Pool.Exec(ctx, `UPDATE leader_lease SET epoch = 3 WHERE role = 'dispatcher'`)
	require.NoError(t, err)
	require.ErrorIs(t, store.ReportSends(ctx, lease, nil, at), leader.ErrFenced, "a deposed dispatcher reports nothing")
}

// TestSendProblemsSayWhatBlocks: the reason names the brokers as the dispatcher reported them:
// not answering when they did not answer its metadata request, else what blocks the sends.
func TestSendProblemsSayWhatBlocks(t *testing.T) {
	t.Parallel()
	blocked := 20.0
	for _, c := range []struct {
		class  string
		silent bool
		want   string
	}{
		{"stalled", true, "Kafka brokers 10.0.0.1:9093, 10.0.0.2:9093 not answering for 20s"},
		{"stalled", false, "Kafka sends blocked (stalled, kafka brokers 10.0.0.1:9093, 10.0.0.2:9093 answer metadata requests) for 20s"},
		{"refused", false, "Kafka brokers 10.0.0.1:9093, 10.0.0.2:9093 refusing the records for 20s"},
		{"topic", false, "Kafka topic msgx.flight.state unusable (kafka brokers 10.0.0.1:9093, 10.0.0.2:9093) for 20s"},
		{"tail", false, "Kafka topics' tail not read, nothing sent (kafka brokers 10.0.0.1:9093, 10.0.0.2:9093) for 20s"},
	} {
		s := status.Snapshot{
			Outbox: []status.Target{{Target: event.TargetSchd, Pending: 3}},
			Sends: []status.Send{{Target: event.TargetSchd, Topic: "msgx.flight.state", BlockedFor: &blocked, Class: c.class, Error: "why",
				Brokers: []string{"10.0.0.1:9093", "10.0.0.2:9093"}, BrokersSilent: c.silent, StallAfter: 5, ReportEvery: 5}},
		}
		require.Equal(t, []string{c.want + ": 3 events waiting (msgx.flight.state): why"}, s.SendProblems(), c.class)
	}
}
