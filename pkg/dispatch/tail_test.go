package dispatch_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/dev/testdb"
	"github.com/msgx/msgx/pkg/dispatch"
	"github.com/msgx/msgx/pkg/event"
	"github.com/msgx/msgx/pkg/kafka"
	"github.com/msgx/msgx/pkg/leader"
	"github.com/msgx/msgx/pkg/outbox"
)

// readBack reads topic whole, read_committed.
func readBack(t *testing.T, b *bundle, topic string) []kafka.ConsumedRecord {
	t.Helper()
	var out []kafka.ConsumedRecord
	_, err := kafka.ReadCommitted(context.Background(), b.kcfg, topic, func(r kafka.ConsumedRecord) error {
		out = append(out, r)
		return nil
	})
	require.NoError(t, err)
	return out
}

// successor is the dispatcher of the next term (epoch 8) on the promoted database: it reads the
// topics' tail as production does.
func successor(t *testing.T, b *bundle) (*dispatch.Dispatcher, leader.Lease, *prometheus.Registry) {
	t.Helper()
	_, err := b.db.Pool.Exec(context.Background(), `UPDATE leader_lease SET epoch = 8 WHERE role = 'dispatcher'`)
	require.NoError(t, err)
	reg := prometheus.NewRegistry()
	d := b.dispatcher(t, dispatch.Config{
		TailReader: func(ctx context.Context, topic string, since time.Time, fn func(kafka.ConsumedRecord) error) error {
			_, err := kafka.ReadCommittedSince(ctx, b.kcfg, topic, since, fn)
			return err
		},
	}, reg, zerolog.Nop())
	return d, leader.Lease{Role: "dispatcher", Epoch: 8}, reg
}

// A failover that lost the old primary's last transactions: Kafka holds versions 2 and 3 of
// flight 7 (changes and state) that the promoted database no longer has. The new primary derives
// them again (same values, other event ids) and then version 4. The state topic must not go back
// to version 2, and the changes topic must not carry versions 2 and 3 a second time under other
// event ids.
func TestLostTailStateNeverGoesBackChangesNotResent(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	ctx := context.Background()
	require.NoError(t, b.disp.ReadTail(ctx, b.lease)) // records the timeline
	require.NoError(t, outbox.Enqueue(ctx, b.db.Pool, t0, msgEvent(7, 1), stateEvent(7, 1, event.Upsert)))
	_, err := b.disp.StepMsg(ctx, b.lease)
	require.NoError(t, err)
	_, err = b.disp.FlushStates(ctx, b.lease)
	require.NoError(t, err)
	var replicated int64 // the standby has everything up to here
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT last_value FROM msg_event_event_id_seq`).Scan(&replicated))
	_, err = b.db.Pool.Exec(ctx, `UPDATE leader_lease SET renewed_at = $1`, t0)
	require.NoError(t, err)
	_, err = b.db.Pool.Exec(ctx, `INSERT INTO leader_lease (role, epoch, holder, backend_pid, acquired_at, renewed_at) VALUES ('processor', 1, 'p', 0, $1, $1)`, time.Now())
	require.NoError(t, err)

	for v := int64(2); v <= 3; v++ { // the tail the old primary sent, then lost
		require.NoError(t, outbox.Enqueue(ctx, b.db.Pool, t0, msgEvent(7, v), stateEvent(7, v, event.Upsert)))
		_, err = b.disp.StepMsg(ctx, b.lease)
		require.NoError(t, err)
		_, err = b.disp.FlushStates(ctx, b.lease)
		require.NoError(t, err)
	}
	_, err = b.db.Pool.Exec(ctx, `
		DELETE FROM msg_event WHERE state_version > 1;
		DELETE FROM msg_state_log WHERE state_version > 1;
		DELETE FROM msg_state_out WHERE state_version > 1;
		UPDATE msg_state_sent SET state_version = 1;
		SELECT setval('msg_event_event_id_seq', `+strconv.FormatInt(replicated, 10)+`);
		DO $$ BEGIN EXECUTE format('CREATE OR REPLACE FUNCTION msgx_timeline() RETURNS bigint LANGUAGE sql AS %L',
		                           'SELECT ' || (msgx_timeline() + 1)); END $$;`)
	require.NoError(t, err)

	// The promoted database derives versions 2 and 3 again, in one transaction each.
	require.NoError(t, outbox.Enqueue(ctx, b.db.Pool, t0, msgEvent(7, 2), stateEvent(7, 2, event.Upsert)))
	d, lease, reg := successor(t, b)
	require.NoError(t, d.ReadTail(ctx, lease))
	require.Equal(t, 1.0, testutil.ToFloat64(counter(t, reg, "msgx_db_timeline_changes_total")))
	require.Equal(t, 2.0, testutil.ToFloat64(counter(t, reg, "msgx_kafka_records_beyond_database_total")),
		"versions 2 and 3: their events are not in the database (version 2 was derived again, under another id)")
	for range 2 {
		_, err = d.StepMsg(ctx, lease)
		require.NoError(t, err)
		_, err = d.FlushStates(ctx, lease)
		require.NoError(t, err)
	}
	require.NoError(t, outbox.Enqueue(ctx, b.db.Pool, t0, msgEvent(7, 3), stateEvent(7, 3, event.Upsert)))
	require.NoError(t, outbox.Enqueue(ctx, b.db.Pool, t0, msgEvent(7, 4), stateEvent(7, 4, event.Upsert)))
	for range 3 {
		_, err = d.StepMsg(ctx, lease)
		require.NoError(t, err)
		_, err = d.FlushStates(ctx, lease)
		require.NoError(t, err)
	}
	var unsent int
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT count(*) FROM `+testdb.AllEvents+` WHERE status <> 'SENT'`).Scan(&unsent))
	require.Zero(t, unsent)

	newest := int64(0)
	for _, r := range readBack(t, b, b.kcfg.TopicState) {
		e, err := event.Parse(r.Key, r.Value, r.Headers)
		require.NoError(t, err)
		v := e.StateVersion
		require.Greater(t, v, newest, "the state topic went back to version %d after %d", v, newest)
		newest = v
	}
	require.Equal(t, int64(4), newest)
	seen := map[string]string{} // version -> event_id + value of its first record
	var versions []string
	for _, r := range readBack(t, b, b.kcfg.TopicChanges) {
		e, err := event.Parse(r.Key, r.Value, r.Headers)
		require.NoError(t, err)
		v, id := strconv.FormatInt(e.StateVersion, 10), strconv.FormatInt(e.EventID, 10)+" "+string(r.Value)
		if first, ok := seen[v]; ok {
			require.Equal(t, first, id, "version %s re-sent with another event id or value", v)
		}
		seen[v] = id
		versions = append(versions, v)
	}
	require.Equal(t, []string{"1", "2", "3", "4"}, versions)

	// The old primary comes back writable (a stray on the older timeline): its dispatcher sends
	// nothing. Its database never saw the promoted server's timeline nor its events.
	_, err = b.db.Pool.Exec(ctx, `
		DELETE FROM db_timeline WHERE timeline >= msgx_timeline();
		DELETE FROM msg_event WHERE event_id >> 40 >= msgx_timeline();
		DELETE FROM msg_event_delivered WHERE through >> 40 >= msgx_timeline();
		DELETE FROM msg_state_log WHERE event_id >> 40 >= msgx_timeline();
		DELETE FROM msg_state_out WHERE event_id >> 40 >= msgx_timeline();
		DO $$ BEGIN EXECUTE format('CREATE OR REPLACE FUNCTION msgx_timeline() RETURNS bigint LANGUAGE sql AS %L',
		'SELECT ' || (msgx_timeline() - 1)); END $$;`)
	require.NoError(t, err)
	stray, lease, _ := successor(t, b)
	require.ErrorIs(t, stray.ReadTail(ctx, lease), dispatch.ErrStrayDatabase)
}

