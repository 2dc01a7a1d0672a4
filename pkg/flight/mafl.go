package flight

import (
	"cmp"
	"context"
	"slices"
)

// ChildOf returns what s contributes to its master's MAFL (INV-21): the master FLID and the
// element, or ok == false when s is no child (not ACTIVE, no MAID, or a self-reference).
func ChildOf(s *State) (master int64, c Child, ok bool) {
	if s == nil || s.Status != Active || !s.F[MAID].Valid || s.F[MAID].I == s.FLID {
		return 0, Child{}, false
	}
	return s.F[MAID].I, Child{FLID: s.FLID, FLNO: s.F[FLNO].S}, true
}

// Masters returns the masters whose MAFL may change when a flight goes from old to next: the
// old and the new master of a flight whose child contribution changed (MAID moved, FLNO
// changed, deleted, re-activated, created).
func Masters(old, next *State) []int64 {
	om, oc, ook := ChildOf(old)
	nm, nc, nok := ChildOf(next)
	if ook == nok && om == nm && oc == nc {
		return nil
	}
	var out []int64
	if ook {
		out = append(out, om)
	}
	if nok && (!ook || nm != om) {
		out = append(out, nm)
	}
	return out
}

// Project derives the MAFL of master from the stored children (the ACTIVE flights with MAID =
// master before the message) overlaid with the flights the message changed (their next
// states): an overlaid flight replaces its stored contribution. The result is sorted by FLID,
// without self-reference. A master that does not exist or is DELETED gets no projection:
// callers only project existing ACTIVE masters, so dangling references never appear.
func Project(master int64, stored []Child, overlay map[int64]*State) []Child {
	out := make([]Child, 0, len(stored))
	for _, c := range stored {
		if _, ok := overlay[c.FLID]; !ok && c.FLID != master {
			out = append(out, c)
		}
	}
	for _, s := range overlay {
		if m, c, ok := ChildOf(s); ok && m == master {
			out = append(out, c)
		}
	}
	slices.SortFunc(out, func(a, b Child) int { return cmp.Compare(a.FLID, b.FLID) })
	if len(out) == 0 {
		return nil
	}
	return out
}

// Unlinked returns how the masters change when the flights gone are purged (INV-22b): every
// stored ACTIVE master, not purged itself, of an ACTIVE child among them gets its MAFL derived
// again and, when it changed, its next version (LastMsgID kept: no message caused the change).
// Of the flights gone only FLID, Status and MAID matter (ChildOf). Call it before the flights
// are deleted; l reads the masters' stored states.
func Unlinked(ctx context.Context, l Loader, gone []*State) ([]Transition, error) {
	overlay := make(map[int64]*State, len(gone)) // a purged flight contributes nothing
	for _, s := range gone {
		overlay[s.FLID] = nil
	}
	var masters []int64
	for _, s := range gone {
		if m, _, ok := ChildOf(s); ok {
			if _, purged := overlay[m]; !purged {
				masters = append(masters, m)
			}
		}
	}
	if len(masters) == 0 {
		return nil, nil
	}
	slices.Sort(masters)
	masters = slices.Compact(masters)
	ms, err := l.Load(ctx, masters)
	if err != nil {
		return nil, err
	}
	var out []Transition
	for _, id := range masters {
		old := ms.States[id]
		if old == nil || old.Status != Active {
			continue
		}
		next := old.Clone()
		next.MAFL = Project(id, ms.Children[id], overlay)
		if !Changed(old, &next) {
			continue
		}
		next.Version = old.Version + 1
		out = append(out, Transition{Old: old, Next: &next})
	}
	return out, nil
}
