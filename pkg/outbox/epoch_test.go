package outbox_test

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/event"
	"github.com/msgx/msgx/pkg/outbox"
)

// published is what Kafka holds of the events: their ids and the records they name.
func published(t *testing.T, b bundle, where string) []outbox.KafkaEvent {
	t.Helper()
	rows, err := b.db.Pool.Query(context.Background(), `SELECT event_id, target, partition_key, state_version FROM msg_event WHERE `+where+` ORDER BY event_id`)
	require.NoError(t, err)
	defer rows.Close()
	var out []outbox.KafkaEvent
	for rows.Next() {
		var e outbox.KafkaEvent
		require.NoError(t, rows.Scan(&e.EventID, &e.Target, &e.FLID, &e.StateVersion))
		out = append(out, e)
	}
	require.NoError(t, rows.Err())
	return out
}

// seqValue is the last value the event id sequence gave.
func seqValue(t *testing.T, b bundle) int64 {
	t.Helper()
	var v int64
	require.NoError(t, b.db.Pool.QueryRow(context.Background(), `SELECT last_value FROM msg_event_event_id_seq`).Scan(&v))
	return v
}

// A physical backup started without archive recovery keeps the timeline: the restored sequence
// draws again ids the old server published after the backup, here for other records (one batch
// rolled back after drawing its ids, as a fenced or failed batch does). SettleEpoch, given the
// records Kafka holds, finds ids the database did not draw or gives to other events, raises the
// epoch, and renumbers the events drawn since the restore: no id names two records, every new id
// is above every published one, and each FLID keeps its order.
func TestSettleEpochAfterARestoreThatKeptTheTimeline(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	require.NoError(t, outbox.Enqueue(ctx, b.db.Pool, t0, msgEvent(1, 1), msgEvent(2, 1)))
	_, err := b.db.Pool.Exec(ctx, `UPDATE msg_event SET status = 'SENT', sent_at = $1`, t0)
	require.NoError(t, err)
	backup := seqValue(t, b)
	_, err = b.db.Pool.Exec(ctx, `BEGIN; SELECT nextval('msg_event_event_id_seq') FROM generate_series(1, 3); ROLLBACK;`)
	require.NoError(t, err)
	require.NoError(t, outbox.Enqueue(ctx, b.db.Pool, t0, msgEvent(1, 2), msgEvent(3, 1), msgEvent(2, 2)))
	onKafka := published(t, b, "true")

	// The restore: the backup's rows and sequence; the processor derives the lost work again
	// before the dispatcher's term starts, in one batch (no rollback this time).
	_, err = b.db.Pool.Exec(ctx, `DELETE FROM msg_event WHERE event_id > `+strconv.FormatInt(backup, 10)+`;
		SELECT setval('msg_event_event_id_seq', `+strconv.FormatInt(backup, 10)+`)`)
	require.NoError(t, err)
	require.NoError(t, outbox.Enqueue(ctx, b.db.Pool, t0, msgEvent(1, 2), msgEvent(3, 1), msgEvent(2, 2), msgEvent(3, 2), msgEvent(1, 3), msgEvent(4, 1)))
	clash := 0
	for _, e := range published(t, b, "true") {
		for _, k := range onKafka {
			if k.EventID == e.EventID && k != e {
				clash++
			}
		}
	}
	require.Positive(t, clash, "the restored sequence gives published ids to other records")

	out, err := b.store.SettleEpoch(ctx, b.lease, outbox.EpochRequest{Now: t0, KafkaMax: onKafka[len(onKafka)-1].EventID, Records: onKafka})
	require.NoError(t, err)
	require.True(t, out.Raised)
	require.Equal(t, outbox.RestoreIDsBehind, out.Kind)
	require.Equal(t, int64(0), out.From)
	require.Equal(t, int64(1), out.To)
	require.Equal(t, int64(6), out.Renumbered, "every event drawn since the restore")
	require.Equal(t, int64(3), out.ForeignRecs)

	after := published(t, b, "true")
	top := slices.MaxFunc(onKafka, func(a, b outbox.KafkaEvent) int { return int(a.EventID - b.EventID) }).EventID
	for _, e := range after {
		for _, k := range onKafka {
			require.False(t, k.EventID == e.EventID && k != e, "event id %d names %v and %v", e.EventID, k, e)
		}
		if e.EventID > backup {
			require.Greater(t, e.EventID, top, "%v is not above every published id", e)
			require.Equal(t, int64(1), outbox.GenerationOf(e.EventID))
		}
	}
	var order []string
	for _, e := range after[2:] {
		order = append(order, e.FLID+"v"+strconv.FormatInt(e.StateVersion, 10))
	}
	require.Equal(t, []string{"1v2", "3v1", "2v2", "3v2", "1v3", "4v1"}, order, "the renumbered events keep their order")

	// New events are drawn above the renumbered ones; the raise is logged.
	require.NoError(t, outbox.Enqueue(ctx, b.db.Pool, t0, msgEvent(4, 2)))
	last := published(t, b, "true")
	require.Greater(t, last[len(last)-1].EventID, after[len(after)-1].EventID)
	rs, err := outbox.Restores(ctx, b.db.Pool)
	require.NoError(t, err)
	require.Len(t, rs, 1)
	require.Equal(t, outbox.Restore{Epoch: 1, PreviousEpoch: 0, RaisedAt: rs[0].RaisedAt, Kind: outbox.RestoreIDsBehind, Detail: rs[0].Detail,
		SystemID: rs[0].SystemID, Timeline: 0, KafkaEventID: top, Renumbered: 6}, rs[0])
	require.True(t, rs[0].RaisedAt.Equal(t0))
	require.Contains(t, rs[0].Detail, "3 records of id generation 0")
}

