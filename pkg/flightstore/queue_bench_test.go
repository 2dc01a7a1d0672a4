package flightstore

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/msgx/msgx/pkg/dev/flighttest"
	"github.com/msgx/msgx/pkg/flight"
)

// BenchmarkQueueSave queues what Save sends for 1,000 flights that a FLOP each changed, about as
// many as a default batch of 2,000 FLOPs changes (one time field, re-stamped by the FLOP; every
// other field and the state stamped by a schedule): the flight rows' UPDATE and the detail
// tables' statements, without the round trip.
func BenchmarkQueueSave(b *testing.B) {
	at := time.Date(2026, 12, 6, 8, 35, 0, 0, time.UTC)
	snap := flight.Stamp{DTTM: at.Unix(), MsgID: 100}
	changes := make([]flight.Transition, 1000)
	for i := range changes {
		old := &flight.State{FLID: int64(1000 + i), Status: flight.Active, Version: 1, OperationDay: "2026-12-06", LastMsgID: 100}
		flighttest.FillFields(old, at)
		for f := range old.P.F {
			old.P.F[f] = snap
		}
		old.P.Status = snap
		next := old.Clone()
		next.Version, next.LastMsgID = 2, int64(200+i)
		next.F[flight.ESTT] = flight.Time(at.Add(time.Duration(i) * time.Second))
		next.P.F[flight.ESTT] = flight.Stamp{DTTM: at.Unix() + 60, MsgID: int64(200 + i)}
		changes[i] = flight.Transition{Old: old, Next: &next}
	}
	b.ReportAllocs()
	for b.Loop() {
		batch := &pgx.Batch{}
		queueFlights(batch, changes, at)
		for c := range flight.NumColls {
			queueDetail(batch, c, changes)
		}
	}
}
