package flight_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/flight"
	"github.com/msgx/msgx/pkg/sis"
)

// TestAppendDiffJSON: AppendDiffJSON writes what DiffIn's Changes write, with and without a zone,
// for a new flight, a chain of changes to every kind of unit, a deleted flight and a MAFL.
func TestAppendDiffJSON(t *testing.T) {
	t.Parallel()
	states := []*flight.State{nil, base()}
	for _, in := range []flight.Input{
		estt(7, 0), estt(7, 0), gates("A1", "A2"), delays(false, "AA", "BB"), delays(true, "CC"),
		op("STND", sis.FlightRecord{STND: sis.Val(`2"1<5>`)}),
		op("FDEL", sis.FlightRecord{}),
	} {
		next, _, err := flight.Apply(states[len(states)-1], in)
		require.NoError(t, err)
		states = append(states, &next)
	}
	master := base().Clone()
	master.OperationDay, master.MAFL = "", []flight.Child{{FLID: 16, FLNO: "YG9029"}}
	states = append(states, &master)
	for _, l := range []*time.Location{nil, loc} {
		for i := range states {
			for j := range states {
				if states[j] == nil {
					continue
				}
				want := flight.DiffIn(states[i], states[j], l).AppendJSON([]byte("x"))
				require.Equal(t, string(want), string(flight.AppendDiffJSON([]byte("x"), states[i], states[j], l)), "state %d to %d", i, j)
			}
		}
	}
}
