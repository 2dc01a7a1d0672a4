package e2e_test

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/dev/mailboxdb"
	"github.com/msgx/msgx/pkg/dev/simulate"
	"github.com/msgx/msgx/pkg/dev/stack"
	"github.com/msgx/msgx/pkg/dev/testdb"
)

// BenchmarkEndToEnd is `make bench`'s end-to-end benchmark (issue 9): the four binaries as real
// processes, local PostgreSQL and MariaDB, the development Kafka broker process. One op is the whole run:
//
//  1. throughput: the reference lists and the 1,200-flight schedule snapshot of a simulated day
//     plus 100,000 FLOP updates over those flights are in the mailbox before the binaries start;
//     the clock runs from the start of the stack until every message is terminal and no
//     KAFKA:msg event is left unacknowledged by the broker (e2e_msgs_per_s);
//  2. the ceilings, same servers, same run: pgbench with the one-message-per-transaction shape of
//     the pump, and raw sarama produce of events of the observed size to the same broker;
//  3. latency: fresh databases, MSGX_POLL_INTERVAL=100ms, the snapshot first, then FLOPs at a
//     steady 200 messages/s for 30 s; mailbox commit → a consumer's receipt on
//     msgx.flight.changes (p50, p99);
//  4. each binary's peak RSS (VmHWM) just before it stops, the larger of the two stacks.
//
// With MSGX_BENCH_WRITE=1 (make bench) it adds a dated section to docs/benchmarks.md.
//
//	MSGX_BENCH_WRITE=1 go test -run '^$' -bench BenchmarkEndToEnd -benchtime 1x -timeout 30m ./e2e/
func BenchmarkEndToEnd(b *testing.B) {
	if testing.Short() {
		b.Skip("end-to-end benchmark: minutes of real processes")
	}
	env := newBenchEnv(b)
	var r benchResult
	for b.Loop() {
		r = env.run(b)
	}
	b.ReportMetric(r.e2eRate, "e2e_msgs/s")
	b.ReportMetric(r.pgbenchTPS, "pgbench_1msg_tx/s")
	b.ReportMetric(r.e2eRate/r.pgbenchTPS, "x_pgbench")
	b.ReportMetric(r.saramaRate, "sarama_raw/s")
	b.ReportMetric(r.e2eRate/r.saramaRate, "x_sarama")
	b.ReportMetric(ms(r.p50), "p50_ms")
	b.ReportMetric(ms(r.p99), "p99_ms")
	b.ReportMetric(r.rssMaxMB(), "rss_max_MB")
	section := r.section()
	fmt.Println("\n" + section) // not b.Log: benchmark logs are cut at ten lines
	if benchWrite() {
		require.NoError(b, writeBenchmarks(filepath.Join(env.root, "docs", "benchmarks.md"), section))
		fmt.Println("written to docs/benchmarks.md")
	}
}

const (
	benchFlights    = 1200
	benchBacklog    = 100_000
	benchRate       = 200 // messages/s of the latency run
	benchLatencyFor = 30 * time.Second
)

// benchEnv is what both runs share: binaries, servers, the simulated day.
type benchEnv struct {
	root, bin, logs     string
	dbs                 stack.Databases    // fresh for each run, dropped at the end
	head                []simulate.Message // reference lists and the schedule snapshot
	flights             []simulate.Flight  // the snapshot's records
	machine             machine
	ctx                 context.Context
	throughputDeadline  time.Duration
	latencyDrainTimeout time.Duration
}

func newBenchEnv(b *testing.B) *benchEnv {
	root, err := stack.Root()
	require.NoError(b, err)
	bin := benchBinaries(b, root)
	u, err := url.Parse(testdb.AdminURL())
	require.NoError(b, err)
	u.Path, u.RawQuery = "", ""
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	b.Cleanup(cancel)
	e := &benchEnv{
		root: root, bin: bin, logs: filepath.Join(root, ".devstack", "bench", "logs"),
		dbs: stack.Databases{ // per process: concurrent runs must not share databases
			PGServer: u.String(), PGDatabase: fmt.Sprintf("msgx_e2e_bench_%d", os.Getpid()),
			MySQLServer: mailboxdb.ServerDSN(), MySQLDB: fmt.Sprintf("msgx_e2e_bench_%d_mailbox", os.Getpid()), Fresh: true,
		},
		ctx: ctx, throughputDeadline: 15 * time.Minute, latencyDrainTimeout: 3 * time.Minute,
	}
	require.NoError(b, os.RemoveAll(e.logs))
	b.Cleanup(func() {
		if err := stack.Drop(context.Background(), e.dbs); err != nil {
			b.Errorf("drop the benchmark's databases: %v", err)
		}
	})
	cfg := simulate.DefaultConfig()
	cfg.Flights, cfg.BadShare, cfg.Additions, cfg.Seed = benchFlights, 0, 0, 9
	cfg.Date = benchToday(b)
	day := simulate.Generate(cfg)
	snap := slices.IndexFunc(day.Messages, func(m simulate.Message) bool { return m.Type == "SCHD" && m.Subtype == "DNLD" })
	require.GreaterOrEqual(b, snap, 0, "the day has no schedule snapshot")
	e.head = day.Messages[:snap+1]
	e.flights = day.Messages[snap].Records
	require.Len(b, e.flights, benchFlights)
	return e
}