// Records that are the database's own — its events sent, one sent again after a lost
// acknowledgement, an id whose event retention deleted, an id of a batch that rolled back — do
// not raise the epoch; SettleEpoch records the server it saw.
func TestSettleEpochKeepsTheEpochForItsOwnIDs(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	require.NoError(t, outbox.Enqueue(ctx, b.db.Pool, t0, msgEvent(1, 1), msgEvent(2, 1), msgEvent(1, 2)))
	own := published(t, b, "true")
	_, err := b.db.Pool.Exec(ctx, `BEGIN; SELECT nextval('msg_event_event_id_seq'); ROLLBACK;`)
	require.NoError(t, err)
	rolledBack := seqValue(t, b)
	_, err = b.db.Pool.Exec(ctx, `DELETE FROM msg_event WHERE partition_key = '2'`) // the retention
	require.NoError(t, err)
	recs := append(own, own[0], outbox.KafkaEvent{EventID: rolledBack, Target: event.TargetMsg, FLID: "9", StateVersion: 1})

	out, err := b.store.SettleEpoch(ctx, b.lease, outbox.EpochRequest{Now: t0, KafkaMax: rolledBack, Records: recs})
	require.NoError(t, err)
	require.False(t, out.Raised)
	require.Equal(t, outbox.EpochOutcome{Generation: 0}, out)
	require.Equal(t, own[0].EventID, published(t, b, "true")[0].EventID, "nothing renumbered")

	id, err := b.store.Identity(ctx)
	require.NoError(t, err)
	require.NotZero(t, id.SystemID, "the test server shows its system identifier")
	require.Equal(t, id.SystemID, id.SeenSystemID, "recorded")
	require.Equal(t, int64(0), id.Epoch)
}

// A raise asked for (another cluster, an older timeline, an operator's confirmation) puts the
// generation above the highest id of Kafka and of msg_event, renumbers only unsent events (sent
// ones keep the ids Kafka knows them by), and refuses to take ids past 2^53.
func TestSettleEpochRaisesAboveKafkaAndTheDatabase(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	require.NoError(t, outbox.Enqueue(ctx, b.db.Pool, t0, msgEvent(1, 1), msgEvent(2, 1)))
	sent := published(t, b, "true")
	_, err := b.store.MarkSent(ctx, b.lease, []int64{sent[0].EventID}, t0)
	require.NoError(t, err)
	kafkaMax := int64(5)<<40 + 77

	out, err := b.store.SettleEpoch(ctx, b.lease, outbox.EpochRequest{Now: t0, Kind: outbox.RestoreConfirmed, Detail: "ops said so", KafkaMax: kafkaMax})
	require.NoError(t, err)
	require.Equal(t, outbox.EpochOutcome{Raised: true, Kind: outbox.RestoreConfirmed, Detail: "ops said so", From: 0, To: 6, Generation: 6, Renumbered: 1}, out)
	after := published(t, b, "true")
	require.Equal(t, sent[0].EventID, after[0].EventID, "a sent event keeps its id")
	require.Equal(t, int64(6), outbox.GenerationOf(after[1].EventID))

	// msg_event's own ids above the generation (a dump of a higher timeline) count too.
	_, err = b.db.Pool.Exec(ctx, `UPDATE msg_event SET event_id = (9::bigint << 40) + 1 WHERE status = 'SENT'`)
	require.NoError(t, err)
	out, err = b.store.SettleEpoch(ctx, b.lease, outbox.EpochRequest{Now: t0, Kind: outbox.RestoreOlderTimeline, Detail: "x"})
	require.NoError(t, err)
	require.Equal(t, int64(10), out.Generation)

	_, err = b.store.SettleEpoch(ctx, b.lease, outbox.EpochRequest{Now: t0, Kind: outbox.RestoreConfirmed, Detail: "x", KafkaMax: int64(8191) << 40})
	require.ErrorIs(t, err, outbox.ErrEpochLimit)
	_, err = b.db.Pool.Exec(ctx, `SELECT msgx_raise_epoch(10)`)
	require.ErrorContains(t, err, "does not raise it")
	_, err = b.db.Pool.Exec(ctx, `SELECT msgx_raise_epoch(8192)`)
	require.ErrorContains(t, err, "would pass 2^53")
	id, err := b.store.Identity(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(10), id.Epoch, "a refused raise changes nothing")
}

