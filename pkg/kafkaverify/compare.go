package kafkaverify

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/msgx/msgx/pkg/event"
	"github.com/msgx/msgx/pkg/flight"
	"github.com/msgx/msgx/pkg/outbox"
)

// Stored is what one PostgreSQL snapshot holds: every KAFKA:msg event still in msg_event, where
// each FLID's KAFKA:schd events stand, and every stored flight.
type Stored struct {
	Changes []outbox.ChangeEvent
	States  outbox.StateProgress
	Flights map[int64]*flight.State
	// Held are the change records the dispatcher found on the topic beyond what the database
	// knew as sent (outbox.ReadHeld); Timelines the database timelines recorded and Timeline the
	// current one (0: a standby).
	Held      map[string]map[int64]outbox.Held
	Timelines []int64
	Timeline  int64
	// Loc is the airport's zone: a state record's value carries its times' instants in it.
	Loc *time.Location
}

// Report is the outcome: what was compared, what could not be, and every difference.
type Report struct {
	Changes     ChangesSummary  `json:"changes"`
	State       StateSummary    `json:"state"`
	Failover    FailoverSummary `json:"failover"`
	Differences []Difference    `json:"differences"`
}

// FailoverSummary is what a database failover left behind.
type FailoverSummary struct {
	Timeline  int64   `json:"timeline"`  // the database's current timeline (0: read from a standby)
	Timelines []int64 `json:"timelines"` // every timeline the dispatcher ran on, oldest first
	// Held are change records found on the topic that the database did not know as sent (its
	// last transactions lost in a failover, or a crash after the broker's acknowledgement);
	// HeldBeyond of them were records of events the database did not have (a lost tail).
	Held       int `json:"held"`
	HeldBeyond int `json:"held_beyond"`
}

// OK reports whether the topics agree with PostgreSQL.
func (r Report) OK() bool { return len(r.Differences) == 0 }

// ChangesSummary counts the comparison of the changes topic.
type ChangesSummary struct {
	Topic   string `json:"topic"`
	Records int    `json:"records"` // read, read_committed
	// SentEvents are the SENT KAFKA:msg events in PostgreSQL, each looked up on the topic;
	// Matched of them were there with the event's value and event_id.
	SentEvents int `json:"sent_events"`
	Matched    int `json:"matched"`
	// IdenticalDuplicates are records beyond the first of a (flid, state_version), identical to it.
	IdenticalDuplicates int `json:"identical_duplicates"`
	// MatchedHeld are SENT events whose version the topic held before the database derived it
	// again after a failover: the topic's record (another event id) is the one the dispatcher
	// recorded, with the event's value; the event was not sent again.
	MatchedHeld int `json:"matched_held"`
	// NotInPostgreSQL are (flid, state_version)s on the topic without an event in msg_event: SENT
	// events older than MSGX_EVENT_RETENTION are deleted. Not compared.
	NotInPostgreSQL int `json:"not_in_postgresql"`
	// Unsent are (flid, state_version)s on the topic whose event is not SENT, by status (sent
	// after the snapshot, or its acknowledgement was lost). Not compared.
	Unsent map[string]int `json:"unsent"`
}

// StateSummary counts the comparison of the state topic.
type StateSummary struct {
	Topic   string `json:"topic"`
	Records int    `json:"records"` // read, read_committed (compaction keeps the newest per FLID)
	FLIDs   int    `json:"flids"`   // FLIDs with a record
	// Compared are the flights whose last record is the version PostgreSQL last sent and whose
	// stored state is that version (or which are purged): Matched of them agreed.
	Compared int `json:"compared"`
	Matched  int `json:"matched"`
	// WithoutInstants of Matched are records written before msgx published instants: the stored
	// state without its X_instant fields (they gain them when the flight changes again).
	WithoutInstants int `json:"without_instants"`
	// Pending are flights whose newest state is not sent yet (an unsent KAFKA:schd event): their
	// last record was checked against the version sent, not against the stored state.
	Pending int `json:"pending"`
	// NewerThanSnapshot are last records newer than the version PostgreSQL had sent when it was
	// read (sent since). Not compared.
	NewerThanSnapshot int `json:"newer_than_snapshot"`
	// TombstonesGone are deleted or purged flights without a record: compaction removes
	// tombstones. Nothing to compare.
	TombstonesGone int `json:"tombstones_gone"`
}