// benchResult is the figures of one run.
type benchResult struct {
	machine              machine
	at                   time.Time
	loadStart, loadEnd   string
	backlog              int                      // messages drained (head + FLOPs)
	drain                time.Duration            // stack start → all delivered
	ingested, processed  time.Duration            // stack start → watermark at the end, nothing open
	cpu, dbCPU           map[string]time.Duration // CPU time of each binary, of the servers, during the drain
	e2eRate              float64
	events               int64 // KAFKA:msg events delivered by the throughput run
	payload              int   // their mean payload size (bytes)
	pgbenchTPS           float64
	saramaRate           float64
	latencyMsgs, arrived int
	p50, p90, p99, pmax  time.Duration
	rss                  map[string]int64 // peak RSS per binary (bytes)
}

func (e *benchEnv) run(b *testing.B) benchResult {
	r := benchResult{at: time.Now().UTC(), loadStart: loadAvg(), rss: map[string]int64{},
		cpu: map[string]time.Duration{}}
	e.throughput(b, &r)
	e.latency(b, &r)
	r.loadEnd = loadAvg()
	r.machine = e.machine
	return r
}

// prepare recreates both databases and returns a pool on PostgreSQL and the mailbox DSN.
func (e *benchEnv) prepare(b *testing.B) (*pgxpool.Pool, string, string) {
	pgURL, mysqlDSN, err := stack.Prepare(e.ctx, e.dbs)
	require.NoError(b, err)
	cfg, err := pgxpool.ParseConfig(pgURL)
	require.NoError(b, err)
	cfg.MaxConns = 2
	pool, err := pgxpool.NewWithConfig(e.ctx, cfg)
	require.NoError(b, err)
	b.Cleanup(pool.Close)
	return pool, pgURL, mysqlDSN
}

// write inserts msgs into the mailbox with the simulator's Writer and returns the highest id.
func (e *benchEnv) write(b *testing.B, dsn string, cfg simulate.WriterConfig, msgs []simulate.Message) int64 {
	db, err := simulate.OpenMailbox(dsn)
	require.NoError(b, err)
	defer db.Close()
	w, err := simulate.NewWriter(db, cfg)
	require.NoError(b, err)
	wr, err := w.Write(e.ctx, msgs)
	require.NoError(b, err)
	require.Len(b, wr.IDs, len(msgs))
	return slices.Max(wr.IDs)
}

// throughput drains the pre-written backlog, then measures both ceilings.
func (e *benchEnv) throughput(b *testing.B, r *benchResult) {
	pool, pgURL, dsn := e.prepare(b)
	e.machine = describeMachine(e.ctx, b, pool, dsn)
	gen := newFlopGen(e.flights, e.head[len(e.head)-1].SEQN+1, e.head[len(e.head)-1].At, 1)
	flops := gen.messages(benchBacklog)
	e.write(b, dsn, simulate.WriterConfig{Conns: 1, Batch: 1}, e.head)
	maxID := e.write(b, dsn, simulate.WriterConfig{Conns: 4, Batch: 500}, flops)
	r.backlog = len(e.head) + len(flops)

	start := time.Now()
	s, err := stack.Start(e.ctx, stack.Options{
		BinDir: e.bin, LogDir: filepath.Join(e.logs, "throughput"), PGURL: pgURL, MySQL: dsn, RandomPorts: true,
	})
	require.NoError(b, err)
	stopped := false
	defer func() {
		if !stopped {
			_ = s.Close()
		}
	}()
	pgCPU, myCPU := stack.CommCPU("postgres"), stack.CommCPU("mariadbd")
	e.drainStages(b, pool, maxID, start, r)
	r.e2eRate = float64(r.backlog) / r.drain.Seconds()
	r.dbCPU = map[string]time.Duration{"postgres": stack.CommCPU("postgres") - pgCPU, "mariadbd": stack.CommCPU("mariadbd") - myCPU}
	for _, name := range stack.Binaries {
		r.cpu[name], err = stack.CPUTime(s.Proc(name).Pid())
		require.NoError(b, err)
	}
	peakRSS(b, s, r.rss)

	byStatus := map[string]int64{}
	rows, err := pool.Query(e.ctx, `SELECT status, count(*) FROM proc_state GROUP BY status`)
	require.NoError(b, err)
	for rows.Next() {
		var st string
		var n int64
		require.NoError(b, rows.Scan(&st, &n))
		byStatus[st] = n
	}
	require.NoError(b, rows.Err())
	require.Equal(b, map[string]int64{"SUCCEEDED": int64(r.backlog)}, byStatus, "every message applied")
	var payload float64
	require.NoError(b, pool.QueryRow(e.ctx, `SELECT count(*), COALESCE(avg(octet_length(payload::text)), 0)
		FROM msg_event WHERE target = 'KAFKA:msg' AND status = 'SENT'`).Scan(&r.events, &payload))
	r.payload = int(payload)

	r.saramaRate, err = stack.RawProduceRate(e.ctx, s.Kafka, benchBacklog, 500, r.payload, benchFlights)
	require.NoError(b, err)
	stopped = true
	require.NoError(b, s.Close())
	r.pgbenchTPS, err = stack.PGBenchCeiling(e.ctx, pgURL, 10*time.Second)
	require.NoError(b, err)
}

