package flight

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Provenance (INV-24b): which message last set each field, the lifecycle state, each collection
// as a whole (a complete list or a clear-all) and each collection entry (a keyed merge or a
// patch), so that a message reaching the head out of the mailbox's order — a late row found by
// the re-probe, a message replayed after later ones — never overwrites what a later-created
// message already set.
//
// The rule (Stamp.OvertakenBy): a write by message L is stale exactly when the unit it writes was
// last set by a message S that is later in the mailbox (S.MsgID > L.MsgID, so L is out of order)
// and was created no earlier (S.DTTM >= L.DTTM). A message in mailbox order (its id above every
// stamp it meets) is never stale, whatever its DTTM: an AODB clock step backwards cannot make
// fresh messages stale. An operator's forced replay (Input.Force) is never stale either: each of
// its writes is made and stamps its unit.

// Stamp names the message that last set a unit: its DTTM (airport wall clock, Unix seconds of the
// UTC-labelled wall time) and its msg_id. The zero Stamp is "no message" (never newer).
type Stamp struct {
	DTTM  int64
	MsgID int64
}

// StampOf returns the stamp of message msgID created at dttm (META DTTM).
func StampOf(msgID int64, dttm time.Time) Stamp {
	return Stamp{DTTM: Wall(dttm).Unix(), MsgID: msgID}
}

// OvertakenBy reports whether a write stamped l must not overwrite a unit last set by s: s is
// later in the mailbox and was created no earlier.
func (l Stamp) OvertakenBy(s Stamp) bool { return s.MsgID > l.MsgID && s.DTTM >= l.DTTM }

// EntryKey names one collection entry: the collection and the row's key (its first column).
type EntryKey struct {
	C C
	K Value
}

// Prov is the provenance of one flight's state. E holds only entry stamps that the collection's
// whole stamp W does not already cover (entries merged or patched after the last complete list).
type Prov struct {
	F      [NumFields]Stamp
	Status Stamp
	W      [NumColls]Stamp
	E      map[EntryKey]Stamp
}

// Equal reports whether p and q are the same provenance.
func (p *Prov) Equal(q *Prov) bool {
	return p.F == q.F && p.Status == q.Status && p.W == q.W && maps.Equal(p.E, q.E)
}

func (p Prov) clone() Prov {
	p.E = maps.Clone(p.E)
	return p
}

// writer carries the stamp of the input being applied and what it found stale; State.w points
// to it only while Apply runs.
type writer struct {
	at      Stamp
	force   bool // an operator's forced replay: nothing is stale
	stale   []string
	written int  // units written (fresh), changed or not
	ownE    bool // the state's entry stamps are its own copy (ownEntries)
}

// ownEntries gives the state being written its own entry-stamp map before a change in place:
// a fork shares it with the state it came from.
func (s *State) ownEntries() {
	if !s.w.ownE {
		s.P.E, s.w.ownE = maps.Clone(s.P.E), true
	}
	if s.P.E == nil {
		s.P.E = map[EntryKey]Stamp{}
	}
}

// overtaken reports whether the input's write of a unit last set by s is stale.
func (w *writer) overtaken(s Stamp) bool { return !w.force && w.at.OvertakenBy(s) }

func (w *writer) mark(name string) {
	if !slices.Contains(w.stale, name) {
		w.stale = append(w.stale, name)
	}
}

// set writes field f unless the write is stale, and stamps it.
func (s *State) set(f F, v Value) {
	if w := s.w; w != nil {
		if w.overtaken(s.P.F[f]) {
			w.mark(Fields[f].Name)
			return
		}
		s.P.F[f] = w.at
		w.written++
	}
	if s.F[f] != v {
		s.F[f] = v.own()
	}
}

// setStatus writes the lifecycle state unless the write is stale, and stamps it.
func (s *State) setStatus(v string) {
	if w := s.w; w != nil {
		if w.overtaken(s.P.Status) {
			w.mark("state")
			return
		}
		s.P.Status = w.at
		w.written++
	}
	s.Status = v
}

// entryStale reports (and records) whether a write of entry k of collection c is stale.
func (s *State) entryStale(c C, k Value) bool {
	w := s.w
	if w == nil {
		return false
	}
	if w.overtaken(s.P.W[c]) || w.overtaken(s.P.E[EntryKey{c, k}]) {
		w.mark(entryName(c, k))
		return true
	}
	return false
}

