package dispatch

import (
	"context"
	"errors"
	"fmt"
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
// took since the dispatcher's last commit the database kept (outbox.Store.TailFrom, less
// Config.TailMargin): records a primary sent before a failover or a restore that lost its last
// transactions, or that the broker acknowledged just before a crash. Before anything is written
// it compares the event ids the topics hold with the database (restoreRequest): a database behind
// them gets a raised restore epoch, so its ids stay above every id published (outbox.SettleEpoch),
// or, where it cannot be told from an old primary left behind by a failover, nothing is sent
// (ErrStrayDatabase) until an operator confirms the restore. The changes topic's versions unknown
// as sent are recorded (msg_event's held records) and never sent again, so a re-send is an
// identical duplicate only; last, the state topic's versions raise msg_state_sent, so the state
// topic never goes back. Without a reader (Config.TailReader nil) only the timeline is checked.
func (d *Dispatcher) ReadTail(ctx context.Context, lease leader.Lease) error {
	if _, err := d.checkTimeline(ctx); err != nil {
		return err
	}
	if d.cfg.TailReader == nil {
		return nil
	}
	start := time.Now()
	id, err := d.store.Identity(ctx)
	if err != nil {
		return err
	}
	from, err := d.store.TailFrom(ctx, d.cfg.TailMargin)
	if err != nil {
		return err
	}
	t, err := d.readTopics(ctx, from, id.Generation())
	if err != nil {
		return err
	}
	req, err := restoreRequest(id, t, d.clock.Now())
	if err != nil {
		d.log.Error().Int64("timeline", id.Timeline).Int64("restore_epoch", id.Epoch).Int64("kafka_event_id", t.max).
			Msg("dispatcher: Kafka holds event ids of a newer generation than this database draws: it is an old primary left behind by a failover " +
				"(fence it), or a backup restored on purpose (then run: msgxctl db restored --reason …); nothing is sent from it")
		return errors.Join(err, d.store.RecordRefusal(ctx, lease, d.clock.Now(), t.max))
	}
	if err := d.recordHeld(ctx, lease, t.changes); err != nil {
		return err
	}
	out, err := d.store.SettleEpoch(ctx, lease, req)
	if err != nil {
		return err
	}
	d.reportEpoch(id, out)
	if err := d.raiseStates(ctx, lease, t.states); err != nil {
		return err
	}
	held, err := d.store.HeldChanges(ctx)
	if err != nil {
		return err
	}
	d.held = held
	d.log.Info().Time("from", from).Int("change_records", t.changeRecords).Int("state_records", t.stateRecords).
		Int("foreign_records", t.foreign).Int("held_flights", len(held)).Int64("id_generation", out.Generation).Dur("took", time.Since(start)).Msg("dispatcher: read the topics' tail")
	return nil
}

// ErrStrayDatabase means Kafka holds event ids of a newer generation than the database draws,
// and nothing msgx recorded of the database says it was restored on purpose: an old primary still
// writable after a standby was promoted, or a backup restored from before a failover or a raise
// of the restore epoch. The dispatcher does not publish from it until an operator confirms a
// restore (msgxctl db restored).
var ErrStrayDatabase = errors.New("dispatcher: the database is behind event ids Kafka holds (an old primary left behind by a failover, or a backup restored)")

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

// tail is what the topics took since the tail's start.
type tail struct {
	changes []outbox.Held       // the changes topic's records
	states  map[string]int64    // the newest version per FLID on the state topic
	own     []outbox.KafkaEvent // the records of both topics in the database's id generation
	max     int64               // the highest event id of both topics (0: none)

	changeRecords, stateRecords int
	foreign                     int // records whose headers do not parse
}

// readTopics reads both topics from from; gen is the database's id generation (tail.own). A
// record whose headers do not parse (event.Parse) is not taken for msgx's: it is counted, the first
// one logged, and left out.
func (d *Dispatcher) readTopics(ctx context.Context, from time.Time, gen int64) (tail, error) {
	t := tail{states: map[string]int64{}}
	// read parses a record of target's topic and notes its event id; ok is false for one that does not parse.
	read := func(target string, r kafka.ConsumedRecord) (event.Received, bool) {
		e, err := event.Parse(r.Key, r.Value, r.Headers)
		if err != nil {
			t.foreign++
			if t.foreign == 1 {
				d.log.Warn().Err(err).Str("topic", r.Topic).Int32("partition", r.Partition).Int64("offset", r.Offset).
					Msg("dispatcher: a record on the topic does not follow docs/events.md (not msgx's, or of a schema version this msgx does not know); it is left out of the tail")
			}
			return e, false
		}
		t.max = max(t.max, e.EventID)
		if outbox.GenerationOf(e.EventID) == gen {
			t.own = append(t.own, outbox.KafkaEvent{EventID: e.EventID, Target: target, FLID: e.FLID, StateVersion: e.StateVersion})
		}
		return e, true
	}
	err := d.cfg.TailReader(ctx, d.cfg.TopicChanges, from, func(r kafka.ConsumedRecord) error {
		t.changeRecords++
		if e, ok := read(event.TargetMsg, r); ok {
			t.changes = append(t.changes, outbox.Held{FLID: e.FLID, StateVersion: e.StateVersion, EventID: e.EventID, ValueSHA256: outbox.ValueSHA256(r.Value), Time: r.Timestamp})
		}
		return nil
	})
	if err != nil {
		return t, fmt.Errorf("read %s tail: %w", d.cfg.TopicChanges, err)
	}
	err = d.cfg.TailReader(ctx, d.cfg.TopicState, from, func(r kafka.ConsumedRecord) error {
		t.stateRecords++
		if e, ok := read(event.TargetSchd, r); ok {
			t.states[e.FLID] = max(t.states[e.FLID], e.StateVersion)
		}
		return nil
	})
	if err != nil {
		return t, fmt.Errorf("read %s tail: %w", d.cfg.TopicState, err)
	}
	return t, nil
}

// restoreRequest decides what the term start settles about the restore epoch (INV-10c). The
// database draws ids of generation g (its timeline + its epoch); Kafka's newest are of kg.
//   - msg_event holds ids above g: the database went to a lower timeline than its own data
//     (a logical dump restored into another cluster): raise.
//   - kg ≤ g: the records of g are compared with msg_event under the pipeline lock (SettleEpoch):
//     one the database did not draw, or gives to another event, raises (a restore that kept the
//     timeline).
//   - kg > g: either an old primary left behind by a failover, or a restore. It is a restore when
//     the server is another cluster than msgx last saw, or on an older timeline than the database
//     recorded itself (an old primary has never seen a newer timeline of its own data), or an
//     operator confirmed it; otherwise ErrStrayDatabase.
func restoreRequest(id outbox.Identity, t tail, now time.Time) (outbox.EpochRequest, error) {
	req := outbox.EpochRequest{Now: now, KafkaMax: t.max, Records: t.own}
	g, kg := id.Generation(), outbox.GenerationOf(t.max)
	switch {
	case outbox.GenerationOf(id.MaxEventID) > g:
		req.Kind = outbox.RestoreOlderTimeline
		req.Detail = fmt.Sprintf("msg_event holds event ids of generation %d, above the %d this database draws (timeline %d, restore epoch %d): "+
			"its data comes from a higher timeline (a logical dump restored)", outbox.GenerationOf(id.MaxEventID), g, id.Timeline, id.Epoch)
	case kg <= g:
		// SettleEpoch compares the records of g with msg_event, under the pipeline lock.
	case id.SystemID != 0 && id.SeenSystemID != 0 && id.SystemID != id.SeenSystemID:
		req.Kind = outbox.RestoreOtherCluster
		req.Detail = fmt.Sprintf("the server's system identifier is %d, msgx last saw %d: the database was restored into another cluster; "+
			"Kafka holds ids of generation %d, this database draws %d", id.SystemID, id.SeenSystemID, kg, g)
	case id.Timeline < id.MaxTimeline:
		req.Kind = outbox.RestoreOlderTimeline
		req.Detail = fmt.Sprintf("the server is on timeline %d, the database recorded timeline %d: it was restored onto a lower timeline; "+
			"Kafka holds ids of generation %d, this database draws %d", id.Timeline, id.MaxTimeline, kg, g)
	case id.Confirmed != nil:
		req.Kind = outbox.RestoreConfirmed
		req.Detail = fmt.Sprintf("restored on purpose, confirmed by %s at %s: %s; Kafka holds ids of generation %d, this database draws %d",
			id.Confirmed.By, id.Confirmed.At.UTC().Format(time.RFC3339), id.Confirmed.Reason, kg, g)
	default:
		return req, fmt.Errorf("%w: it draws event ids of generation %d (timeline %d, restore epoch %d), Kafka holds generation %d; "+
			"fence it if it is an old primary; if it was restored from a backup on purpose, run: msgxctl db restored --reason \"…\" "+
			"(docs/runbook.md, \"Restore from a PostgreSQL backup\")", ErrStrayDatabase, g, id.Timeline, id.Epoch, kg)
	}
	return req, nil
}

// reportEpoch logs and counts what SettleEpoch did.
func (d *Dispatcher) reportEpoch(id outbox.Identity, out outbox.EpochOutcome) {
	d.m.epoch.Set(float64(out.To))
	if out.Raised {
		d.m.restores.WithLabelValues(out.Kind).Inc()
		d.log.Warn().Str("kind", out.Kind).Str("detail", out.Detail).Int64("restore_epoch", out.To).Int64("previous_restore_epoch", out.From).
			Int64("id_generation", out.Generation).Int64("renumbered", out.Renumbered).
			Msg("dispatcher: the database was restored behind event ids Kafka holds; the restore epoch is raised, new event ids are above every id published, unsent events renumbered")
		return
	}
	if id.SystemID != 0 && id.SeenSystemID != 0 && id.SystemID != id.SeenSystemID {
		d.log.Warn().Int64("system_identifier", id.SystemID).Int64("previous_system_identifier", id.SeenSystemID).
			Msg("dispatcher: the database is in another cluster than msgx last saw (a restore or a copy); no event id Kafka holds reaches the ids it draws")
	}
}

// recordHeld records the change records the database does not know as sent, and reports versions
// it has no event for (a lost tail).
func (d *Dispatcher) recordHeld(ctx context.Context, lease leader.Lease, recs []outbox.Held) error {
	c, err := d.store.RecordHeld(ctx, lease, recs)
	if err != nil {
		return err
	}
	if c.Beyond > 0 {
		d.m.lostTail.Add(float64(c.Beyond))
		d.log.Error().Int("records", c.Beyond).Str("topic", d.cfg.TopicChanges).
			Msg("dispatcher: Kafka holds change records this database has no event for: it lost its last transactions (an asynchronous failover, or a restore); they will not be sent again (runbook: PostgreSQL failover)")
	}
	if c.Held > 0 {
		d.log.Warn().Int("records", c.Held).Str("topic", d.cfg.TopicChanges).
			Msg("dispatcher: Kafka holds change records this database did not know as sent; their versions are not sent again")
	}
	return nil
}

// raiseStates raises each FLID's sent state version to the newest the state topic holds.
func (d *Dispatcher) raiseStates(ctx context.Context, lease leader.Lease, newest map[string]int64) error {
	states := make([]outbox.Claimed, 0, len(newest))
	for flid, v := range newest {
		states = append(states, outbox.Claimed{Target: event.TargetSchd, FLID: flid, StateVersion: v})
	}
	_, err := d.store.MarkStatesSent(ctx, lease, states, d.clock.Now())
	return err
}

// dropHeld takes out of claimed the events whose (FLID, version) the changes topic already
// holds: it marks them SENT without sending. A held record whose value differs from the event's
// (a re-derivation that came out differently) is logged and counted: the version is on Kafka
// and is not sent a second time with another value. A held event behind one of its FLID that is
// to be sent ends the FLID's run in this claim: it is marked only once its predecessor is SENT,
// so no event is SENT while an earlier one of its FLID may still fail.
func (d *Dispatcher) dropHeld(ctx context.Context, lease leader.Lease, claimed []outbox.Claimed) ([]outbox.Claimed, int, error) {
	if len(d.held) == 0 {
		return claimed, 0, nil
	}
	send := claimed[:0:0]
	var already []int64
	sending, cut := map[string]bool{}, map[string]bool{}
	for _, c := range claimed {
		if cut[c.FLID] {
			continue
		}
		h, ok := d.held[c.FLID][c.StateVersion]
		if !ok {
			send = append(send, c)
			sending[c.FLID] = true
			continue
		}
		if sending[c.FLID] {
			cut[c.FLID] = true
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
