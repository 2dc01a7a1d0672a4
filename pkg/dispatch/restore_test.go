package dispatch_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/dev/testdb"
	"github.com/msgx/msgx/pkg/dispatch"
	"github.com/msgx/msgx/pkg/event"
	"github.com/msgx/msgx/pkg/leader"
	"github.com/msgx/msgx/pkg/outbox"
)

// backedUp are the tables a restore puts back: everything the outbox and the tail read keep.
var backedUp = []string{"msg_event", "msg_event_delivered", "msg_state_log", "msg_state_out", "msg_state_sent", "msg_kafka_held", "db_timeline", "db_epoch", "db_restore", "leader_lease"}

// backup copies the outbox's tables, its sequence and msgx_event_id (whose body carries the
// restore epoch) as a backup of the database holds them, and returns the restore of that backup.
func backup(t *testing.T, b *bundle) (restore func()) {
	t.Helper()
	ctx := context.Background()
	for _, tab := range backedUp {
		_, err := b.db.Pool.Exec(ctx, fmt.Sprintf(`CREATE TABLE bk_%s AS SELECT * FROM %s`, tab, tab))
		require.NoError(t, err)
	}
	var seq int64
	var called bool
	var fn string
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT last_value, is_called, pg_get_functiondef('msgx_event_id'::regproc) FROM msg_event_event_id_seq`).
		Scan(&seq, &called, &fn))
	return func() {
		t.Helper()
		for _, tab := range backedUp {
			_, err := b.db.Pool.Exec(ctx, fmt.Sprintf(`TRUNCATE %s; INSERT INTO %s SELECT * FROM bk_%s; DROP TABLE bk_%s`, tab, tab, tab, tab))
			require.NoError(t, err)
		}
		_, err := b.db.Pool.Exec(ctx, `SELECT setval('msg_event_event_id_seq', $1, $2)`, seq, called)
		require.NoError(t, err)
		_, err = b.db.Pool.Exec(ctx, fn)
		require.NoError(t, err)
	}
}

// setTimeline makes msgx_timeline() answer tl: the server's timeline.
func setTimeline(t *testing.T, b *bundle, tl int64) {
	t.Helper()
	_, err := b.db.Pool.Exec(context.Background(), fmt.Sprintf(`CREATE OR REPLACE FUNCTION msgx_timeline() RETURNS bigint LANGUAGE sql AS 'SELECT %d::bigint'`, tl))
	require.NoError(t, err)
}

// deliverAll steps both loops until every event is SENT.
func deliverAll(t *testing.T, b *bundle, d *dispatch.Dispatcher, lease leader.Lease) {
	t.Helper()
	ctx := context.Background()
	for range 20 {
		_, err := d.StepMsg(ctx, lease)
		require.NoError(t, err)
		_, err = d.FlushStates(ctx, lease)
		require.NoError(t, err)
		var unsent int
		require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT count(*) FROM `+testdb.AllEvents+` WHERE status <> 'SENT'`).Scan(&unsent))
		if unsent == 0 {
			return
		}
	}
	t.Fatal("events left unsent")
}

// publish enqueues the events (one transaction, as one processor batch) and sends them.
func publish(t *testing.T, b *bundle, d *dispatch.Dispatcher, lease leader.Lease, evs ...event.Event) {
	t.Helper()
	require.NoError(t, outbox.Enqueue(context.Background(), b.db.Pool, t0, evs...))
	deliverAll(t, b, d, lease)
}

// flightChanges are version v of each FLID, both targets.
func flightChanges(v int64, flids ...int64) []event.Event {
	var out []event.Event
	for _, f := range flids {
		out = append(out, msgEvent(f, v), stateEvent(f, v, event.Upsert))
	}
	return out
}

// requireEventIdentity checks what the topics hold: on each topic an event id names one record
// (FLID, version, value); on the changes topic each version has one event id and value; on the
// state topic no FLID's version ever goes back. It returns the newest version per FLID on the
// state topic.
func requireEventIdentity(t *testing.T, b *bundle) map[string]int64 {
	t.Helper()
	newest := map[string]int64{}
	for _, topic := range []string{b.kcfg.TopicChanges, b.kcfg.TopicState} {
		named := map[int64]string{}
		versions := map[string]string{}
		for _, r := range readBack(t, b, topic) {
			e, err := event.Parse(r.Key, r.Value, r.Headers)
			require.NoError(t, err)
			rec := fmt.Sprintf("%s v%d %s", r.Key, e.StateVersion, r.Value)
			if first, ok := named[e.EventID]; ok {
				require.Equal(t, first, rec, "%s: event id %d names two records", topic, e.EventID)
			}
			named[e.EventID] = rec
			if topic == b.kcfg.TopicState {
				require.GreaterOrEqual(t, e.StateVersion, newest[r.Key], "%s: FLID %s went back to version %d", topic, r.Key, e.StateVersion)
				newest[r.Key] = e.StateVersion
				continue
			}
			k, sent := fmt.Sprintf("%s v%d", r.Key, e.StateVersion), fmt.Sprintf("%d %s", e.EventID, r.Value)
			if first, ok := versions[k]; ok {
				require.Equal(t, first, sent, "%s: FLID %s version %d sent again with another event id or value", topic, r.Key, e.StateVersion)
			}
			versions[k] = sent
		}
	}
	return newest
}

