package flight

import (
	"encoding/json"
	"slices"
	"strconv"
	"time"
)

// Lifecycle states of a flight.
const (
	Active  = "ACTIVE"
	Deleted = "DELETED"
)

// PurgeVersion is the state_version of the TOMBSTONE the history purge writes for a flight whose
// last stored version is last, and the floor a re-used FLID continues above: a flight stored
// again under a purged FLID starts at PurgeVersion(last)+1. Consumers deduplicate by (flid,
// state_version), so neither the tombstone nor the re-used flight may repeat a version the
// purged flight has had.
func PurgeVersion(last int64) int64 { return last + 1 }

// Child is one element of a master's MAFL projection (INV-21).
type Child struct {
	FLID int64  `json:"flid"`
	FLNO string `json:"flno"`
}

// State is the full state of one flight at one version: every scalar field, every collection
// (rows in input order) and the derived MAFL. The zero State is no flight.
type State struct {
	FLID         int64
	Status       string // Active or Deleted
	Version      int64  // state_version; 0 for a flight not stored yet
	OperationDay string // YYYY-MM-DD, local calendar day of SODT; "" until set
	LastMsgID    int64
	F            [NumFields]Value
	C            [NumColls][]Row
	// MAFL is the derived code-share projection: the ACTIVE flights whose MAID is this FLID,
	// sorted by FLID, without self-reference. It is never stored.
	MAFL []Child
	// P is the provenance of the fields, the state and the collections (INV-24b, prov.go).
	P Prov
	w *writer // the input being applied (Apply only)
}

// Exists reports whether the state is a stored flight.
func (s *State) Exists() bool { return s != nil && s.Version > 0 }

// Clone returns a deep copy of s.
func (s State) Clone() State {
	for c := range s.C {
		s.C[c] = slices.Clone(s.C[c])
	}
	s.MAFL = slices.Clone(s.MAFL)
	s.P = s.P.clone()
	s.w = nil
	return s
}

// fork returns a copy of s that shares its collections, MAFL and provenance entries: Apply
// works on a fork and copies what it changes of those (cloneColl, ownEntries) before the change,
// so neither state sees the other's writes. The scalar fields and stamps are copied by value.
func (s *State) fork() State {
	n := *s
	n.w = nil
	return n
}

// cloneColl gives s its own copy of collection c before a change in place (fork shares it).
func (s *State) cloneColl(c C) { s.C[c] = slices.Clone(s.C[c]) }

// MarshalJSON writes the full state without instants (AppendJSON).
func (s State) MarshalJSON() ([]byte, error) { return s.AppendJSON(make([]byte, 0, 2048)), nil }

// AppendJSON appends the full state with its wall-clock times only, no instants: for views that
// show the airport's clock. What msgx publishes is AppendJSONIn's.
func (s *State) AppendJSON(b []byte) []byte { return s.AppendJSONIn(b, nil) }

// AppendJSONIn appends the full state (the KAFKA:schd payload and the read API's answer):
// identity and lifecycle, every scalar field (null when unset), every collection as an array of
// row objects in input order, and "mafl". With loc set, every time field and column X has X_instant
// beside it: the instant its wall-clock time names in loc, the airport's zone (appendInstant).
func (s *State) AppendJSONIn(b []byte, loc *time.Location) []byte {
	b = append(b, `{"flid":`...)
	b = strconv.AppendInt(b, s.FLID, 10)
	b = append(b, `,"state":`...)
	b = appendString(b, s.Status)
	b = append(b, `,"state_version":`...)
	b = strconv.AppendInt(b, s.Version, 10)
	b = append(b, `,"operation_day":`...)
	if s.OperationDay == "" {
		b = append(b, "null"...)
	} else {
		b = appendString(b, s.OperationDay)
	}
	for f := range NumFields {
		b = appendMember(append(b, ','), Fields[f], s.F[f], loc)
	}
	for c := range NumColls {
		b = append(b, ',', '"')
		b = append(b, Collections[c].Name...)
		b = append(b, '"', ':')
		b = appendRows(b, c, s.C[c], loc)
	}
	b = append(b, `,"mafl":`...)
	b = appendMAFL(b, s.MAFL)
	return append(b, '}')
}

