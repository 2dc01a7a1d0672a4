// Package event is the one home of the Kafka event contract (docs/events.md): the outbox
// targets, the event types, the outbox row (Event), the encoders of every payload and the
// Kafka record of a claimed event (Record: key, value, headers, schema_version). Writers build
// their events here and hand them to outbox.Enqueue; the dispatcher turns what it claims into
// records here. The bytes these encoders produce are what consumers receive: change them only with
// the contract.
//
//	flight change (processor)  ──▶ Changed ──▶ KAFKA:msg  {flid,msg_id,type,styp,state_version,event,changed}
//	                                       └─▶ KAFKA:schd full state (UPSERT) | null (TOMBSTONE)
//	purge (jobs history sweep) ──▶ Purged  ──▶ KAFKA:msg  {flid,event,reason,state_version}
//	                                       └─▶ KAFKA:schd null (TOMBSTONE)
package event

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/msgx/msgx/pkg/flight"
)

// Outbox targets: where the dispatcher sends an event.
const (
	TargetMsg  = "KAFKA:msg"  // one record per change, topic msgx.flight.changes
	TargetSchd = "KAFKA:schd" // newest full state per FLID, compacted topic msgx.flight.state
)

// Targets lists every target, in the order the dispatcher reports them.
var Targets = []string{TargetMsg, TargetSchd}

// Event types.
const (
	Upsert    = "UPSERT"
	Tombstone = "TOMBSTONE"
)

// Event is one new outbox (msg_event) row.
type Event struct {
	Target       string          // TargetMsg or TargetSchd
	FLID         int64           // partition key and Kafka key
	Type         string          // Upsert or Tombstone
	StateVersion int64           // the flight's state_version after the change (> 0)
	MsgID        int64           // the mailbox message that caused it; 0: none (e.g. history sweep)
	Payload      json.RawMessage // required for Upsert; nil for a Tombstone without payload

	// state is the full state a KAFKA:schd UPSERT of Changed stands for, its payload: rendered
	// only when written (AppendBody), and only for the newest state of each flight (Latest).
	state *flight.State
}

// AppendBody appends the event's payload to b: Payload, or the full state a KAFKA:schd UPSERT
// stands for, rendered. Rendering each state into the writer's one buffer (outbox.Enqueue)
// keeps no batch of full states in memory.
func (e *Event) AppendBody(b []byte) []byte {
	if e.state != nil && len(e.Payload) == 0 {
		return e.state.AppendJSON(b)
	}
	return append(b, e.Payload...)
}

// Validate checks what the contract requires of an event. The payload's JSON syntax is not
// checked here nor by the database (msg_event.body is text): the encoders of this package are
// the only source of payloads and produce valid JSON (pinned byte for byte by their tests; every
// flight-processor test parses every event it wrote), and checking every payload would cost on
// the flight processor's hot path.
func (e Event) Validate() error {
	switch {
	case e.Target != TargetMsg && e.Target != TargetSchd:
		return fmt.Errorf("event: bad target %q", e.Target)
	case e.Type != Upsert && e.Type != Tombstone:
		return fmt.Errorf("event: bad event type %q", e.Type)
	case e.StateVersion <= 0:
		return fmt.Errorf("event: state_version must be positive, got %d", e.StateVersion)
	case e.Type == Upsert && len(e.Payload) == 0 && e.state == nil:
		return errors.New("event: an UPSERT needs a payload")
	}
	return nil
}

// Source is the mailbox message behind a change, or (MsgID 0) the reason of a change no
// message caused (a master whose child was purged: ReasonChildPurged).
type Source struct {
	MsgID      int64
	Type, Styp string // the SIS TYPE and STYP
	Reason     string // when MsgID is 0
}

// ReasonChildPurged is the reason of a master's change when the history sweep purged one of its
// ACTIVE children (INV-22b).
const ReasonChildPurged = "child-purged"