// restoreKinds counts the raises of the restore epoch by kind.
func restoreKinds(t *testing.T, b *bundle) map[string]int {
	t.Helper()
	rs, err := outbox.Restores(context.Background(), b.db.Pool)
	require.NoError(t, err)
	out := map[string]int{}
	for _, r := range rs {
		out[r.Kind]++
	}
	return out
}

// history is what each restore starts from: on timeline tl, version 1 of flids published, the
// backup taken, then between, then (in a new dispatcher term) version 2 published. It returns the
// restore of the backup.
func history(t *testing.T, b *bundle, tl int64, between func(), flids ...int64) (restore func()) {
	t.Helper()
	ctx := context.Background()
	setTimeline(t, b, tl)
	d, lease, _ := successor(t, b)
	require.NoError(t, d.ReadTail(ctx, lease))
	publish(t, b, d, lease, flightChanges(1, flids...)...)
	restore = backup(t, b)
	if between != nil {
		between()
	}
	d, lease, _ = successor(t, b)
	require.NoError(t, d.ReadTail(ctx, lease))
	publish(t, b, d, lease, flightChanges(2, flids...)...)
	return restore
}

// resume is the restored database's first dispatcher term: the processor enqueued before (it
// starts with the other binaries), the tail read, then after enqueued and everything sent.
func resume(t *testing.T, b *bundle, before, after []event.Event) *prometheus.Registry {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, outbox.Enqueue(ctx, b.db.Pool, t0, before...))
	d, lease, reg := successor(t, b)
	require.NoError(t, d.ReadTail(ctx, lease))
	require.NoError(t, outbox.Enqueue(ctx, b.db.Pool, t0, after...))
	deliverAll(t, b, d, lease)
	return reg
}

// A physical backup started without archive recovery (no recovery.signal: crash recovery to the
// end of the backup) keeps the timeline. After the backup one processor batch rolled back after
// drawing two event ids (a fenced or failed batch), then versions 2 were published; the primary
// is lost and the backup started in its place. Its processor derives versions 2 and 3 again, and
// renews its lease at once: the processes of a restored database start long after the old
// server's last records. The restored sequence then draws ids Kafka holds for other records (on
// each topic: version 3 of flight 7 would take version 2 of flight 8's ids); the dispatcher must
// notice, raise the restore epoch, and send nothing twice.
func TestRestoreThatKeptTheTimelineNeverRepeatsAnEventID(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	restore := history(t, b, 1, func() {
		_, err := b.db.Pool.Exec(context.Background(), `BEGIN; SELECT nextval('msg_event_event_id_seq') FROM generate_series(1, 2); ROLLBACK;`)
		require.NoError(t, err)
	}, 7, 8)

	restore()
	_, err := b.db.Pool.Exec(context.Background(), `INSERT INTO leader_lease (role, epoch, holder, backend_pid, acquired_at, renewed_at) VALUES ('processor', 1, 'p', 0, $1, $1)`,
		time.Now().Add(time.Hour))
	require.NoError(t, err)
	reg := resume(t, b, append(flightChanges(2, 7, 8), flightChanges(3, 7, 8)...), nil)
	require.Equal(t, map[string]int64{"7": 3, "8": 3}, requireEventIdentity(t, b))
	require.Equal(t, map[string]int{outbox.RestoreIDsBehind: 1}, restoreKinds(t, b))
	require.Equal(t, 1.0, gauge(t, reg, "msgx_db_restore_epoch"))
}

// A logical dump (pg_dump) of a database on timeline 3 is restored into a cluster made by initdb,
// on timeline 1, after the old server published more. The database's own data says it came from
// a higher timeline (db_timeline, msg_event's ids): the dispatcher resumes without a hand edit,
// above every id published.
func TestLogicalRestoreOntoALowerTimelineResumes(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	restore := history(t, b, 3, nil, 7, 8)

	restore() // the database's own records tell it (another system identifier too, not needed)
	setTimeline(t, b, 1)
	resume(t, b, append(flightChanges(2, 7, 8), flightChanges(3, 7)...), nil)
	require.Equal(t, map[string]int64{"7": 3, "8": 2}, requireEventIdentity(t, b))
	require.Equal(t, map[string]int{outbox.RestoreOlderTimeline: 1}, restoreKinds(t, b))
	gens := b.db.Int64s(t, `SELECT DISTINCT event_id >> 40 FROM msg_event ORDER BY 1`)
	require.Equal(t, []int64{3, 4}, gens, "ids of the restored cluster continue above timeline 3's")
}