// stampEntry records that the current input wrote entry k of collection c.
func (s *State) stampEntry(c C, k Value) {
	w := s.w
	if w == nil {
		return
	}
	w.written++
	if s.P.W[c] == w.at {
		return // covered by this input's complete list
	}
	s.ownEntries()
	s.P.E[EntryKey{c, k}] = w.at
}

// wholeStale reports (and records) whether a complete list or clear-all of collection c is
// stale as a whole: a later-created message already sent the complete list.
func (s *State) wholeStale(c C) bool {
	w := s.w
	if w != nil && w.overtaken(s.P.W[c]) {
		w.mark(Collections[c].Name)
		return true
	}
	return false
}

// takeWhole stamps collection c as written as a whole by the current input and returns the
// current rows whose entries are newer than it (kept, reported stale); the other entry stamps
// are covered by the new whole stamp.
func (s *State) takeWhole(c C) []Row {
	w := s.w
	if w == nil {
		return nil
	}
	var newer []Row
	for _, r := range s.C[c] {
		if w.overtaken(s.P.E[EntryKey{c, r[0]}]) {
			newer = append(newer, r)
		}
	}
	if len(s.P.E) > 0 {
		s.ownEntries()
	}
	for k, st := range s.P.E {
		if k.C == c && !w.overtaken(st) {
			delete(s.P.E, k)
		}
	}
	s.P.W[c] = w.at
	w.written++
	return newer
}

func entryName(c C, k Value) string { return Collections[c].Name + "/" + keyText(c, k) }

func keyText(c C, k Value) string {
	if Collections[c].Cols[0].Kind == KindInt {
		return strconv.FormatInt(k.I, 10)
	}
	return k.S
}

// MarshalProv returns the stored form of p (column flight.prov): one array per distinct stamp,
// [dttm, msg_id, name…], names being field names, "state", collection names (the whole list)
// and "collection/key" (one entry). Stamps are ordered by msg_id, names by their unit order.
func MarshalProv(p *Prov) []byte { return AppendProv(nil, p) }

// provNames holds the field and collection names as appendString writes them, written once.
var provNames = func() (n struct {
	fields [NumFields]string
	colls  [NumColls]string
}) {
	for f := range NumFields {
		n.fields[f] = string(appendString(nil, Fields[f].Name))
	}
	for c := range NumColls {
		n.colls[c] = string(appendString(nil, Collections[c].Name))
	}
	return n
}()

// AppendProv appends MarshalProv(p) to b.
func AppendProv(b []byte, p *Prov) []byte {
	// The distinct stamps, ordered; then for each, the units it stamps in unit order (fields,
	// state, collections, entries by collection and key). A flight has few distinct stamps, so
	// a walk of the units per stamp costs less than sorting the units, which runs for every
	// flight a batch writes.
	var buf [8]Stamp
	stamps := buf[:0]
	units := 0
	add := func(st Stamp) {
		if st == (Stamp{}) {
			return
		}
		units++
		if !slices.Contains(stamps, st) {
			stamps = append(stamps, st)
		}
	}
	for f := range NumFields {
		add(p.F[f])
	}
	add(p.Status)
	for c := range NumColls {
		add(p.W[c])
	}
	var entries []provEntry
	if len(p.E) > 0 {
		entries = make([]provEntry, 0, len(p.E))
		for _, k := range sortedEntryKeys(p.E) {
			if st := p.E[k]; st != (Stamp{}) {
				entries = append(entries, provEntry{st, entryName(k.C, k.K)})
				add(st)
			}
		}
	}
	slices.SortFunc(stamps, compareStamps)
	b = slices.Grow(b, 2+24*len(stamps)+16*units)
	b = append(b, '[')
	for i, st := range stamps {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendStamped(b, p, st, entries)
	}
	return append(b, ']')
}

// compareStamps is the order of MarshalProv's stamps: by msg_id, then by DTTM.
func compareStamps(a, b Stamp) int {
	if a.MsgID != b.MsgID {
		return cmp.Compare(a.MsgID, b.MsgID)
	}
	return cmp.Compare(a.DTTM, b.DTTM)
}

// sortedEntryKeys returns the keys of e in MarshalProv's order: by collection, then by key text.
func sortedEntryKeys(e map[EntryKey]Stamp) []EntryKey {
	keys := slices.Collect(maps.Keys(e))
	slices.SortFunc(keys, func(a, b EntryKey) int {
		if a.C != b.C {
			return int(a.C) - int(b.C)
		}
		return strings.Compare(keyText(a.C, a.K), keyText(b.C, b.K))
	})
	return keys
}

