package flight

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strconv"
)

// The batch rules: how the flight messages of one processor batch change the stored flights.
// Each message is applied on top of the previous ones exactly as if it had its own transaction:
//
//   - every flight a message changes gets state_version + 1 once for that message, and its
//     LastMsgID (INV-13), however many of the message's records name it;
//   - a FLID stored before but purged since (its history kept) continues above its purged
//     history and its purge TOMBSTONE: its first version is PurgeVersion(last purged) + 1, so
//     consumers deduplicating by (flid, state_version) never drop its events;
//   - the MAFL of every master whose children may have changed is derived again (INV-21,
//     INV-22b): the old and new master of a changed child, and the message's own flights (a
//     created or re-activated master derives its MAFL from the stored children).
//
// The batch reads stored flights through a Loader (package flightstore in production) and
// writes nothing: Take hands the changed flights to the caller, which saves them.

// Loader loads the stored state of flights.
type Loader interface {
	// Load returns the stored state of flids (each FLID once).
	Load(ctx context.Context, flids []int64) (Stored, error)
}

// Stored is the stored state of a set of flights.
type Stored struct {
	// States holds the stored flights, MAFL derived; a FLID not stored is absent.
	States map[int64]*State
	// Children holds the stored MAFL elements of every requested FLID, stored or not (a child may
	// name a master that does not exist yet).
	Children map[int64][]Child
	// Purged holds, for requested FLIDs not stored, the last state_version of their purged
	// history (absent: never purged).
	Purged map[int64]int64
}

// Transition is one flight going from Old (nil when new) to Next (Version and LastMsgID set).
type Transition struct {
	Old  *State
	Next *State
}

// Result is what one message did.
type Result struct {
	Applied, Skipped             int      // inputs applied; inputs skipped (no such flight, deleted)
	Inserted, Updated, Unchanged int      // flights created, changed, named but unchanged
	Skips                        []Skip   // each skipped input, in input order
	Notes                        []string // non-fatal remarks of the applied inputs
	// Stale names what the inputs did not write because a later-created message had set it
	// (INV-24b), prefixed "FLID " when the message has more than one input (the inputs stale as a
	// whole are also skipped: Skip.Stale).
	Stale []string
	// StaleUnits are Stale's units with their flights, in the same order.
	StaleUnits []StaleUnit
	// Changed are the flights the message changed, by FLID, from their state before the message.
	Changed []Transition
}

// StaleUnit is a unit of a flight (as Changes.Stale names it) that an input did not write
// because a later-created message had set it (INV-24b).
type StaleUnit struct {
	FLID int64
	Unit string
}

// Skip is why an input was skipped: Err is ErrNoFlight or ErrDeleted, or nil when later-created
// messages had set everything it carries (INV-24b), which Stale names.
type Skip struct {
	Err   error
	Stale []string
}

// Batch applies the flight messages of one batch in memory. It is not safe for concurrent use.
type Batch struct {
	load     Loader
	stored   map[int64]*State  // as stored (or as last taken); a nil entry: known absent
	children map[int64][]Child // stored MAFL elements per master FLID
	cur      map[int64]*State  // after the messages applied so far
	touched  map[int64]bool    // changed since the last Take
	floor    map[int64]int64   // the version a re-used FLID must exceed (PurgeVersion)
	// childOf indexes the touched flights whose current state is a child, by master (and
	// masterOf the master each is indexed under), so a master's MAFL is derived from its own
	// children instead of a scan of every touched flight per message.
	childOf  map[int64]map[int64]bool
	masterOf map[int64]int64
}

// NewBatch starts an empty batch reading stored flights through l.
func NewBatch(l Loader) *Batch {
	return &Batch{load: l, stored: map[int64]*State{}, children: map[int64][]Child{},
		cur: map[int64]*State{}, touched: map[int64]bool{}, floor: map[int64]int64{},
		childOf: map[int64]map[int64]bool{}, masterOf: map[int64]int64{}}
}

