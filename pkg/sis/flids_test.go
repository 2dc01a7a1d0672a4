package sis

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestMessageFLIDs(t *testing.T) {
	t.Parallel()
	rec := func(f Field[int64]) FlightRecord { return FlightRecord{FLID: f} }
	for _, tc := range []struct {
		name string
		m    Message
		want []int64
	}{
		{"flop", Message{Kind: KindFlightUpdate, Flop: &FlightOp{FLID: 42}}, []int64{42}},
		{"schedule: sorted, once each, only FLIDs with a value", Message{Kind: KindScheduleAdd, Schedule: &Schedule{Records: []FlightRecord{
			rec(Val[int64](7)), rec(Field[int64]{}), rec(Val[int64](3)), rec(Field[int64]{Present: true, Empty: true}), rec(Val[int64](7)),
		}}}, []int64{3, 7}},
		{"empty schedule", Message{Kind: KindScheduleSnapshot, Schedule: &Schedule{}}, nil},
		{"reference list", Message{Kind: KindRefList, RefList: &RefList{}}, nil},
		{"unsupported", Message{Kind: KindUnsupported}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, tc.m.FLIDs())
		})
	}
}