// A dump taken on timeline 1, before a failover; the promoted server (timeline 2) published
// more; the dump is restored into a cluster made by initdb (another system identifier), on
// timeline 1. The timelines alone look like an old primary's; the system identifier says it was
// restored: the dispatcher resumes without a hand edit.
func TestRestoreIntoAnotherClusterResumes(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	restore := history(t, b, 1, func() { setTimeline(t, b, 2) }, 7, 8)

	restore()
	setTimeline(t, b, 1)
	_, err := b.db.Pool.Exec(context.Background(), `UPDATE db_epoch SET system_identifier = system_identifier + 1`) // the old cluster's
	require.NoError(t, err)
	resume(t, b, flightChanges(2, 7, 8), flightChanges(3, 8))
	require.Equal(t, map[string]int64{"7": 2, "8": 3}, requireEventIdentity(t, b))
	require.Equal(t, map[string]int{outbox.RestoreOtherCluster: 1}, restoreKinds(t, b))
}

// refusedAfterAFailover is the database on timeline 1 as it was before the primary moved to
// timeline 2 and published version 2 of flight 7 — an old primary left behind by a failover, or
// a backup from before it restored into the same cluster — with version 2 derived again, and its
// next dispatcher term, which must refuse it. It returns the records each topic held before.
func refusedAfterAFailover(t *testing.T, b *bundle) (d *dispatch.Dispatcher, lease leader.Lease, changes, states int) {
	t.Helper()
	ctx := context.Background()
	restore := history(t, b, 1, func() { setTimeline(t, b, 2) }, 7)
	changes, states = len(readBack(t, b, b.kcfg.TopicChanges)), len(readBack(t, b, b.kcfg.TopicState))
	restore()
	setTimeline(t, b, 1)
	require.NoError(t, outbox.Enqueue(ctx, b.db.Pool, t0, flightChanges(2, 7)...))
	d, lease, _ = successor(t, b)
	err := d.ReadTail(ctx, lease)
	require.ErrorIs(t, err, dispatch.ErrStrayDatabase)
	require.ErrorContains(t, err, `msgxctl db restored --reason`)
	return d, lease, changes, states
}

// The same dump restored into the same cluster (its system identifier): nothing msgx recorded
// tells it from the old primary a failover left behind, so the dispatcher sends nothing and says
// which command to run; after msgxctl db restored (outbox.ConfirmRestore) the next try resumes.
func TestRestoreFromBeforeAFailoverWaitsForTheOperator(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	ctx := context.Background()
	d, lease, changes, _ := refusedAfterAFailover(t, b)
	require.Len(t, readBack(t, b, b.kcfg.TopicChanges), changes, "nothing sent")

	require.NoError(t, outbox.ConfirmRestore(ctx, b.db.Pool, outbox.Admin{Actor: "ops", Reason: "restored the dump of 03:00"}, t0))
	require.NoError(t, d.ReadTail(ctx, lease))
	require.NoError(t, outbox.Enqueue(ctx, b.db.Pool, t0, flightChanges(3, 7)...))
	deliverAll(t, b, d, lease)
	require.Equal(t, map[string]int64{"7": 3}, requireEventIdentity(t, b))
	require.Equal(t, map[string]int{outbox.RestoreConfirmed: 1}, restoreKinds(t, b))
	var detail string
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT detail FROM db_restore`).Scan(&detail))
	require.True(t, strings.Contains(detail, "confirmed by ops") && strings.Contains(detail, "restored the dump of 03:00"), detail)
}

// An old primary left behind by a failover (writable, on the old timeline) stays refused however
// long its dispatcher retries: the tail starts at the dispatcher's own last commit, which a
// refusing dispatcher does not move, not at the other roles' lease renewals, which go on. Nothing
// is sent from it, so the state topic does not go back either.
func TestOldPrimaryStaysRefused(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	ctx := context.Background()
	d, lease, _, states := refusedAfterAFailover(t, b)
	_, err := b.db.Pool.Exec(ctx, `INSERT INTO leader_lease (role, epoch, holder, backend_pid, acquired_at, renewed_at) VALUES ('processor', 1, 'p', 0, $1, $1)`,
		time.Now().Add(time.Hour))
	require.NoError(t, err)
	require.ErrorIs(t, d.ReadTail(ctx, lease), dispatch.ErrStrayDatabase, "an hour later")
	require.Len(t, readBack(t, b, b.kcfg.TopicState), states, "nothing sent")
}

// Point-in-time recovery with archive recovery ends on a new timeline: the ids are above every id
// published without a raise, the versions published after the recovery target are not sent
// again, and the state topic does not go back.
func TestPointInTimeRecoveryResumes(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	restore := history(t, b, 1, nil, 7, 8)

	restore()
	setTimeline(t, b, 2)
	resume(t, b, flightChanges(2, 7, 8), flightChanges(3, 7))
	require.Equal(t, map[string]int64{"7": 3, "8": 2}, requireEventIdentity(t, b))
	require.Empty(t, restoreKinds(t, b), "the new timeline is enough")
}

func gauge(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}
