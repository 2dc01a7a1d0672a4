// Package event is the one home of the Kafka event contract (docs/events.md): the outbox
// targets, the event types, the outbox row (Event) and the encoders of every payload. Writers
// build their events here and hand them to outbox.Enqueue; the dispatcher reads the same
// constants. The bytes these encoders produce are what consumers receive: change them only with
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
}

// Validate checks what the contract requires of an event. The payload's JSON syntax is checked
// by the database as the row is written (msg_event.payload is jsonb: invalid JSON fails the
// writer's transaction), not here again: the flight processor writes thousands of payloads a
// second, and the encoders of this package only produce valid JSON.
func (e Event) Validate() error {
	switch {
	case e.Target != TargetMsg && e.Target != TargetSchd:
		return fmt.Errorf("event: bad target %q", e.Target)
	case e.Type != Upsert && e.Type != Tombstone:
		return fmt.Errorf("event: bad event type %q", e.Type)
	case e.StateVersion <= 0:
		return fmt.Errorf("event: state_version must be positive, got %d", e.StateVersion)
	case e.Type == Upsert && len(e.Payload) == 0:
		return errors.New("event: an UPSERT needs a payload")
	case len(e.Payload) > 0 && !json.Valid(e.Payload):
		// The outbox stores the value as text (the JSON is not parsed again by PostgreSQL).
		return errors.New("event: the payload is not valid JSON")
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
// ACTIVE children (INV-22).
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
	var state json.RawMessage
	if typ == Upsert {
		state = next.AppendJSON(make([]byte, 0, 4096))
	}
	return append(evs,
		Event{Target: TargetMsg, FLID: next.FLID, Type: typ, StateVersion: next.Version, MsgID: src.MsgID, Payload: b},
		Event{Target: TargetSchd, FLID: next.FLID, Type: typ, StateVersion: next.Version, MsgID: src.MsgID, Payload: state})
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
