package flight

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// marshalProvSorted is the stored provenance written by sorting every stamped unit stably by
// stamp, the definition AppendProv's walk per stamp must match byte for byte.
func marshalProvSorted(p *Prov) []byte {
	type unit struct {
		st   Stamp
		name string
	}
	var units []unit
	add := func(st Stamp, name string) {
		if st != (Stamp{}) {
			units = append(units, unit{st, name})
		}
	}
	for f := range NumFields {
		add(p.F[f], Fields[f].Name)
	}
	add(p.Status, "state")
	for c := range NumColls {
		add(p.W[c], Collections[c].Name)
	}
	for _, k := range sortedEntryKeys(p.E) {
		add(p.E[k], entryName(k.C, k.K))
	}
	slices.SortStableFunc(units, func(a, b unit) int { return compareStamps(a.st, b.st) })
	b := []byte{'['}
	for i, u := range units {
		if i == 0 || u.st != units[i-1].st {
			if i > 0 {
				b = append(b, "],"...)
			}
			b = append(b, '[')
			b = strconv.AppendInt(b, u.st.DTTM, 10)
			b = append(b, ',')
			b = strconv.AppendInt(b, u.st.MsgID, 10)
		}
		b = append(b, ',')
		b = appendString(b, u.name)
	}
	if len(units) > 0 {
		b = append(b, ']')
	}
	return append(b, ']')
}

// MarshalProv writes what sorting the units by stamp writes: random provenances with up to a
// dozen distinct stamps (some sharing a msg_id or a DTTM), entries of int and text keys, and
// none at all.
func TestMarshalProvMatchesSort(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	var textColl, intColl C = -1, -1
	for c := range NumColls {
		switch Collections[c].Cols[0].Kind {
		case KindInt:
			intColl = c
		case KindText:
			textColl = c
		}
	}
	require.True(t, intColl >= 0 && textColl >= 0)
	for range 3000 {
		n := rng.IntN(13)
		pool := make([]Stamp, n+1) // pool[0] is the zero stamp: a unit not stamped
		for i := 1; i <= n; i++ {
			pool[i] = Stamp{DTTM: 1_796_000_000 + rng.Int64N(3), MsgID: 100 + rng.Int64N(4)}
		}
		pick := func() Stamp { return pool[rng.IntN(len(pool))] }
		var p Prov
		for f := range p.F {
			p.F[f] = pick()
		}
		p.Status = pick()
		for c := range p.W {
			p.W[c] = pick()
		}
		if rng.IntN(2) == 0 {
			p.E = map[EntryKey]Stamp{}
			for range rng.IntN(5) {
				p.E[EntryKey{intColl, Int(rng.Int64N(20))}] = pick()
				p.E[EntryKey{textColl, Text(string(rune('A' + rng.IntN(5))))}] = pick()
			}
		}
		require.Equal(t, string(marshalProvSorted(&p)), string(MarshalProv(&p)))
		require.Equal(t, "x"+string(marshalProvSorted(&p)), string(AppendProv([]byte("x"), &p)))
	}
	require.Equal(t, "[]", string(MarshalProv(&Prov{})))
}
