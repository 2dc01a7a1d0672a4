package dispatch_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/dev/kafkatest"
	"github.com/msgx/msgx/pkg/dispatch"
	"github.com/msgx/msgx/pkg/event"
	"github.com/msgx/msgx/pkg/kafka"
	"github.com/msgx/msgx/pkg/outbox"
)

// TestLongRunsArriveInOrder: a claim takes each FLID's whole run (here 450 versions of one
// flight and 30 of another) and one batch sends it through the production producer; every
// version arrives once, in order.
func TestLongRunsArriveInOrder(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	ctx := context.Background()
	var evs []event.Event
	for v := int64(1); v <= 450; v++ {
		evs = append(evs, msgEvent(7, v))
		if v <= 30 {
			evs = append(evs, msgEvent(8, v))
		}
	}
	require.NoError(t, outbox.Enqueue(ctx, b.db.Pool, t0, evs...))
	res, err := b.disp.StepMsg(ctx, b.lease)
	require.NoError(t, err)
	require.Equal(t, 480, res.Sent, "one step: %+v", res)
	recs := kafkatest.ConsumeAll(t, b.broker.Addrs(), b.kcfg.TopicChanges, time.Minute)
	require.Len(t, recs, 480)
	require.Empty(t, checkStream(t, recs, map[string]int64{"7": 450, "8": 30}))
}

// TestRejectedRecordChargesNoOtherEvent: the broker rejects the partition batch of one record
// that is too large; its partition neighbours and the records aborted with it are innocent. Only
// the large record goes DEAD; no other event is charged an attempt, the later versions wait
// (PENDING, no attempt) and go out at the next step, but for the one its DEAD predecessor holds.
func TestRejectedRecordChargesNoOtherEvent(t *testing.T) {
	t.Parallel()
	b := smallBroker(t)
	ctx := context.Background()
	var evs []event.Event
	for f := int64(1); f <= 40; f++ {
		if f == 5 {
			evs = append(evs, tooLarge(5))
			continue
		}
		evs = append(evs, msgEvent(f, 1))
	}
	for f := int64(1); f <= 40; f++ {
		evs = append(evs, msgEvent(f, 2))
	}
	require.NoError(t, outbox.Enqueue(ctx, b.db.Pool, t0, evs...))

	res, err := b.disp.StepMsg(ctx, b.lease)
	require.NoError(t, err)
	require.Equal(t, 1, res.Dead, "only the large record: %+v", res)
	require.Zero(t, res.Retried, "no innocent record charged: %+v", res)
	require.Equal(t, 39, res.Sent, "every other version 1")
	var charged int
	require.NoError(t, b.db.Pool.QueryRow(ctx,
		`SELECT count(*) FROM msg_event WHERE attempts > 0 AND NOT (partition_key = '5' AND state_version = 1)`).Scan(&charged))
	require.Zero(t, charged)

	res, err = b.disp.StepMsg(ctx, b.lease)
	require.NoError(t, err)
	require.Equal(t, 39, res.Sent, "the versions 2 but FLID 5's: %+v", res)
	require.Equal(t, 78, countStatus(t, b, outbox.StatusSent))
	dead, err := b.store.ListDead(ctx, outbox.DeadFilter{})
	require.NoError(t, err)
	require.Len(t, dead, 1)
	require.Equal(t, "5", dead[0].FLID)
	require.Equal(t, int64(1), dead[0].Holding)
}

// TestHeldVersionWaitsForItsPredecessor: at a term's start the changes topic may hold later
// versions of a flight whose earlier version the database has still to send (here produced
// before the term; in production a lost tail). The claim takes the flight's run; the earlier
// version is sent, and the held ones are marked SENT without sending only at the next step,
// once their predecessor is SENT: no event is ever SENT while an earlier one of its flight may
// still fail.
func TestHeldVersionWaitsForItsPredecessor(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	ctx := context.Background()
	require.NoError(t, b.disp.ReadTail(ctx, b.lease)) // records the timeline
	require.NoError(t, outbox.Enqueue(ctx, b.db.Pool, t0, msgEvent(7, 1), msgEvent(7, 2), msgEvent(7, 3)))
	rows, err := b.db.Pool.Query(ctx, `
		SELECT event_id, state_version, msg_id, body, created_at FROM msg_event WHERE state_version > 1 ORDER BY event_id`)
	require.NoError(t, err)
	var held []kafka.Record
	for rows.Next() {
		c := event.Claimed{Target: event.TargetMsg, FLID: "7", Type: event.Upsert}
		require.NoError(t, rows.Scan(&c.EventID, &c.StateVersion, &c.MsgID, &c.Payload, &c.CreatedAt))
		held = append(held, dispatch.KafkaRecord(b.kcfg.TopicChanges, event.Record(c, 7)))
	}
	rows.Close()
	require.NoError(t, rows.Err())
	require.Len(t, held, 2)
	for _, err := range b.producer.Send(ctx, held) {
		require.NoError(t, err)
	}

	d, lease, _ := successor(t, b)
	require.NoError(t, d.ReadTail(ctx, lease))
	res, err := d.StepMsg(ctx, lease)
	require.NoError(t, err)
	require.Equal(t, 1, res.Sent, "version 1 only: %+v", res)
	require.Equal(t, 1, countStatus(t, b, outbox.StatusSent))
	res, err = d.StepMsg(ctx, lease)
	require.NoError(t, err)
	require.Equal(t, 2, res.Sent, "versions 2 and 3, held: %+v", res)
	require.Equal(t, 3, countStatus(t, b, outbox.StatusSent))

	var versions []int64
	for _, r := range readBack(t, b, b.kcfg.TopicChanges) {
		e, err := event.Parse(r.Key, r.Value, r.Headers)
		require.NoError(t, err)
		versions = append(versions, e.StateVersion)
	}
	require.Equal(t, []int64{2, 3, 1}, versions, "the held versions are not sent again")
}
