package flight_test

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/dev/sisbuild"
	"github.com/msgx/msgx/pkg/flight"
	"github.com/msgx/msgx/pkg/sis"
)

// TestStateKeepsNoMessageText: a decoded message's text values share the message's whole text;
// the state Apply returns keeps copies of them, so a cached flight does not keep alive every
// message that set one of its fields.
func TestStateKeepsNoMessageText(t *testing.T) {
	t.Parallel()
	inside := func(s, raw string) bool {
		p, b := uintptr(unsafe.Pointer(unsafe.StringData(s))), uintptr(unsafe.Pointer(unsafe.StringData(raw)))
		return p >= b && p < b+uintptr(len(raw))
	}
	check := func(st *flight.State, raw string) {
		t.Helper()
		n := 0
		for f, v := range st.F {
			if v.S != "" {
				n++
				require.False(t, inside(v.S, raw), "field %s shares the message's text", flight.Fields[f].Name)
			}
		}
		for c, rows := range st.C {
			for _, r := range rows {
				for j, v := range r {
					if v.S != "" {
						n++
						require.False(t, inside(v.S, raw), "%s column %d shares the message's text", flight.Collections[c].Name, j)
					}
				}
			}
		}
		require.NotZero(t, n, "the state holds text values")
	}
	decode := func(raw string) *sis.Message {
		m, err := sis.DecodePartialString(raw, sis.Options{Location: loc})
		require.NoError(t, err)
		return m
	}

	schd := sisbuild.SCHD(1, "ADFT", sisbuild.FLTR(15, "CA1501", "23JAN210535", `<GTDT GTNO="1"><GATE>G1</GATE></GTDT>`))
	m := decode(schd)
	s, _, err := flight.Apply(nil, flight.Input{Record: &m.Schedule.Records[0]})
	require.NoError(t, err)
	s.Version = 1
	check(&s, schd)

	for _, raw := range []string{
		sisbuild.Stand(2, sisbuild.DTTM, 15, "S42"),
		sisbuild.FLOP(3, "GTDT", 15, `<GTDT GTNO="1"><GATE>G7</GATE></GTDT>`),
	} {
		next, _, err := flight.Apply(&s, flight.Input{Op: decode(raw).Flop})
		require.NoError(t, err)
		check(&next, raw)
		s = next
	}
	require.Equal(t, flight.Text("S42"), s.F[flight.STND])
}
