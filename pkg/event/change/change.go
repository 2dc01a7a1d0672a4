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
	typ := event.Upsert
	if next.Status == flight.Deleted {
		typ = event.Tombstone
	}
	b := make([]byte, 0, 512)
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
	b = append(b, typ...)
	b = append(b, `","changed":`...)
	b = flight.AppendDiffJSON(b, old, next, loc)
	b = append(b, '}')
	return append(evs,
		event.Event{Target: event.TargetMsg, FLID: next.FLID, Type: typ, StateVersion: next.Version, MsgID: src.MsgID, Payload: b},
		StateOf(next, src.MsgID, loc))
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
	state  map[int64]int // FLID → index in Events of its newest KAFKA:schd event
}

// Changed adds the events of one flight going from old to next (Append).
func (l *Log) Changed(src event.Source, old, next *flight.State) {
	l.Events = Append(l.Events, l.Loc, src, old, next)
	if l.state == nil {
		l.state = map[int64]int{}
	}
	if i, ok := l.state[next.FLID]; ok {
		l.Events[i].Supersede() // event.Latest drops it
	}
	l.state[next.FLID] = len(l.Events) - 1
}

// Take returns the events gathered and empties the log.
func (l *Log) Take() []event.Event {
	evs := l.Events
	l.Events, l.state = nil, nil
	return evs
}
