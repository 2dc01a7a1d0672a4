package sis

import (
	"strconv"
	"time"
)

// This file holds the machinery the element tables of flight.go and season.go are built from: a
// setter per kind of value and one decoder for every kind of collection entry.

// setter decodes child element ci of the element at path into its field of *T and reports
// whether it set a value (an empty element clears the field and sets none). n is ci's 1-based
// ordinal among the siblings of the same name; collections number their entries with it.
type setter[T any] func(x *decoder, t *T, ci int32, path string, n int) (bool, *Error)

// elem is one child element of T: its name and how it is decoded.
type elem[T any] struct {
	name string
	set  setter[T]
}

// str decodes a text leaf, checked against the length limit and code set of its name.
func str[T any](field func(*T) *Field[string]) setter[T] {
	return func(x *decoder, t *T, ci int32, path string, _ int) (bool, *Error) {
		f := field(t)
		err := x.setStr(f, ci, path, x.node(ci).name)
		return f.HasValue(), err
	}
}

// tm decodes a DDMONYYHHMM leaf.
func tm[T any](field func(*T) *Field[time.Time]) setter[T] {
	return func(x *decoder, t *T, ci int32, path string, _ int) (bool, *Error) {
		f := field(t)
		err := x.setTime(f, ci, path)
		return f.HasValue(), err
	}
}

// num decodes an unsigned integer leaf of at most maxVal.
func num[T any](maxVal int, field func(*T) *Field[int]) setter[T] {
	return func(x *decoder, t *T, ci int32, path string, _ int) (bool, *Error) {
		f := field(t)
		err := x.setInt(f, ci, path, maxVal)
		return f.HasValue(), err
	}
}

// id decodes an unsigned 64-bit id leaf of at most maxDigits digits.
func id[T any](maxDigits int, field func(*T) *Field[int64]) setter[T] {
	return func(x *decoder, t *T, ci int32, path string, _ int) (bool, *Error) {
		f := field(t)
		err := x.setID(f, ci, path, maxDigits)
		return f.HasValue(), err
	}
}

// list adds the entry ci, decoded by dec, to a collection; it reports whether an entry was kept.
func list[T, E any](dec entryDecoder[E], field func(*T) *List[E]) setter[T] {
	return func(x *decoder, t *T, ci int32, parent string, n int) (bool, *Error) {
		l := field(t)
		kept := len(l.Items)
		path := parent + "/" + x.node(ci).name + "[" + strconv.Itoa(n) + "]"
		err := addEntryAt(x, l, ci, path, dec)
		return len(l.Items) > kept, err
	}
}

// entry states returned by the collection entry decoders.
const (
	entryItem  = iota // a real entry
	entryEmpty        // an empty entry: dropped
	entryClear        // the bare "remove all" form (DELY, ERUT, SRVT)
)

// entryDecoder decodes the entry element ni at path into *e (zero on entry) and returns its
// state.
type entryDecoder[T any] func(x *decoder, ni int32, path string, e *T) (int, *Error)

// addEntry adds the entry ci of the element at parent to l, numbering it by its name's count
// since the last reset of x.counts.
func addEntry[T any](x *decoder, l *List[T], ci int32, parent string, dec entryDecoder[T]) *Error {
	name := x.node(ci).name
	return addEntryAt(x, l, ci, parent+"/"+name+"["+strconv.Itoa(x.next(name))+"]", dec)
}

// addEntryAt decodes the entry ci at path and adds it to l: an item is appended, an empty
// entry dropped, the bare form marks l ClearAll. Any entry makes l present. The entry is decoded
// in its place at the end of l.Items (no copy of it is kept anywhere else).
func addEntryAt[T any](x *decoder, l *List[T], ci int32, path string, dec entryDecoder[T]) *Error {
	var zero T
	n := len(l.Items)
	l.Items = append(l.Items, zero)
	state, err := dec(x, ci, path, &l.Items[n])
	if err != nil {
		return err
	}
	l.Present = true
	if state != entryItem {
		l.Items[n] = zero
		l.Items = l.Items[:n]
	}
	if state == entryClear {
		l.ClearAll = true
	}
	return nil
}