// TestTailLeavesOutRecordsNotMsgx: a record whose headers do not follow docs/events.md (another
// producer's: an event_id of a far newer generation and a state_version, but no schema_version)
// is not taken for msgx's at a term's start: it does not make the database a stray, hold flight
// 7's version 5 on the changes topic nor raise its state.
func TestTailLeavesOutRecordsNotMsgx(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	ctx := context.Background()
	require.NoError(t, b.disp.ReadTail(ctx, b.lease)) // records the timeline
	foreign := []kafka.Header{{Key: "event_id", Value: strconv.FormatInt(9<<40, 10)}, {Key: "state_version", Value: "5"}}
	for _, topic := range []string{b.kcfg.TopicChanges, b.kcfg.TopicState} {
		for _, err := range b.producer.Send(ctx, []kafka.Record{{Topic: topic, Key: "7", Value: []byte(`{}`), Headers: foreign}}) {
			require.NoError(t, err)
		}
	}

	d, lease, reg := successor(t, b)
	require.NoError(t, d.ReadTail(ctx, lease))
	require.Zero(t, testutil.ToFloat64(counter(t, reg, "msgx_kafka_records_beyond_database_total")))
	for v := int64(1); v <= 5; v++ {
		require.NoError(t, outbox.Enqueue(ctx, b.db.Pool, t0, msgEvent(7, v), stateEvent(7, v, event.Upsert)))
		deliverAll(t, b, d, lease)
	}
	for _, topic := range []string{b.kcfg.TopicChanges, b.kcfg.TopicState} {
		var versions []int64
		for _, r := range readBack(t, b, topic)[1:] {
			e, err := event.Parse(r.Key, r.Value, r.Headers)
			require.NoError(t, err)
			versions = append(versions, e.StateVersion)
		}
		require.Equal(t, []int64{1, 2, 3, 4, 5}, versions, "%s: every version sent after the foreign record", topic)
	}
}

func counter(t *testing.T, reg *prometheus.Registry, name string) prometheus.Collector {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() == name {
			return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: "copy"}, func() float64 {
				return mf.GetMetric()[0].GetCounter().GetValue()
			})
		}
	}
	t.Fatalf("no metric %s", name)
	return nil
}

// TestReadyFailsWhileTheTailIsNotRead: a leader whose term cannot read the topics' tail (here a
// principal without Read on the topics) sends nothing, so it is not ready, from the term's start
// until the read succeeds; between terms the check says nothing.
func TestReadyFailsWhileTheTailIsNotRead(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	var denied atomic.Bool
	denied.Store(true)
	d := b.dispatcher(t, dispatch.Config{
		FlushPeriod: time.Second,
		TailReader: func(ctx context.Context, topic string, since time.Time, fn func(kafka.ConsumedRecord) error) error {
			if denied.Load() {
				return fmt.Errorf("kafka read %s/0: %w", topic, sarama.ErrTopicAuthorizationFailed)
			}
			return nil
		},
	}, prometheus.NewRegistry(), zerolog.Nop())
	require.NoError(t, d.Ready(context.Background()), "no term: nothing to say")

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx, b.lease) }()
	require.Eventually(t, func() bool {
		err := d.Ready(ctx)
		return err != nil && strings.Contains(err.Error(), "not authorized")
	}, 10*time.Second, 10*time.Millisecond, "not ready, with the reason")
	denied.Store(false)
	require.Eventually(t, func() bool { return d.Ready(ctx) == nil }, 10*time.Second, 10*time.Millisecond, "ready once the tail is read")
	cancel()
	require.NoError(t, <-done)
	require.NoError(t, d.Ready(context.Background()))
}