// Compare lists where the topics t disagree with PostgreSQL s, and counts what it compared.
func Compare(t *Topics, s Stored) Report {
	r := Report{
		Changes: ChangesSummary{Topic: t.ChangesTopic, Records: t.ChangeRecords, Unsent: map[string]int{}},
		State:   StateSummary{Topic: t.StateTopic, Records: t.StateRecords, FLIDs: len(t.states)},
	}
	r.Differences = slices.Clone(t.diffs)
	r.Failover = failover(s)
	r.Differences = append(r.Differences, compareChanges(t, s, &r.Changes)...)
	r.Differences = append(r.Differences, compareStates(t, s, &r.State)...)
	slices.SortStableFunc(r.Differences, func(a, b Difference) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(len(a.FLID), len(b.FLID)), cmp.Compare(a.FLID, b.FLID),
			cmp.Compare(a.StateVersion, b.StateVersion), cmp.Compare(a.Offset, b.Offset))
	})
	if r.Differences == nil {
		r.Differences = []Difference{}
	}
	return r
}

// compareChanges checks the duplicates of the changes topic and looks up every SENT event.
func compareChanges(t *Topics, s Stored, sum *ChangesSummary) []Difference {
	events := s.Changes
	var diffs []Difference
	for k, recs := range t.changes {
		for _, rec := range recs[1:] {
			if rec.identity != recs[0].identity {
				diffs = append(diffs, Difference{Kind: DuplicateDiffers, Topic: t.ChangesTopic, FLID: k.flid, StateVersion: k.version,
					Partition: rec.partition, Offset: rec.offset, Detail: fmt.Sprintf("differs from the record at offset %d", recs[0].offset)})
			} else {
				sum.IdenticalDuplicates++
			}
		}
	}
	inPG := make(map[changeKey]bool, len(events))
	for _, e := range events {
		k := changeKey{e.FLID, e.StateVersion}
		inPG[k] = true
		recs := t.changes[k]
		if e.Status != outbox.StatusSent {
			if len(recs) > 0 {
				sum.Unsent[e.Status]++
			}
			continue
		}
		sum.SentEvents++
		d := Difference{Topic: t.ChangesTopic, FLID: e.FLID, StateVersion: e.StateVersion, Offset: -1}
		switch {
		case len(recs) == 0:
			d.Kind, d.Detail = ChangeMissing, fmt.Sprintf("event %d is SENT in PostgreSQL", e.EventID)
		case heldMatch(s.Held, recs[0], e):
			sum.MatchedHeld++
			continue
		case !bytes.Equal(recs[0].valueSum, e.ValueSHA256) || recs[0].eventID != e.EventID:
			d.Kind, d.Partition, d.Offset = ChangeDiffers, recs[0].partition, recs[0].offset
			d.Detail = fmt.Sprintf("the record (event_id %d) is not event %d's value", recs[0].eventID, e.EventID)
		default:
			sum.Matched++
			continue
		}
		diffs = append(diffs, d)
	}
	for k, recs := range t.changes {
		if inPG[k] {
			continue
		}
		if f := stored(s.Flights, k.flid); f != nil && k.version > f.Version {
			diffs = append(diffs, Difference{Kind: BeyondDatabase, Topic: t.ChangesTopic, FLID: k.flid, StateVersion: k.version,
				Partition: recs[0].partition, Offset: recs[0].offset,
				Detail: fmt.Sprintf("PostgreSQL's flight is at version %d: the database lost this change (a failover), or has not derived it again yet", f.Version)})
			continue
		}
		sum.NotInPostgreSQL++
	}
	return diffs
}

// heldMatch reports whether rec is the held record of e's version and carries e's value.
func heldMatch(held map[string]map[int64]outbox.Held, rec changeRec, e outbox.ChangeEvent) bool {
	h, ok := held[e.FLID][e.StateVersion]
	return ok && h.EventID == rec.eventID && bytes.Equal(h.ValueSHA256[:], e.ValueSHA256) &&
		bytes.Equal(rec.valueSum, e.ValueSHA256)
}

func stored(flights map[int64]*flight.State, flid string) *flight.State {
	id, err := strconv.ParseInt(flid, 10, 64)
	if err != nil {
		return nil
	}
	return flights[id]
}

func failover(s Stored) FailoverSummary {
	f := FailoverSummary{Timeline: s.Timeline, Timelines: s.Timelines}
	for _, vs := range s.Held {
		for _, h := range vs {
			f.Held++
			if h.Beyond {
				f.HeldBeyond++
			}
		}
	}
	return f
}