// appendMember appends `"name":value` for column col, and for a time with loc set
// `,"name_instant":instant`.
func appendMember(b []byte, col Column, v Value, loc *time.Location) []byte {
	b = append(b, '"')
	b = append(b, col.Name...)
	b = append(b, '"', ':')
	start := len(b)
	b = v.appendJSON(b, col.Kind)
	if col.Kind == KindTime && loc != nil {
		wall := b[start:]
		b = append(b, ',', '"')
		b = append(b, col.Name...)
		b = append(b, InstantSuffix...)
		b = append(b, '"', ':')
		b = v.appendInstantAfter(b, loc, wall)
	}
	return b
}

func appendRows(b []byte, c C, rows []Row, loc *time.Location) []byte {
	cols := Collections[c].Cols
	b = append(b, '[')
	for i, r := range rows {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '{')
		for j, col := range cols {
			if j > 0 {
				b = append(b, ',')
			}
			b = appendMember(b, col, r[j], loc)
		}
		b = append(b, '}')
	}
	return append(b, ']')
}

func appendMAFL(b []byte, m []Child) []byte {
	b = append(b, '[')
	for i, c := range m {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"flid":`...)
		b = strconv.AppendInt(b, c.FLID, 10)
		b = append(b, `,"flno":`...)
		b = appendString(b, c.FLNO)
		b = append(b, '}')
	}
	return append(b, ']')
}

// Change is one changed field, collection, "state" or "mafl" with its old and new JSON values;
// for a time field diffed with a zone (DiffIn) also the instants they name.
type Change struct {
	Name string
	Old  json.RawMessage
	New  json.RawMessage
	// OldInstant and NewInstant are nil unless the change is of a time field and the diff had
	// a zone.
	OldInstant, NewInstant json.RawMessage
}

// Changes is what a message changed on one flight.
type Changes struct {
	Fields []Change
	// Notes are non-fatal remarks worth recording (e.g. a PSHT for a stand not allocated).
	Notes []string
	// Stale names the units the input did not write because a later-created message had set
	// them (INV-24b): field names, "state", collection names, "collection/key" entries.
	Stale []string
	// Written counts the units the input wrote (changed or not); with Stale non-empty and
	// Written 0 the input was stale as a whole.
	Written int
}

// Empty reports whether nothing changed.
func (c Changes) Empty() bool { return len(c.Fields) == 0 }

// AppendJSON appends {name: {"old": …, "new": …}} in field order to b (the "changed" object of
// a KAFKA:msg payload, package event); a time field diffed with a zone also has "old_instant"
// and "new_instant".
func (c Changes) AppendJSON(b []byte) []byte {
	b = append(b, '{')
	for i, ch := range c.Fields {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, ch.Name)
		b = append(b, `:{"old":`...)
		b = append(b, ch.Old...)
		b = append(b, `,"new":`...)
		b = append(b, ch.New...)
		if ch.OldInstant != nil {
			b = append(b, `,"old_instant":`...)
			b = append(b, ch.OldInstant...)
			b = append(b, `,"new_instant":`...)
			b = append(b, ch.NewInstant...)
		}
		b = append(b, '}')
	}
	return append(b, '}')
}

// Diff is DiffIn without a zone: no instants.
func Diff(old *State, next *State) Changes { return DiffIn(old, next, nil) }

// DiffIn lists what differs between old and next: "state", every scalar field, every collection
// (whole collection as old/new arrays) and "mafl". A missing old flight (nil or not stored)
// counts as all-null. With loc set, the values carry their instants in loc as AppendJSONIn
// writes them.
func DiffIn(old *State, next *State, loc *time.Location) Changes {
	o := orNone(old)
	var ch Changes
	if o.Status != next.Status {
		oldStatus := json.RawMessage("null")
		if o.Status != "" {
			oldStatus = appendString(nil, o.Status)
		}
		ch.Fields = append(ch.Fields, Change{Name: "state", Old: oldStatus, New: appendString(nil, next.Status)})
	}
	if o.OperationDay != next.OperationDay {
		ch.Fields = append(ch.Fields, Change{Name: "operation_day", Old: dayJSON(o.OperationDay), New: dayJSON(next.OperationDay)})
	}
	for f := range NumFields {
		if o.F[f] != next.F[f] {
			k := Fields[f].Kind
			c := Change{Name: Fields[f].Name, Old: o.F[f].jsonOf(k), New: next.F[f].jsonOf(k)}
			if k == KindTime && loc != nil {
				c.OldInstant, c.NewInstant = o.F[f].appendInstant(nil, loc), next.F[f].appendInstant(nil, loc)
			}
			ch.Fields = append(ch.Fields, c)
		}
	}
	for c := range NumColls {
		if !RowsEqual(o.C[c], next.C[c]) {
			ch.Fields = append(ch.Fields, Change{Name: Collections[c].Name, Old: appendRows(nil, c, o.C[c], loc), New: appendRows(nil, c, next.C[c], loc)})
		}
	}
	if !slices.Equal(o.MAFL, next.MAFL) {
		ch.Fields = append(ch.Fields, Change{Name: "mafl", Old: appendMAFL(nil, o.MAFL), New: appendMAFL(nil, next.MAFL)})
	}
	return ch
}

// AppendDiffJSON appends what DiffIn(old, next, loc).AppendJSON appends, byte for byte, without
// building the Changes: each value is written into b at once (the "changed" object of every
// KAFKA:msg payload, package event/change).
func AppendDiffJSON(b []byte, old *State, next *State, loc *time.Location) []byte {
	o := orNone(old)
	b = append(b, '{')
	first := len(b)
	if o.Status != next.Status {
		b = openChange(b, first, "state")
		if o.Status == "" {
			b = append(b, "null"...)
		} else {
			b = appendString(b, o.Status)
		}
		b = appendString(append(b, `,"new":`...), next.Status)
		b = append(b, '}')
	}
	if o.OperationDay != next.OperationDay {
		b = openChange(b, first, "operation_day")
		b = appendDay(append(appendDay(b, o.OperationDay), `,"new":`...), next.OperationDay)
		b = append(b, '}')
	}
	for f := range NumFields {
		if o.F[f] != next.F[f] {
			k := Fields[f].Kind
			b = openChange(b, first, Fields[f].Name)
			o0 := len(b)
			b = o.F[f].appendJSON(b, k)
			o1 := len(b)
			b = next.F[f].appendJSON(append(b, `,"new":`...), k)
			if k == KindTime && loc != nil {
				oldWall, newWall := b[o0:o1], b[o1+len(`,"new":`):]
				b = o.F[f].appendInstantAfter(append(b, `,"old_instant":`...), loc, oldWall)
				b = next.F[f].appendInstantAfter(append(b, `,"new_instant":`...), loc, newWall)
			}
			b = append(b, '}')
		}
	}
	for c := range NumColls {
		if !RowsEqual(o.C[c], next.C[c]) {
			b = openChange(b, first, Collections[c].Name)
			b = appendRows(append(appendRows(b, c, o.C[c], loc), `,"new":`...), c, next.C[c], loc)
			b = append(b, '}')
		}
	}
	if !slices.Equal(o.MAFL, next.MAFL) {
		b = openChange(b, first, "mafl")
		b = appendMAFL(append(appendMAFL(b, o.MAFL), `,"new":`...), next.MAFL)
		b = append(b, '}')
	}
	return append(b, '}')
}

// openChange starts the member of a change named name in the object whose first member starts at
// first: `"name":{"old":`, after a comma unless it is the first.
func openChange(b []byte, first int, name string) []byte {
	if len(b) > first {
		b = append(b, ',')
	}
	return append(appendString(b, name), `:{"old":`...)
}

// Changed reports whether next differs from old in anything Diff would list (cheaper than Diff).
func Changed(old *State, next *State) bool {
	o := orNone(old)
	if o.Status != next.Status || o.OperationDay != next.OperationDay || o.F != next.F || !slices.Equal(o.MAFL, next.MAFL) {
		return true
	}
	for c := range NumColls {
		if !RowsEqual(o.C[c], next.C[c]) {
			return true
		}
	}
	return false
}

// RowsEqual reports whether two collections hold the same rows. A state forked from another
// shares the collections it did not change (State.fork), so the same backing array answers
// without comparing the rows.
func RowsEqual(a, b []Row) bool {
	if len(a) != len(b) {
		return false
	}
	if len(a) == 0 || &a[0] == &b[0] {
		return true
	}
	return slices.Equal(a, b)
}

// none is the all-null state a missing flight compares as (DiffIn, Changed); never written.
var none State

// orNone returns s when it is a stored flight, else &none: a pointer, because a State is too
// large to copy for every comparison.
func orNone(s *State) *State {
	if s.Exists() {
		return s
	}
	return &none
}

func dayJSON(d string) json.RawMessage { return appendDay(nil, d) }

// appendDay appends an operation day as JSON: null when not set.
func appendDay(b []byte, d string) []byte {
	if d == "" {
		return append(b, "null"...)
	}
	return appendString(b, d)
}
