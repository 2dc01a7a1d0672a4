// Package event is the one home of the Kafka event contract (docs/events.md): the outbox
// targets, the event types, the outbox row (Event), the purge's payload and the Kafka record
// format both ways: Record builds a claimed event's record (key, value, the headers named by the
// Header constants), Parse reads one back. Writers build their events here (a flight change's
// with package change) and hand them to outbox.Enqueue; the dispatcher turns what it claims into
// records here, and every reader of the topics (the dispatcher's tail read, kafka verify, the test
// consumers) parses them here. It knows nothing of the flight model, so the dispatcher
// links no SIS code. The bytes these encoders produce are what consumers receive: change them
// only with the contract.
//
//	flight change (processor)  ──▶ change.Append ──▶ KAFKA:msg  {flid,msg_id,type,styp,state_version,event,changed}
//	                                             └─▶ KAFKA:schd full state (UPSERT) | null (TOMBSTONE)
//	purge (jobs history sweep) ──▶ Purged        ──▶ KAFKA:msg  {flid,event,reason,state_version}
//	                                             └─▶ KAFKA:schd null (TOMBSTONE)
package event

import (
	"encoding/json"
	"errors"
	"fmt"
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

	// state is the full state a KAFKA:schd UPSERT of a flight change stands for, its payload:
	// rendered only when written (AppendBody), and only for the newest state of each flight
	// (Latest).
	state Body
}

// Body renders a payload into a buffer: a flight's full state (flight.State).
type Body interface{ AppendJSON(b []byte) []byte }

// StateEvent is the KAFKA:schd event of a flight change whose payload, for an UPSERT, is body
// rendered when the event is written (nil for a TOMBSTONE).
func StateEvent(flid int64, typ string, version, msgID int64, body Body) Event {
	return Event{Target: TargetSchd, FLID: flid, Type: typ, StateVersion: version, MsgID: msgID, state: body}
}

// Supersede lets go of the full state a newer state of the same flight replaces in one
// transaction (Latest then drops the event; see change.Log).
func (e *Event) Supersede() { e.state = nil }

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

// Latest keeps, of the KAFKA:schd events in evs, the newest of each flight; every other event
// stays as it is, in its place. The events of one
// transaction become visible to the dispatcher together, and msgx.flight.state carries only a
// flight's newest state (docs/events.md), so an older state of the same transaction could never
// be published: writing it would only cost. Enqueue calls it.
func Latest(evs []Event) []Event {
	if len(evs) == 0 {
		return evs[:0:0]
	}
	states := 0
	for i := range evs {
		if evs[i].Target == TargetSchd {
			states++
		}
	}
	// Both sized at once: a batch's events are many, and growing them step by step copies them.
	newest := make(map[int64]int, states) // FLID → index of its last KAFKA:schd event
	for i := range evs {
		if evs[i].Target == TargetSchd {
			newest[evs[i].FLID] = i
		}
	}
	out := make([]Event, 0, len(evs)-states+len(newest))
	for i := range evs {
		if evs[i].Target == TargetSchd && newest[evs[i].FLID] != i {
			continue
		}
		out = append(out, evs[i])
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

// AppendJSONString appends s as a JSON string, as encoding/json.Marshal writes it. A string of
// printable ASCII that Marshal does not escape (every SIS TYPE and STYP, every reason) is
// written between quotes as it is, without Marshal's allocations.
func AppendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always marshals
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