// compareStates checks the last state record of every FLID that has one, was sent, or is stored.
func compareStates(t *Topics, s Stored, sum *StateSummary) []Difference {
	flids := map[string]bool{}
	for k := range t.states {
		flids[k] = true
	}
	for k := range s.States.Sent {
		flids[k] = true
	}
	for id := range s.Flights {
		flids[strconv.FormatInt(id, 10)] = true
	}
	var diffs []Difference
	for flid := range flids {
		var f *flight.State
		if id, err := strconv.ParseInt(flid, 10, 64); err == nil {
			f = s.Flights[id]
		}
		last, ok := t.states[flid]
		c := stateCase{topic: t.StateTopic, flid: flid, sent: s.States.Sent[flid], unsent: s.States.Unsent[flid], f: f, loc: s.Loc}
		var d *Difference
		if ok {
			d = c.compareLast(last, sum)
		} else {
			d = c.noRecord(sum)
		}
		if d != nil {
			diffs = append(diffs, *d)
		}
	}
	return diffs
}

// stateCase is one FLID's state as PostgreSQL has it.
type stateCase struct {
	topic        string
	flid         string
	sent, unsent int64         // the version sent (msg_state_sent), the newest unsent one (0: none)
	f            *flight.State // nil: not stored (purged, or never)
	loc          *time.Location
}

func (c stateCase) diff(kind Kind, version int64, format string, args ...any) *Difference {
	return &Difference{Kind: kind, Topic: c.topic, FLID: c.flid, StateVersion: version, Offset: -1, Detail: fmt.Sprintf(format, args...)}
}

// noRecord judges a FLID without a record on the state topic.
func (c stateCase) noRecord(sum *StateSummary) *Difference {
	switch {
	case c.f == nil || c.f.Status == flight.Deleted:
		sum.TombstonesGone++
		return nil
	case c.sent > 0:
		return c.diff(StateMissing, c.sent, "no record; PostgreSQL sent version %d", c.sent)
	case c.unsent > 0:
		sum.Pending++
		return nil
	}
	return c.diff(StateMissing, c.f.Version, "no record of stored version %d, and no unsent event", c.f.Version)
}

// compareLast judges the last record of a FLID on the state topic.
func (c stateCase) compareLast(last stateRec, sum *StateSummary) *Difference {
	at := func(d *Difference) *Difference {
		d.Partition, d.Offset = last.partition, last.offset
		return d
	}
	switch {
	case last.version > c.sent:
		sum.NewerThanSnapshot++
		return nil
	case last.version < c.sent:
		return at(c.diff(StateBehind, last.version, "the last record is version %d; PostgreSQL sent version %d", last.version, c.sent))
	case c.f != nil && c.f.Version > last.version:
		if c.unsent >= c.f.Version {
			sum.Pending++
			return nil
		}
		return at(c.diff(StateBehind, last.version, "the last record is version %d; the stored flight is version %d and no event will send it",
			last.version, c.f.Version))
	case c.f != nil && c.f.Version < last.version:
		return at(c.diff(StateDiffers, last.version, "the last record is version %d, newer than the stored flight's %d", last.version, c.f.Version))
	}
	sum.Compared++
	wantTombstone := c.f == nil || c.f.Status == flight.Deleted
	switch {
	case wantTombstone && (last.value != nil || last.eventType != event.Tombstone):
		return at(c.diff(StateDiffers, last.version, "the flight is deleted or purged: the last record must be a tombstone, is %s", describe(last)))
	case !wantTombstone && last.value == nil:
		return at(c.diff(StateDiffers, last.version, "the flight is %s: the last record is a tombstone", c.f.Status))
	case !wantTombstone:
		if want := c.f.AppendJSONIn(nil, c.loc); !bytes.Equal(last.value, want) {
			if c.loc != nil && bytes.Equal(last.value, c.f.AppendJSON(nil)) {
				sum.WithoutInstants++
				break
			}
			return at(c.diff(StateDiffers, last.version, "the value is not the stored state (first difference at byte %d)", firstDiff(last.value, want)))
		}
	}
	sum.Matched++
	return nil
}

func describe(r stateRec) string {
	if r.value == nil {
		return "a null value with event_type " + strconv.Quote(r.eventType)
	}
	return fmt.Sprintf("a %d-byte value with event_type %q", len(r.value), r.eventType)
}

func firstDiff(a, b []byte) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}