// An operator's confirmation needs an actor and a reason and a refusal of the dispatcher's to
// answer, is audited, is read with the identity, and the next SettleEpoch clears it with the
// refusal, whether it raised or not.
func TestConfirmRestore(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	require.ErrorContains(t, outbox.ConfirmRestore(ctx, b.db.Pool, outbox.Admin{Actor: "ops"}, t0), "a reason is required")
	require.ErrorContains(t, outbox.ConfirmRestore(ctx, b.db.Pool, outbox.Admin{Reason: "x"}, t0), "an actor is required")
	require.ErrorIs(t, outbox.ConfirmRestore(ctx, b.db.Pool, outbox.Admin{Actor: "ops", Reason: "ahead of time"}, t0), outbox.ErrNothingToConfirm,
		"nothing refused: a confirmation given ahead could later adopt an old primary")

	require.NoError(t, b.store.RecordRefusal(ctx, b.lease, t0, int64(3)<<40))
	require.NoError(t, outbox.ConfirmRestore(ctx, b.db.Pool, outbox.Admin{Actor: "ops", Reason: "restored the 03:00 backup"}, t0))
	id, err := b.store.Identity(ctx)
	require.NoError(t, err)
	require.True(t, id.RefusedAt.Equal(t0))
	require.Equal(t, int64(3)<<40, id.RefusedKafkaID)
	require.Equal(t, &outbox.Confirmation{By: "ops", Reason: "restored the 03:00 backup", At: id.Confirmed.At}, id.Confirmed)
	require.True(t, id.Confirmed.At.Equal(t0))
	var audits int
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT count(*) FROM replay_audit WHERE action = 'db-restored' AND actor = 'ops' AND reason = 'restored the 03:00 backup'`).Scan(&audits))
	require.Equal(t, 1, audits)

	_, err = b.store.SettleEpoch(ctx, b.lease, outbox.EpochRequest{Now: t0})
	require.NoError(t, err)
	id, err = b.store.Identity(ctx)
	require.NoError(t, err)
	require.Nil(t, id.Confirmed, "the term start read it")
	require.True(t, id.RefusedAt.IsZero(), "and is not refused any more")
}

// The topics' tail starts at the dispatcher's newest commit the database kept, less the margin:
// not at the other roles' lease renewals, which the processes on a restored database write at
// once, long after the records the old server published.
func TestTailFromIsTheDispatchersLastKeptCommit(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	from, err := b.store.TailFrom(ctx, 5*time.Minute)
	require.NoError(t, err)
	require.True(t, from.IsZero(), "nothing sent: the topics are read whole")

	require.NoError(t, outbox.Enqueue(ctx, b.db.Pool, t0, msgEvent(1, 1), event.Event{Target: event.TargetSchd, FLID: 1, Type: event.Tombstone, StateVersion: 1}))
	heads, _, err := b.store.ClaimHeads(ctx, t0, 10)
	require.NoError(t, err)
	_, err = b.store.MarkSent(ctx, b.lease, ids(heads), t0.Add(time.Minute))
	require.NoError(t, err)
	_, err = b.store.MarkStatesSent(ctx, b.lease, []outbox.Claimed{{Target: event.TargetSchd, FLID: "1", StateVersion: 1}}, t0.Add(2*time.Minute))
	require.NoError(t, err)
	_, err = b.db.Pool.Exec(ctx, `INSERT INTO leader_lease (role, epoch, holder, backend_pid, acquired_at, renewed_at) VALUES ('processor', 1, 'p', 0, $1, $1)`,
		t0.Add(3*time.Hour))
	require.NoError(t, err)
	from, err = b.store.TailFrom(ctx, 5*time.Minute)
	require.NoError(t, err)
	require.Equal(t, t0.Add(2*time.Minute-5*time.Minute), from.UTC())
}