// Preload loads the stored states of flids not loaded yet, in one Load.
func (b *Batch) Preload(ctx context.Context, flids []int64) error {
	var missing []int64
	for _, id := range flids {
		if _, ok := b.stored[id]; !ok {
			missing = append(missing, id)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	slices.Sort(missing)
	missing = slices.Compact(missing)
	l, err := b.load.Load(ctx, missing)
	if err != nil {
		return err
	}
	for _, id := range missing {
		st := l.States[id]
		// Stored and current share the state until a message changes it: no state the batch
		// holds is ever changed in place (Apply works on clones), which also lets the stored
		// states be a cache's (flightstore.Cache).
		b.stored[id], b.cur[id] = st, st
		if st == nil {
			if v, ok := l.Purged[id]; ok {
				b.floor[id] = PurgeVersion(v)
			}
		}
	}
	for id, c := range l.Children {
		if _, ok := b.children[id]; !ok {
			b.children[id] = c
		}
	}
	return nil
}

// Apply applies the inputs of message msgID, in order, on top of the batch's earlier messages.
// A *Violation is returned as it is (the message is rejected); on any error the batch is
// unchanged.
func (b *Batch) Apply(ctx context.Context, msgID int64, inputs []Input) (Result, error) {
	var r Result
	flids := make([]int64, 0, len(inputs))
	for _, in := range inputs {
		flids = append(flids, in.FLID())
	}
	slices.Sort(flids)
	flids = slices.Compact(flids)
	if err := b.Preload(ctx, flids); err != nil {
		return r, err
	}
	// work starts as the current states themselves: Apply never changes its input (it forks), and
	// deriveMAFL copies a state it gives a MAFL that is still the current one.
	work := make(map[int64]*State, len(flids))
	for _, id := range flids {
		if c := b.cur[id]; c != nil {
			work[id] = c
		}
	}
	for _, in := range inputs {
		id := in.FLID()
		next, ch, err := applyInput(work[id], in)
		switch {
		case errors.Is(err, ErrNoFlight), errors.Is(err, ErrDeleted):
			r.Skipped++
			r.Skips = append(r.Skips, Skip{Err: err})
			continue
		case err != nil:
			return Result{}, err
		}
		stale := ch.Stale
		for i, n := range stale {
			r.StaleUnits = append(r.StaleUnits, StaleUnit{FLID: id, Unit: n})
			if len(inputs) > 1 {
				stale[i] = strconv.FormatInt(id, 10) + " " + n
			}
		}
		r.Stale = append(r.Stale, stale...)
		if len(stale) > 0 && ch.Written == 0 { // stale as a whole: nothing written
			r.Skipped++
			r.Skips = append(r.Skips, Skip{Stale: stale})
			continue
		}
		r.Applied++
		r.Notes = append(r.Notes, ch.Notes...)
		work[id] = next
	}
	if err := b.deriveMAFL(ctx, flids, work); err != nil {
		return Result{}, err
	}
	b.bump(msgID, flids, work, &r)
	return r, nil
}

// deriveMAFL adds to work every master whose MAFL may change with this message's changes and
// derives their MAFL from the stored children overlaid with every flight changed so far.
func (b *Batch) deriveMAFL(ctx context.Context, flids []int64, work map[int64]*State) error {
	// Flights this message changed, before MAFL.
	overlay := map[int64]*State{}
	for _, id := range flids {
		if w := work[id]; w != nil && Changed(b.cur[id], w) {
			overlay[id] = w
		}
	}
	// The flights of overlay that are children, sorted by master: what overlayFor needs of
	// overlay, found once for every master (a snapshot's message changes thousands of flights).
	var buf [8]kid
	kids := buf[:0]
	for id, w := range overlay {
		if m, _, ok := ChildOf(w); ok {
			kids = append(kids, kid{m, id})
		}
	}
	slices.SortFunc(kids, func(a, b kid) int { return cmp.Compare(a.master, b.master) })
	candidates := map[int64]bool{}
	for id, w := range overlay {
		for _, mid := range Masters(b.cur[id], w) {
			candidates[mid] = true
		}
		candidates[id] = true
	}
	var missing []int64
	for id := range candidates {
		if _, ok := b.stored[id]; !ok {
			missing = append(missing, id)
		}
	}
	if err := b.Preload(ctx, missing); err != nil {
		return err
	}
	for id := range candidates {
		if _, ok := work[id]; !ok && b.cur[id] != nil {
			work[id] = b.cur[id]
		}
	}
	for id := range candidates {
		w := work[id]
		if w == nil || w.Status != Active { // dangling reference or DELETED master
			continue
		}
		var mafl []Child // what Project gives with nothing to project, without its overlay
		if k := kidsOf(kids, id); len(b.children[id]) > 0 || len(b.childOf[id]) > 0 || len(k) > 0 {
			sub := make(map[int64]*State, len(b.children[id])+len(b.childOf[id])+len(k))
			b.overlayFor(sub, id, overlay, k)
			mafl = Project(id, b.children[id], sub)
		}
		if w == b.cur[id] { // still the current state, which no one changes: a copy takes the MAFL
			if slices.Equal(w.MAFL, mafl) {
				continue
			}
			c := w.fork()
			w, work[id] = &c, &c
		}
		w.MAFL = mafl
	}
	return nil
}

// overlayFor fills sub with the children overlay of master: every flight the batch changed
// before, then this message's (overlay) — reduced to the flights that can matter to master's
// MAFL: its stored children, the touched flights whose current state is its child, and kids,
// the flights of overlay that are its children; a flight of overlay among the first two is
// taken from overlay. Project gives the same MAFL with it as with every changed flight: another
// flight of overlay neither hides a stored child nor contributes one.
func (b *Batch) overlayFor(sub map[int64]*State, master int64, overlay map[int64]*State, kids []kid) {
	for _, c := range b.children[master] {
		if s, ok := overlay[c.FLID]; ok {
			sub[c.FLID] = s
		} else if b.touched[c.FLID] {
			sub[c.FLID] = b.cur[c.FLID]
		}
	}
	for id := range b.childOf[master] {
		if s, ok := overlay[id]; ok {
			sub[id] = s
		} else {
			sub[id] = b.cur[id]
		}
	}
	for _, k := range kids {
		sub[k.flid] = overlay[k.flid]
	}
}

// kid is a flight of a message's overlay that is a child of master (deriveMAFL).
type kid struct{ master, flid int64 }

// kidsOf returns the kids of master: a run of kids, which is sorted by master.
func kidsOf(kids []kid, master int64) []kid {
	i, _ := slices.BinarySearchFunc(kids, master, func(k kid, m int64) int { return cmp.Compare(k.master, m) })
	j := i
	for j < len(kids) && kids[j].master == master {
		j++
	}
	return kids[i:j]
}

// touch makes s the current state of its flight, changed since the last Take.
func (b *Batch) touch(s *State) {
	id := s.FLID
	b.cur[id], b.touched[id] = s, true
	if m, ok := b.masterOf[id]; ok {
		delete(b.childOf[m], id)
		delete(b.masterOf, id)
	}
	if m, _, ok := ChildOf(s); ok {
		if b.childOf[m] == nil {
			b.childOf[m] = map[int64]bool{}
		}
		b.childOf[m][id], b.masterOf[id] = true, m
	}
}

// bump gives every flight the message changed its next version once (INV-13) and makes the
// message's states the batch's current ones.
func (b *Batch) bump(msgID int64, flids []int64, work map[int64]*State, r *Result) {
	ids := make([]int64, 0, len(work))
	for id := range work {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		old, next := b.cur[id], work[id]
		if !Changed(old, next) {
			if old.Exists() && slices.Contains(flids, id) {
				r.Unchanged++
			}
			if old.Exists() && !next.P.Equal(&old.P) { // provenance only: saved, no version (INV-24b)
				next.Version, next.LastMsgID = old.Version, old.LastMsgID
				b.cur[id] = next
				b.touched[id] = true
			}
			continue
		}
		if old.Exists() {
			next.Version = old.Version + 1
			r.Updated++
		} else {
			next.Version = b.floor[id] + 1
			r.Inserted++
		}
		next.LastMsgID = msgID
		r.Changed = append(r.Changed, Transition{Old: old, Next: next})
	}
	for _, c := range r.Changed {
		b.touch(c.Next)
	}
}

// Take returns every flight changed since the last Take, once, from its stored to its current
// state (by FLID), and counts those states as stored from now on.
func (b *Batch) Take() []Transition {
	ids := make([]int64, 0, len(b.touched))
	for id := range b.touched {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	out := make([]Transition, 0, len(ids))
	for _, id := range ids {
		out = append(out, Transition{Old: b.stored[id], Next: b.cur[id]})
		b.stored[id] = b.cur[id]
	}
	b.touched = map[int64]bool{}
	b.childOf, b.masterOf = map[int64]map[int64]bool{}, map[int64]int64{}
	return out
}
