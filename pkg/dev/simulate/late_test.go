package simulate

import (
	"context"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/flight"
	"github.com/msgx/msgx/pkg/sis"
)

// noStore is a flight.Loader with nothing stored (the day creates every flight).
type noStore struct{}

func (noStore) Load(context.Context, []int64) (flight.Stored, error) { return flight.Stored{}, nil }

// foldDay applies the day's good messages with the batch rules of package flight in the given
// order, each stamped with its own index as msg_id and its DTTM (INV-24b), and returns the final
// states and the result of message late.
func foldDay(t *testing.T, d Day, order []int, late int) (map[int64]flight.State, flight.Result) {
	t.Helper()
	b := flight.NewBatch(noStore{})
	opt := sis.Options{Location: d.Config.Location}
	var lateResult flight.Result
	for _, i := range order {
		m := d.Messages[i]
		if m.Outcome != OutcomeApplied || (m.Type != "FLOP" && m.Type != "SCHD") {
			continue
		}
		msg, err := sis.Decode(m.Raw, opt)
		require.NoError(t, err)
		at := flight.StampOf(int64(i+1), msg.Meta.DTTM)
		var inputs []flight.Input
		if msg.Flop != nil {
			inputs = append(inputs, flight.Input{Op: msg.Flop, At: at})
		}
		if msg.Schedule != nil {
			for k := range msg.Schedule.Records {
				inputs = append(inputs, flight.Input{Record: &msg.Schedule.Records[k], At: at})
			}
		}
		r, err := b.Apply(context.Background(), int64(i+1), inputs)
		require.NoError(t, err, "message %d", i)
		if i == late {
			lateResult = r
		}
	}
	out := map[int64]flight.State{}
	for _, tr := range b.Take() {
		s := *tr.Next
		s.P, s.Version, s.LastMsgID = flight.Prov{}, 0, 0 // compare values only
		out[s.FLID] = s
	}
	return out, lateResult
}

// TestModelFollowsLateRule: the model's account of a late row (Day.Overtaken, Expected
// unchanged) is what package flight does. Each candidate of LateCandidates is moved to the end of
// the day (processed after every later message, its id and DTTM unchanged): the final states equal
// the mailbox-order ones, and the units it leaves unwritten are exactly those Overtaken names.
func TestModelFollowsLateRule(t *testing.T) {
	t.Parallel()
	d := Generate(Config{Seed: 5, Flights: 30, Additions: 2})
	inOrder := make([]int, len(d.Messages))
	for i := range inOrder {
		inOrder[i] = i
	}
	want, _ := foldDay(t, d, inOrder, -1)
	cands := d.LateCandidates(12)
	require.Len(t, cands, 12)
	for _, c := range cands {
		order := append(slices.Delete(slices.Clone(inOrder), c, c+1), c)
		got, r := foldDay(t, d, order, c)
		require.Equal(t, want, got, "late message %d (%s FLID %d) changed the final state", c, d.Messages[c].Subtype, d.Messages[c].FLID)
		names, all := d.Overtaken(c)
		stale := r.Stale
		if all {
			require.Equal(t, 1, r.Skipped, "message %d", c)
			require.Len(t, r.Skips, 1)
			require.NoError(t, r.Skips[0].Err, "message %d: stale as a whole", c)
			stale = r.Skips[0].Stale
		} else {
			require.Equal(t, 1, r.Applied, "message %d", c)
		}
		require.ElementsMatch(t, names, stale, "late message %d (%s)", c, d.Messages[c].Subtype)
	}
}