// provEntry is an entry's stamp and its name as MarshalProv writes it.
type provEntry struct {
	st   Stamp
	name string
}

// appendStamped appends one element of MarshalProv: the stamp st and, in unit order, the units
// of p it stamps (entries: p's, sorted).
func appendStamped(b []byte, p *Prov, st Stamp, entries []provEntry) []byte {
	b = append(b, '[')
	b = strconv.AppendInt(b, st.DTTM, 10)
	b = append(b, ',')
	b = strconv.AppendInt(b, st.MsgID, 10)
	for f := range NumFields {
		if p.F[f] == st {
			b = append(append(b, ','), provNames.fields[f]...)
		}
	}
	if p.Status == st {
		b = append(b, `,"state"`...)
	}
	for c := range NumColls {
		if p.W[c] == st {
			b = append(append(b, ','), provNames.colls[c]...)
		}
	}
	for _, e := range entries {
		if e.st == st {
			b = appendString(append(b, ','), e.name)
		}
	}
	return append(b, ']')
}

// unitByName resolves the names MarshalProv writes, except entries.
var unitByName = func() map[string]func(*Prov) *Stamp {
	m := map[string]func(*Prov) *Stamp{"state": func(p *Prov) *Stamp { return &p.Status }}
	for f := range NumFields {
		m[Fields[f].Name] = func(p *Prov) *Stamp { return &p.F[f] }
	}
	for c := range NumColls {
		m[Collections[c].Name] = func(p *Prov) *Stamp { return &p.W[c] }
	}
	return m
}()

var collByName = func() map[string]C {
	m := map[string]C{}
	for c := range NumColls {
		m[Collections[c].Name] = c
	}
	return m
}()

// UnmarshalProv decodes the stored form of MarshalProv ("" or null: no provenance).
func UnmarshalProv(text string) (Prov, error) {
	var p Prov
	if text == "" || text == "null" {
		return p, nil
	}
	var groups [][]json.RawMessage
	if err := json.Unmarshal([]byte(text), &groups); err != nil {
		return p, fmt.Errorf("decode provenance: %w", err)
	}
	for _, g := range groups {
		if len(g) < 2 {
			return p, fmt.Errorf("decode provenance: group of %d elements", len(g))
		}
		var st Stamp
		if err := json.Unmarshal(g[0], &st.DTTM); err != nil {
			return p, fmt.Errorf("decode provenance: %w", err)
		}
		if err := json.Unmarshal(g[1], &st.MsgID); err != nil {
			return p, fmt.Errorf("decode provenance: %w", err)
		}
		for _, raw := range g[2:] {
			var name string
			if err := json.Unmarshal(raw, &name); err != nil {
				return p, fmt.Errorf("decode provenance: %w", err)
			}
			if u, ok := unitByName[name]; ok {
				*u(&p) = st
				continue
			}
			k, err := entryOf(name)
			if err != nil {
				return p, fmt.Errorf("decode provenance: %w", err)
			}
			if p.E == nil {
				p.E = map[EntryKey]Stamp{}
			}
			p.E[k] = st
		}
	}
	return p, nil
}

// entryOf reads an entry's unit name ("collection/key", entryName).
func entryOf(name string) (EntryKey, error) {
	coll, key, ok := strings.Cut(name, "/")
	c, known := collByName[coll]
	if !ok || !known {
		return EntryKey{}, fmt.Errorf("unknown unit %q", name)
	}
	k := Text(key)
	if Collections[c].Cols[0].Kind == KindInt {
		n, err := strconv.ParseInt(key, 10, 64)
		if err != nil {
			return EntryKey{}, fmt.Errorf("unit %q: %w", name, err)
		}
		k = Int(n)
	}
	return EntryKey{c, k}, nil
}

// Of is the stamp of the message that last set a unit, named as Changes.Stale and MarshalProv
// name it (a field, "state", a collection, "collection/key"): an entry set by no merge since its
// collection's complete list has that list's stamp. The zero Stamp for an unknown name.
func (p *Prov) Of(unit string) Stamp {
	if u, ok := unitByName[unit]; ok {
		return *u(p)
	}
	k, err := entryOf(unit)
	if err != nil {
		return Stamp{}
	}
	if st, ok := p.E[k]; ok {
		return st
	}
	return p.W[k.C]
}
