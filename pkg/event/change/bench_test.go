package change_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/dev/flighttest"
	"github.com/msgx/msgx/pkg/event"
	"github.com/msgx/msgx/pkg/event/change"
	"github.com/msgx/msgx/pkg/flight"
)

// BenchmarkAppend builds the events of a FLOP's change (one time field and one gate row of a
// flight with every field set) and of a new flight, with instants in the airport's zone.
func BenchmarkAppend(b *testing.B) {
	loc, err := time.LoadLocation("Asia/Shanghai")
	require.NoError(b, err)
	at := time.Date(2026, 12, 6, 8, 35, 0, 0, time.UTC)
	next := fullFlight(1000, 2, at)
	next.C[flight.GTDT] = []flight.Row{{flight.Int(1), flight.Text("G1"), flight.Time(at)}}
	old := next.Clone()
	old.Version, old.F[flight.ESTT], old.C[flight.GTDT] = 1, flight.Null, nil
	src := event.Source{MsgID: 42, Type: "FLOP", Styp: "ESTT"}
	var evs []event.Event
	for b.Loop() {
		evs = change.Append(evs[:0], loc, src, &old, next)
		evs = change.Append(evs, loc, src, nil, next)
	}
}

// BenchmarkLog gathers the events of 1,000 FLOP changes (half of a default processor batch; one
// time field each) over 400 flights with every field set, with instants in the airport's zone.
func BenchmarkLog(b *testing.B) {
	loc, err := time.LoadLocation("Asia/Shanghai")
	require.NoError(b, err)
	at := time.Date(2026, 12, 6, 8, 35, 0, 0, time.UTC)
	type step struct{ old, next *flight.State }
	var changes []step
	for i := range 1000 {
		next := fullFlight(int64(1000+i%400), int64(2+i/400), at)
		old := next.Clone()
		old.Version, old.F[flight.ESTT] = next.Version-1, flight.Time(at.Add(time.Duration(i)*time.Second))
		changes = append(changes, step{&old, next})
	}
	b.ReportAllocs()
	for b.Loop() {
		l := change.Log{Loc: loc}
		for i, c := range changes {
			l.Changed(event.Source{MsgID: int64(i + 1), Type: "FLOP", Styp: "ESTT"}, c.old, c.next)
		}
		l.Take()
	}
}

// fullFlight is an active flight of 2026-12-06 with every field set: times from at a minute
// apart, numbers and texts from the field's index.
func fullFlight(flid, version int64, at time.Time) *flight.State {
	next := &flight.State{FLID: flid, Status: flight.Active, Version: version, OperationDay: "2026-12-06"}
	flighttest.FillFields(next, at)
	return next
}
