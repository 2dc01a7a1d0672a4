package flights_test

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// BenchmarkSnapshot2000 applies a generated 2,000-flight day as one SCHD DNLD through the pump
// (decode, validate, load, merge, save, 4,000 events, snapshot log).
func BenchmarkSnapshot2000(b *testing.B) {
	d := genDay(2000, 1)
	for b.Loop() {
		b.StopTimer()
		e := setup(b, 100)
		e.enqueue(b, d.snapshot)
		b.StartTimer()
		e.drain(b)
		b.StopTimer()
		require.Equal(b, 2000, countFlights(b, e))
		b.StartTimer()
	}
}

// BenchmarkSnapshot2000Again applies the same 2,000-flight DNLD a second time (a daily re-send):
// no value changes, so no version and no event, but every carried unit is re-stamped (INV-24b),
// so each flight's provenance is saved (one UPDATE of flight.prov for the whole message).
func BenchmarkSnapshot2000Again(b *testing.B) {
	d := genDay(2000, 1)
	for b.Loop() {
		b.StopTimer()
		e := setup(b, 100)
		e.run(b, d.snapshot)
		events := e.countEvents(b)
		again := seqnRE.ReplaceAllString(d.snapshot, "<SEQN>999999</SEQN>")
		e.enqueue(b, again)
		b.StartTimer()
		e.drain(b)
		b.StopTimer()
		require.Equal(b, events, e.countEvents(b), "an unchanged snapshot publishes nothing")
		b.StartTimer()
	}
}

// BenchmarkFlopRate pushes FLOP updates of a generated day through the pump (batch 2,000, the
// flight processor's batch session) and reports messages per second, beside the one-transaction-per-message
// ceiling of the same server (a pgbench-like loop: BEGIN; one UPDATE; COMMIT).
func BenchmarkFlopRate(b *testing.B) {
	n := 5000
	if v, err := strconv.Atoi(os.Getenv("MSGX_BENCH_FLOPS")); err == nil {
		n = v
	}
	d := genDay(2000, 2)
	batch := 2000 // MSGX_PUMP_BATCH's default
	if v, err := strconv.Atoi(os.Getenv("MSGX_BENCH_BATCH")); err == nil {
		batch = v
	}
	e := setup(b, batch)
	e.run(b, d.snapshot)
	var total time.Duration
	var msgs int
	for b.Loop() {
		b.StopTimer()
		raws := make([]string, n)
		for i := range raws {
			raws[i] = d.nextFlop()
		}
		e.enqueue(b, raws...)
		b.StartTimer()
		start := time.Now()
		e.drain(b)
		total += time.Since(start)
		msgs += n
	}
	b.ReportMetric(float64(msgs)/total.Seconds(), "msgs/s")
	b.ReportMetric(txCeiling(b, e), "tx/s-ceiling")
}

// txCeiling measures one-statement transactions per second on the test server.
func txCeiling(b *testing.B, e *env) float64 {
	ctx := context.Background()
	_, err := e.db.Pool.Exec(ctx, `CREATE TABLE bench_ceiling (id int PRIMARY KEY, n bigint)`)
	require.NoError(b, err)
	_, err = e.db.Pool.Exec(ctx, `INSERT INTO bench_ceiling SELECT g, 0 FROM generate_series(1, 1000) g`)
	require.NoError(b, err)
	const n = 3000
	start := time.Now()
	for i := range n {
		require.NoError(b, pgx.BeginFunc(ctx, e.db.Pool, func(tx pgx.Tx) error {
			_, err := tx.Exec(ctx, `UPDATE bench_ceiling SET n = n + 1 WHERE id = $1`, i%1000+1)
			return err
		}))
	}
	return n / time.Since(start).Seconds()
}

func countFlights(b testing.TB, e *env) int {
	var n int
	require.NoError(b, e.db.Pool.QueryRow(context.Background(), `SELECT count(*) FROM flight`).Scan(&n))
	return n
}
