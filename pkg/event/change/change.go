// Package change builds the outbox events of a flight change (docs/events.md): the KAFKA:msg
// event with the changed fields and the KAFKA:schd event with the full state. It joins the
// flight model to the event contract, so that package event, which the dispatcher links, needs
// neither the flight model nor the SIS codec under it.
package change

import (
	"strconv"
	"time"

	"github.com/msgx/msgx/pkg/event"
	"github.com/msgx/msgx/pkg/flight"
)

// Append appends the two events of one flight change from old (nil: new flight) to next
// (Version and status already set): KAFKA:msg with the changed fields, KAFKA:schd with the full
// state (no payload for a TOMBSTONE, a deleted flight). loc is the airport's zone, in which the
// payloads' wall-clock times name the instants written beside them.
func Append(evs []event.Event, loc *time.Location, src event.Source, old, next *flight.State) []event.Event {
	return append(evs, msgEvent(next, src, appendPayload(make([]byte, 0, 512), loc, src, old, next)), StateOf(next, src.MsgID, loc))
}

// appendPayload appends the KAFKA:msg payload of a change (Append).
func appendPayload(b []byte, loc *time.Location, src event.Source, old, next *flight.State) []byte {
	b = append(b, `{"flid":`...)
	b = strconv.AppendInt(b, next.FLID, 10)
	if src.MsgID != 0 {
		b = append(b, `,"msg_id":`...)
		b = strconv.AppendInt(b, src.MsgID, 10)
		b = append(b, `,"type":`...)
		b = event.AppendJSONString(b, src.Type)
		b = append(b, `,"styp":`...)
		b = event.AppendJSONString(b, src.Styp)
	} else {
		b = append(b, `,"reason":`...)
		b = event.AppendJSONString(b, src.Reason)
	}
	b = append(b, `,"state_version":`...)
	b = strconv.AppendInt(b, next.Version, 10)
	b = append(b, `,"event":"`...)
	b = append(b, eventType(next)...)
	b = append(b, `","changed":`...)
	b = flight.AppendDiffJSON(b, old, next, loc)
	return append(b, '}')
}

// msgEvent is the KAFKA:msg event of a change to next with its payload (Append).
func msgEvent(next *flight.State, src event.Source, payload []byte) event.Event {
	return event.Event{Target: event.TargetMsg, FLID: next.FLID, Type: eventType(next), StateVersion: next.Version, MsgID: src.MsgID, Payload: payload}
}

// eventType is the event type of a change to next: a TOMBSTONE for a deleted flight.
func eventType(next *flight.State) string {
	if next.Status == flight.Deleted {
		return event.Tombstone
	}
	return event.Upsert
}

// StateOf is the KAFKA:schd event of state s at its version, caused by message msgID (0: none):
// an UPSERT whose payload is s rendered with its instants in loc when written (s is not changed
// again), or a TOMBSTONE without payload for a deleted flight.
func StateOf(s *flight.State, msgID int64, loc *time.Location) event.Event {
	if s.Status == flight.Deleted {
		return event.StateEvent(s.FLID, event.Tombstone, s.Version, msgID, nil)
	}
	return event.StateEvent(s.FLID, event.Upsert, s.Version, msgID, zoned{s, loc})
}

// zoned is a full state rendered with its instants in the airport's zone.
type zoned struct {
	s   *flight.State
	loc *time.Location
}

func (z zoned) AppendJSON(b []byte) []byte { return z.s.AppendJSONIn(b, z.loc) }

// Log gathers one transaction's events in order (Changed), applying event.Latest's rule as they
// come: a flight's KAFKA:schd event that a newer one supersedes lets go of its state at once, so
// a batch that changes a flight many times keeps one full state of it, not one per change.
type Log struct {
	Loc    *time.Location // the airport's zone (Append)
	Events []event.Event
	state  map[int64]newest // FLID → its newest KAFKA:schd event
	// The payloads are written into scratch, then copied into arena, a chunk shared by the
	// payloads that follow until it is full; the full states to render are kept in zones, whose
	// elements the KAFKA:schd events point to (a superseded one is cleared with its event). The
	// events of a transaction live and go together, so each holds its share of a chunk instead
	// of a buffer and a boxed state of its own.
	scratch, arena []byte
	zones          []zoned
}

// newest is a flight's newest KAFKA:schd event in a Log: its index in Events and the zone
// element it points to (nil for a TOMBSTONE).
type newest struct {
	i int
	z *zoned
}

// arenaChunk is the size of the chunks Log copies payloads into.
const arenaChunk = 32 << 10

// Changed adds the events of one flight going from old to next (Append).
func (l *Log) Changed(src event.Source, old, next *flight.State) {
	l.scratch = appendPayload(l.scratch[:0], l.Loc, src, old, next)
	if cap(l.arena)-len(l.arena) < len(l.scratch) {
		l.arena = make([]byte, 0, max(arenaChunk, len(l.scratch)))
	}
	start := len(l.arena)
	l.arena = append(l.arena, l.scratch...)
	st := event.StateEvent(next.FLID, event.Tombstone, next.Version, src.MsgID, nil)
	var z *zoned
	if next.Status != flight.Deleted {
		if len(l.zones) == cap(l.zones) {
			l.zones = make([]zoned, 0, max(64, cap(l.zones)))
		}
		l.zones = append(l.zones, zoned{next, l.Loc})
		z = &l.zones[len(l.zones)-1]
		st = event.StateEvent(next.FLID, event.Upsert, next.Version, src.MsgID, z)
	}
	l.Events = append(l.Events, msgEvent(next, src, l.arena[start:len(l.arena):len(l.arena)]), st)
	if l.state == nil {
		l.state = map[int64]newest{}
	}
	if n, ok := l.state[next.FLID]; ok {
		l.Events[n.i].Supersede() // event.Latest drops it
		if n.z != nil {
			*n.z = zoned{} // and the zone element lets go of the state too
		}
	}
	l.state[next.FLID] = newest{len(l.Events) - 1, z}
}

// Take returns the events gathered and empties the log.
func (l *Log) Take() []event.Event {
	evs := l.Events
	l.Events, l.state, l.arena, l.zones = nil, nil, nil, nil
	return evs
}