// drainStages polls the backlog until everything up to maxID is delivered, noting when each
// stage finished: ingest (watermark), processor (nothing open), dispatcher (nothing unsent).
func (e *benchEnv) drainStages(b *testing.B, pool *pgxpool.Pool, maxID int64, start time.Time, r *benchResult) {
	ctx, cancel := context.WithTimeout(e.ctx, e.throughputDeadline)
	defer cancel()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		bl, err := stack.ReadBacklog(ctx, pool)
		require.NoError(b, err, "backlog (logs in %s)", filepath.Join(e.logs, "throughput"))
		now := time.Since(start)
		if bl.Watermark >= maxID && r.ingested == 0 {
			r.ingested = now
		}
		if bl.Watermark >= maxID && !bl.Open && r.processed == 0 {
			r.processed = now
		}
		if r.processed != 0 && !bl.Unsent {
			r.drain = now
			return
		}
		select {
		case <-ctx.Done():
			b.Fatalf("not drained within %s: %+v (logs in %s)", e.throughputDeadline, bl, filepath.Join(e.logs, "throughput"))
		case <-tick.C:
		}
	}
}

// latency writes FLOPs at a steady rate into a running stack and times each from its mailbox
// commit to its record on msgx.flight.changes.
func (e *benchEnv) latency(b *testing.B, r *benchResult) {
	pool, pgURL, dsn := e.prepare(b)
	s, err := stack.Start(e.ctx, stack.Options{
		BinDir: e.bin, LogDir: filepath.Join(e.logs, "latency"), PGURL: pgURL, MySQL: dsn, RandomPorts: true,
		Env: []string{"MSGX_POLL_INTERVAL=100ms"},
	})
	require.NoError(b, err)
	defer func() { _ = s.Close() }()
	headID := e.write(b, dsn, simulate.WriterConfig{Conns: 1, Batch: 1}, e.head)
	ctx, cancel := context.WithTimeout(e.ctx, e.latencyDrainTimeout)
	_, err = stack.WaitDelivered(ctx, pool, headID, 200*time.Millisecond)
	cancel()
	require.NoError(b, err, "the snapshot did not go through (logs in %s)", filepath.Join(e.logs, "latency"))

	lat := stack.NewLatencies()
	c, err := stack.Consume(s.Brokers, []string{"msgx.flight.changes"}, lat.Arrive)
	require.NoError(b, err)
	defer func() { require.NoError(b, c.Close()) }()
	n := int(benchLatencyFor.Seconds()) * benchRate
	gen := newFlopGen(e.flights, e.head[len(e.head)-1].SEQN+1, e.head[len(e.head)-1].At, 2)
	maxID := e.write(b, dsn, simulate.WriterConfig{Conns: 4, Pace: simulate.PaceSteady, Rate: benchRate, Batch: 1,
		Committed: lat.Commit}, gen.messages(n))
	ctx, cancel = context.WithTimeout(e.ctx, e.latencyDrainTimeout)
	defer cancel()
	_, err = stack.WaitDelivered(ctx, pool, maxID, 200*time.Millisecond)
	require.NoError(b, err)
	var events int
	require.NoError(b, pool.QueryRow(ctx, `SELECT count(DISTINCT msg_id) FROM msg_event WHERE target = 'KAFKA:msg' AND msg_id > $1`, headID).Scan(&events))
	for { // the consumer's last fetch
		_, arrived := lat.Counts()
		if arrived >= events || ctx.Err() != nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	r.latencyMsgs, r.arrived = lat.Counts()
	require.GreaterOrEqual(b, r.arrived, n*9/10, "most FLOPs reach the consumer")
	p := lat.Percentiles(0.5, 0.9, 0.99, 1)
	r.p50, r.p90, r.p99, r.pmax = p[0], p[1], p[2], p[3]
	peakRSS(b, s, r.rss)
}

// peakRSS keeps the larger peak RSS of each running binary of s.
func peakRSS(b *testing.B, s *stack.Stack, into map[string]int64) {
	for _, name := range stack.Binaries {
		p := s.Proc(name)
		require.NotNil(b, p, "%s is not running", name)
		v, err := stack.PeakRSS(p.Pid())
		require.NoError(b, err)
		into[name] = max(into[name], v)
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