// maxEntryElems bounds the child elements of one kind of entry (one bit each in a uint8).
const maxEntryElems = 8

// entryKind describes one kind of collection entry (a ROUT, PSDT, GTDT... element): an
// optional sequence-number attribute, its child elements and what an entry holding any value
// must carry. Its decode is the entryDecoder of that kind.
type entryKind[E any] struct {
	seq      string               // the sequence-number attribute, "" when there is none
	seqField func(*E) *Field[int] // where seq goes
	seqReq   bool                 // an entry holding a value must carry seq
	elems    []elem[E]            // the child elements, at most maxEntryElems
	blank    int                  // the state of an entry without any value: entryEmpty or entryClear
	key      string               // the child element an entry holding a value must carry
	keyMsg   string               // the rejection when key is missing; "" for key+" required"
	orphan   string               // set: an entry without key is dropped with this warning instead
	keyBit   uint8                // the bit of key in the value mask of decode
}

// newEntryKind completes k (the bit of its key, its rejection) and checks it against the limits
// of decode.
func newEntryKind[E any](k entryKind[E]) *entryKind[E] {
	if len(k.elems) > maxEntryElems {
		panic("sis: entry kind with more than " + strconv.Itoa(maxEntryElems) + " child elements")
	}
	for i, e := range k.elems {
		if e.name == k.key {
			k.keyBit = 1 << i
		}
	}
	if k.keyBit == 0 {
		panic("sis: entry key " + k.key + " is not a child element")
	}
	if k.keyMsg == "" {
		k.keyMsg = k.key + " required"
	}
	return &k
}

// decode is the entryDecoder of k.
func (k *entryKind[E]) decode(x *decoder, ni int32, path string, e *E) (int, *Error) {
	if err := x.noText(ni, path); err != nil {
		return 0, err
	}
	seqSet := false
	if k.seq != "" {
		f := k.seqField(e)
		if err := x.seqAttr(f, ni, path, k.seq); err != nil {
			return 0, err
		}
		seqSet = f.HasValue()
	}
	var got uint8               // bit i: child element i set a value
	var seen [maxEntryElems]int // occurrences of each child element so far
	for c := x.node(ni).first; c >= 0; c = x.node(c).next {
		i := k.elem(x.node(c).name)
		if i < 0 {
			return 0, unknown(path, x.node(c).name)
		}
		seen[i]++
		ok, err := k.elems[i].set(x, e, c, path, seen[i])
		if err != nil {
			return 0, err
		}
		if ok {
			got |= 1 << i
		}
	}
	return k.state(x, path, got, seqSet)
}

func (k *entryKind[E]) elem(name string) int {
	for i := range k.elems {
		if k.elems[i].name == name {
			return i
		}
	}
	return -1
}

// state decides what a decoded entry is from the values it holds.
func (k *entryKind[E]) state(x *decoder, path string, got uint8, seqSet bool) (int, *Error) {
	switch {
	case got == 0 && !seqSet:
		return k.blank, nil
	case k.seqReq && !seqSet:
		return 0, protocol(path+"@"+k.seq, "", k.seq+" required")
	case got&k.keyBit == 0 && k.orphan != "":
		x.warn(path + ": " + k.orphan)
		return entryEmpty, nil
	case got&k.keyBit == 0:
		return 0, protocol(path+"/"+k.key, "", k.keyMsg)
	}
	return entryItem, nil
}

func required(ok bool, path, msg string) *Error {
	if ok {
		return nil
	}
	return protocol(path, "", msg)
}

func unknown(path, name string) *Error {
	return codecErr(path+"/"+name, name, "unknown element")
}