// Changed appends the two events of one flight change from old (nil: new flight) to next
// (Version and status already set): KAFKA:msg with the changed fields, KAFKA:schd with the full
// state (no payload for a TOMBSTONE, a deleted flight).
func Changed(evs []Event, src Source, old, next *flight.State) []Event {
	typ := Upsert
	if next.Status == flight.Deleted {
		typ = Tombstone
	}
	b := make([]byte, 0, 512)
	b = append(b, `{"flid":`...)
	b = strconv.AppendInt(b, next.FLID, 10)
	if src.MsgID != 0 {
		b = append(b, `,"msg_id":`...)
		b = strconv.AppendInt(b, src.MsgID, 10)
		b = append(b, `,"type":`...)
		b = appendJSONString(b, src.Type)
		b = append(b, `,"styp":`...)
		b = appendJSONString(b, src.Styp)
	} else {
		b = append(b, `,"reason":`...)
		b = appendJSONString(b, src.Reason)
	}
	b = append(b, `,"state_version":`...)
	b = strconv.AppendInt(b, next.Version, 10)
	b = append(b, `,"event":"`...)
	b = append(b, typ...)
	b = append(b, `","changed":`...)
	b = flight.Diff(old, next).AppendJSON(b)
	b = append(b, '}')
	schd := Event{Target: TargetSchd, FLID: next.FLID, Type: typ, StateVersion: next.Version, MsgID: src.MsgID}
	if typ == Upsert {
		schd.state = next // rendered by Latest; next is not changed again
	}
	return append(evs,
		Event{Target: TargetMsg, FLID: next.FLID, Type: typ, StateVersion: next.Version, MsgID: src.MsgID, Payload: b},
		schd)
}

// Log gathers one transaction's events in order (Changed), applying Latest's rule as they come:
// a flight's KAFKA:schd event that a newer one supersedes lets go of its state at once, so a
// batch that changes a flight many times keeps one full state of it, not one per change.
type Log struct {
	Events []Event
	state  map[int64]int // FLID → index in Events of its newest KAFKA:schd event
}

// Changed adds the events of one flight going from old to next (the function Changed).
func (l *Log) Changed(src Source, old, next *flight.State) {
	l.Events = Changed(l.Events, src, old, next)
	if l.state == nil {
		l.state = map[int64]int{}
	}
	if i, ok := l.state[next.FLID]; ok {
		l.Events[i].state = nil // superseded: Latest drops it
	}
	l.state[next.FLID] = len(l.Events) - 1
}

// Take returns the events gathered and empties the log.
func (l *Log) Take() []Event {
	evs := l.Events
	l.Events, l.state = nil, nil
	return evs
}

// Latest keeps, of the KAFKA:schd events in evs, the newest of each flight; every other event
// stays as it is, in its place. The events of one
// transaction become visible to the dispatcher together, and msgx.flight.state carries only a
// flight's newest state (docs/events.md), so an older state of the same transaction could never
// be published: writing it would only cost. Enqueue calls it.
func Latest(evs []Event) []Event {
	newest := map[int64]int{} // FLID → index of its last KAFKA:schd event
	for i, e := range evs {
		if e.Target == TargetSchd {
			newest[e.FLID] = i
		}
	}
	out := evs[:0:0]
	for i, e := range evs {
		if e.Target == TargetSchd {
			if newest[e.FLID] != i {
				continue
			}
		}
		out = append(out, e)
	}
	return out
}

// purgePayload is the KAFKA:msg payload of a purge TOMBSTONE.
type purgePayload struct {
	FLID         int64  `json:"flid"`
	Event        string `json:"event"`
	Reason       string `json:"reason"`
	StateVersion int64  `json:"state_version"`
}

// Purged appends the TOMBSTONE pair of a flight purged at version (its last state_version + 1)
// by the history sweep, without a message behind it.
func Purged(evs []Event, flid, version int64) []Event {
	payload, err := json.Marshal(purgePayload{FLID: flid, Event: Tombstone, Reason: "purged", StateVersion: version})
	if err != nil {
		panic(err) // a struct of ints and strings always marshals
	}
	return append(evs,
		Event{Target: TargetMsg, FLID: flid, Type: Tombstone, StateVersion: version, Payload: payload},
		Event{Target: TargetSchd, FLID: flid, Type: Tombstone, StateVersion: version})
}

func appendJSONString(b []byte, s string) []byte {
	q, _ := json.Marshal(s) // a string always marshals
	return append(b, q...)
}
