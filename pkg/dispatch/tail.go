package dispatch

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/msgx/msgx/pkg/event"
	"github.com/msgx/msgx/pkg/kafka"
	"github.com/msgx/msgx/pkg/leader"
	"github.com/msgx/msgx/pkg/outbox"
)

// TopicReader reads topic as a read_committed consumer from the first record at or after since
// (zero: from the log start) up to the high-water mark when the read began: kafka.ReadCommittedSince.
type TopicReader func(ctx context.Context, topic string, since time.Time, fn func(kafka.ConsumedRecord) error) error

// ReadTail runs at the start of every term, before anything is sent. It records the database's
// timeline (a higher one than recorded: the database was promoted), then reads what both topics
// took since the last commit the database kept (outbox.Store.TailFrom, less Config.TailMargin):
// records a primary sent before a failover that lost its last transactions, or that the broker
// acknowledged just before a crash. The state topic's versions raise msg_state_sent, so the state
// topic never goes back; the changes topic's versions unknown as sent are recorded
// (msg_event's held records) and never sent again, so a re-send is an identical duplicate only.
// Without a reader (Config.TailReader nil) only the timeline is checked.
func (d *Dispatcher) ReadTail(ctx context.Context, lease leader.Lease) error {
	timeline, err := d.checkTimeline(ctx)
	if err != nil {
		return err
	}
	if d.cfg.TailReader == nil {
		return nil
	}
	start := time.Now()
	from, err := d.store.TailFrom(ctx, lease.Role, d.cfg.TailMargin)
	if err != nil {
		return err
	}
	changes, newest, err := d.readChangesTail(ctx, lease, from)
	if err != nil {
		return err
	}
	if newest > timeline {
		d.log.Error().Int64("timeline", timeline).Int64("kafka_timeline", newest).
			Msg("dispatcher: Kafka holds events of a newer database timeline: this server is an old primary left behind by a failover; nothing is sent from it")
		return fmt.Errorf("%w: database timeline %d, Kafka has events of timeline %d", ErrStrayDatabase, timeline, newest)
	}
	states, err := d.readStateTail(ctx, lease, from)
	if err != nil {
		return err
	}
	held, err := d.store.HeldChanges(ctx)
	if err != nil {
		return err
	}
	d.held = held
	d.log.Info().Time("from", from).Int("change_records", changes).Int("state_records", states).
		Int("held_flights", len(held)).Dur("took", time.Since(start)).Msg("dispatcher: read the topics' tail")
	return nil
}

// ErrStrayDatabase means the database is on an older timeline than events Kafka holds: an old
// primary still writable after a standby was promoted. The dispatcher does not publish from it.
var ErrStrayDatabase = errors.New("dispatcher: the database is an old primary")

// checkTimeline records the database's timeline and reports a promotion. It returns the timeline.
func (d *Dispatcher) checkTimeline(ctx context.Context) (int64, error) {
	cur, prev, err := d.store.Timeline(ctx, d.clock.Now())
	if err != nil {
		return 0, err
	}
	d.m.timeline.Set(float64(cur))
	if prev != 0 && cur != prev {
		d.m.timelineChanges.Inc()
		d.log.Warn().Int64("timeline", cur).Int64("previous_timeline", prev).
			Msg("dispatcher: the database is on a new timeline (a standby was promoted, or a backup restored); reading what Kafka holds beyond it")
	}
	return cur, nil
}

