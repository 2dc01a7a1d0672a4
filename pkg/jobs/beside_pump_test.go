package jobs_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/clock"
	"github.com/msgx/msgx/pkg/dev/testdb"
	"github.com/msgx/msgx/pkg/jobs"
	"github.com/msgx/msgx/pkg/leader"
	"github.com/msgx/msgx/pkg/processor"
	"github.com/msgx/msgx/pkg/sis"
)

// figures are what one besidePump run measured. Head age is how long a message waited from
// enqueue until the pump took it as head (finished_at − enqueued_at; the pump stamps finished_at
// with its batch's start time).
type figures struct {
	msgsBase, msgsJobs                 int
	baseP50, baseP99, baseMax          time.Duration
	jobsP50, jobsP99, jobsMax          time.Duration
	pumpCycle                          time.Duration // mean pump transaction
	jobsTook                           time.Duration
	archived, purged                   int
	retentionRuns, historyRuns, rateHz int
}

func (f figures) String() string {
	return fmt.Sprintf("head age without jobs (%d msgs): p50 %s p99 %s max %s | with jobs (%d msgs): p50 %s p99 %s max %s | "+
		"mean pump tx %s | jobs archived %d proc_state rows and purged %d flights in %s (%d retention + %d history runs) | producer %d msg/s",
		f.msgsBase, f.baseP50, f.baseP99, f.baseMax, f.msgsJobs, f.jobsP50, f.jobsP99, f.jobsMax,
		f.pumpCycle, f.archived, f.purged, f.jobsTook.Round(time.Millisecond), f.retentionRuns, f.historyRuns, f.rateHz)
}

// besidePump fills proc_state with rows archivable terminal rows and flight with flights
// purgeable flights (3 detail rows each), then runs the pump on a steady stream of messages
// (each updating one of 100 live flights under PIPELINE_LOCK): first alone, then while the
// retention and history jobs run back to back until they have nothing left.
func besidePump(tb testing.TB, rows, flights int) figures {
	db := testdb.New(tb)
	c := context.Background()
	now := time.Now()
	exec := func(q string, args ...any) {
		tb.Helper()
		_, err := db.Pool.Exec(c, q, args...)
		require.NoError(tb, err)
	}
	exec(`INSERT INTO leader_lease VALUES ('jobs', 1, 'test', 0, $1, $1), ('processor', 1, 'test', 0, $1, $1)`, now)
	old := now.Add(-40 * 24 * time.Hour)
	exec(`INSERT INTO proc_state (msg_id, raw, raw_sha256, status, attempts, identity_key, enqueued_at, finished_at,
	        backfill_next_at, backfill_done_at, backfill_outcome)
	      SELECT g, repeat('x', 300), sha256(g::text::bytea), 'SUCCEEDED', 1, 'AODB|FLOP|STND|old' || g, $1, $1, $1, $1, 'MARKED'
	        FROM generate_series(1, $2::int) g`, old, rows)
	exec(`UPDATE inbox_cursor SET watermark = $1`, rows)
	opDay := now.AddDate(0, 0, -10).UTC().Truncate(24 * time.Hour)
	exec(`INSERT INTO flight (flid, alcd, flno, mvin, operation_day, state, state_version, created_at, updated_at)
	      SELECT g, 'CA', 'CA' || g, 'A', $1, CASE WHEN g % 2 = 0 THEN 'DELETED' ELSE 'ACTIVE' END, 3, $2, $2
	        FROM generate_series(1, $3::int) g`, opDay, now.Add(-5*24*time.Hour), flights)
	exec(`INSERT INTO flight_route (flid, kind, rtno, ord, apcd) SELECT g, 'ROUT', r, r, 'PEK' FROM generate_series(1, $1::int) g, generate_series(1, 2) r`, flights)
	exec(`INSERT INTO flight_gate (flid, gtno, ord, gate) SELECT g, 1, 1, 'G' || (g % 50) FROM generate_series(1, $1::int) g`, flights)
	const live = 900_000_000
	exec(`INSERT INTO flight (flid, alcd, flno, mvin, operation_day, created_at, updated_at)
	      SELECT $1 + g, 'MU', 'MU' || g, 'D', $2, $3, $3 FROM generate_series(1, 100) g`, live, now.UTC().Truncate(24*time.Hour), now)
	exec(`ANALYZE`)

	proc := procFunc(func(ctx context.Context, tx pgx.Tx, m processor.Message) (processor.Outcome, error) {
		_, err := tx.Exec(ctx, `UPDATE flight SET stnd = $2, state_version = state_version + 1, updated_at = $3 WHERE flid = $1`,
			m.Decoded.Flop.FLID, fmt.Sprintf("S%d", m.ID%7), m.Now)
		return processor.Outcome{}, err
	})
	reg := prometheus.NewRegistry()
	p := processor.New(processor.Config{
		Batch: 100, MaxAttempts: 5, BackoffBase: 100 * time.Millisecond, BackoffMax: time.Second,
		HeadDeadline: 10 * time.Minute, IdlePoll: time.Millisecond, Location: time.UTC,
	}, db.Pool, map[sis.Kind]processor.Handler{sis.KindFlightUpdate: proc}, nil, clock.System{}, processor.NewMetrics(reg), zerolog.Nop())
	cfg := jobs.Defaults()
	cfg.Shadow = true
	j, err := jobs.New(cfg, db.Pool, nil, clock.System{}, nil, zerolog.Nop())
	require.NoError(tb, err)
	jl := leader.Lease{Role: "jobs", Epoch: 1}

	ctx, cancel := context.WithCancel(c)
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	wg.Go(func() { _ = p.Run(ctx, leader.Lease{Role: "processor", Epoch: 1}) })

	// The producer: one message every 5 ms, as ingest enqueues them.
	const period = 5 * time.Millisecond
	var mu sync.Mutex
	next := int64(rows)
	produce := func(until func() bool) (from, to int64) {
		mu.Lock()
		defer mu.Unlock()
		from = next + 1
		t := time.NewTicker(period)
		defer t.Stop()
		for !until() {
			<-t.C
			next++
			raw := flop(int(next), live+1+next%100, fmt.Sprintf("S%d", next%7))
			_, err := db.Pool.Exec(c, `WITH i AS (INSERT INTO proc_state (msg_id, raw, raw_sha256, enqueued_at)
				VALUES ($1, $2, sha256(convert_to($2::text, 'UTF8')), $3) RETURNING msg_id)
				UPDATE inbox_cursor SET watermark = (SELECT msg_id FROM i)`, next, raw, time.Now())
			require.NoError(tb, err)
		}
		return from, next
	}
	waitDrained := func(to int64) {
		require.EventuallyWithT(tb, func(ct *assert.CollectT) {
			var open int
			assert.NoError(ct, db.Pool.QueryRow(c, `SELECT count(*) FROM proc_state WHERE status IN ('PENDING','FAILED') AND msg_id <= $1`, to).Scan(&open))
			assert.Zero(ct, open, "messages not processed yet")
		}, 5*time.Minute, 10*time.Millisecond)
	}
	ages := func(from, to int64) (n int, p50, p99, mx time.Duration) {
		var a, b, m float64
		require.NoError(tb, db.Pool.QueryRow(c, `
			SELECT count(*),
			       percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM finished_at - enqueued_at)),
			       percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM finished_at - enqueued_at)),
			       max(extract(epoch FROM finished_at - enqueued_at))
			  FROM proc_state WHERE msg_id BETWEEN $1 AND $2 AND status = 'SUCCEEDED'`, from, to).Scan(&n, &a, &b, &m))
		sec := func(f float64) time.Duration {
			return time.Duration(f * float64(time.Second)).Round(100 * time.Microsecond)
		}
		return n, sec(a), sec(b), sec(m)
	}

	var f figures
	f.rateHz = int(time.Second / period)
	baseEnd := time.Now().Add(3 * time.Second)
	from, to := produce(func() bool { return time.Now().After(baseEnd) })
	waitDrained(to)
	f.msgsBase, f.baseP50, f.baseP99, f.baseMax = ages(from, to)

	var jobsDone sync.WaitGroup
	var finished bool
	var jobsErr error
	var fmu sync.Mutex
	start := time.Now()
	jobsDone.Go(func() {
		defer func() {
			fmu.Lock()
			finished = true
			f.jobsTook = time.Since(start)
			fmu.Unlock()
		}()
		for {
			r1, err := j.RunOnce(ctx, jobs.Retention, jl)
			f.retentionRuns++
			f.archived += r1.Done
			if err != nil {
				jobsErr = err
				return
			}
			r2, err := j.RunOnce(ctx, jobs.History, jl)
			f.historyRuns++
			f.purged += r2.Done
			if err != nil {
				jobsErr = err
				return
			}
			if !r1.More && !r2.More && r1.Done == 0 && r2.Done == 0 {
				return
			}
		}
	})
	from, to = produce(func() bool { fmu.Lock(); defer fmu.Unlock(); return finished })
	jobsDone.Wait()
	require.NoError(tb, jobsErr)
	waitDrained(to)
	f.msgsJobs, f.jobsP50, f.jobsP99, f.jobsMax = ages(from, to)

	mfs, err := reg.Gather()
	require.NoError(tb, err)
	for _, mf := range mfs {
		if mf.GetName() == "msgx_pump_tx_seconds" {
			h := mf.GetMetric()[0].GetHistogram()
			if h.GetSampleCount() > 0 {
				f.pumpCycle = time.Duration(h.GetSampleSum() / float64(h.GetSampleCount()) * float64(time.Second)).Round(10 * time.Microsecond)
			}
		}
	}
	require.Equal(tb, rows, f.archived)
	require.Equal(tb, flights, f.purged)
	return f
}

// Jobs never block the pump: 100,000 archivable proc_state rows and 10,000 flights to purge
// while the pump drains a steady stream. The figures are logged; the benchmark has the full
// size. (No timed assertion: performance lives in the benchmark.)
func TestJobsBesidePump(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("large data set")
	}
	t.Log(besidePump(t, 100_000, 10_000))
}

// BenchmarkJobsBesidePump is the acceptance size: 1,000,000 proc_state rows, 100,000 flights.
func BenchmarkJobsBesidePump(b *testing.B) {
	for range b.N {
		f := besidePump(b, 1_000_000, 100_000)
		b.Log(f)
		b.ReportMetric(f.baseP99.Seconds()*1000, "base_p99_ms")
		b.ReportMetric(f.baseMax.Seconds()*1000, "base_max_ms")
		b.ReportMetric(f.jobsP99.Seconds()*1000, "jobs_p99_ms")
		b.ReportMetric(f.jobsMax.Seconds()*1000, "jobs_max_ms")
		b.ReportMetric(f.pumpCycle.Seconds()*1000, "pump_tx_ms")
		b.ReportMetric(f.jobsTook.Seconds(), "jobs_s")
	}
}