// readChangesTail records the changes topic's records since from that the database does not
// know as sent, and reports versions it has no event for (a lost tail). It returns the records
// read and the newest timeline their event ids carry.
func (d *Dispatcher) readChangesTail(ctx context.Context, lease leader.Lease, from time.Time) (int, int64, error) {
	var recs []outbox.Held
	n, newest := 0, int64(0)
	err := d.cfg.TailReader(ctx, d.cfg.TopicChanges, from, func(r kafka.ConsumedRecord) error {
		n++
		v, err1 := strconv.ParseInt(r.Header("state_version"), 10, 64)
		id, err2 := strconv.ParseInt(r.Header("event_id"), 10, 64)
		if err1 != nil || err2 != nil {
			return nil // not a msgx record (the contract's headers are missing)
		}
		newest = max(newest, id>>40)
		recs = append(recs, outbox.Held{FLID: r.Key, StateVersion: v, EventID: id, ValueSHA256: outbox.ValueSHA256(r.Value), Time: r.Timestamp})
		return nil
	})
	if err != nil {
		return n, 0, fmt.Errorf("read %s tail: %w", d.cfg.TopicChanges, err)
	}
	c, err := d.store.RecordHeld(ctx, lease, recs)
	if err != nil {
		return n, 0, err
	}
	if c.Beyond > 0 {
		d.m.lostTail.Add(float64(c.Beyond))
		d.log.Error().Int("records", c.Beyond).Str("topic", d.cfg.TopicChanges).
			Msg("dispatcher: Kafka holds change records this database has no event for: it lost its last transactions (an asynchronous failover); they will not be sent again (runbook: PostgreSQL failover)")
	}
	if c.Held > 0 {
		d.log.Warn().Int("records", c.Held).Str("topic", d.cfg.TopicChanges).
			Msg("dispatcher: Kafka holds change records this database did not know as sent; their versions are not sent again")
	}
	return n, newest, nil
}

// readStateTail raises each FLID's sent state version to the newest the state topic holds since
// from. It returns the records read.
func (d *Dispatcher) readStateTail(ctx context.Context, lease leader.Lease, from time.Time) (int, error) {
	newest := map[string]int64{}
	n := 0
	err := d.cfg.TailReader(ctx, d.cfg.TopicState, from, func(r kafka.ConsumedRecord) error {
		n++
		if v, err := strconv.ParseInt(r.Header("state_version"), 10, 64); err == nil && v > newest[r.Key] {
			newest[r.Key] = v
		}
		return nil
	})
	if err != nil {
		return n, fmt.Errorf("read %s tail: %w", d.cfg.TopicState, err)
	}
	states := make([]outbox.Claimed, 0, len(newest))
	for flid, v := range newest {
		states = append(states, outbox.Claimed{Target: event.TargetSchd, FLID: flid, StateVersion: v})
	}
	if _, err := d.store.MarkStatesSent(ctx, lease, states, d.clock.Now(), 0); err != nil {
		return n, err
	}
	return n, nil
}

// dropHeld takes out of claimed the events whose (FLID, version) the changes topic already
// holds: it marks them SENT without sending. A held record whose value differs from the event's
// (a re-derivation that came out differently) is logged and counted: the version is on Kafka
// and is not sent a second time with another value.
func (d *Dispatcher) dropHeld(ctx context.Context, lease leader.Lease, claimed []outbox.Claimed) ([]outbox.Claimed, int, error) {
	if len(d.held) == 0 {
		return claimed, 0, nil
	}
	send := claimed[:0:0]
	var already []int64
	for _, c := range claimed {
		h, ok := d.held[c.FLID][c.StateVersion]
		if !ok {
			send = append(send, c)
			continue
		}
		already = append(already, c.EventID)
		if outbox.ValueSHA256(record(d.cfg.TopicChanges, lease.Epoch, c).Value) != h.ValueSHA256 {
			d.m.heldConflicts.Inc()
			d.log.Error().Str("flid", c.FLID).Int64("state_version", c.StateVersion).Int64("event_id", c.EventID).
				Int64("kafka_event_id", h.EventID).Msg("dispatcher: Kafka holds this version with another value; not sent again")
		}
	}
	if len(already) == 0 {
		return send, 0, nil
	}
	if _, err := d.store.MarkSent(ctx, lease, already, d.clock.Now()); err != nil {
		return nil, 0, err
	}
	d.m.heldSkipped.Add(float64(len(already)))
	d.log.Info().Int("events", len(already)).Msg("dispatcher: versions Kafka already holds marked SENT without sending")
	return send, len(already), nil
}
