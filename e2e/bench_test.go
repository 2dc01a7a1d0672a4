package e2e_test

import (
	"cmp"
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/dev/mailboxdb"
	"github.com/msgx/msgx/pkg/dev/simulate"
	"github.com/msgx/msgx/pkg/dev/stack"
	"github.com/msgx/msgx/pkg/dev/testdb"
)

// BenchmarkEndToEnd is `make bench`'s end-to-end benchmark: the four binaries
// as real processes with their DEFAULT configuration, local PostgreSQL and MariaDB, the
// development Kafka broker process. One op is the whole run:
//
//  1. throughput: the reference lists and the 1,200-flight schedule snapshot of a simulated day
//     (the largest schedule the benchmarks use) plus 100,000 FLOP updates over those flights
//     are in the mailbox before the binaries start; the clock runs from the start of the stack
//     until every message is terminal and no KAFKA:msg event is left unacknowledged by the
//     broker (e2e_msgs_per_s). The CPU time of every process during it, divided by the
//     messages, is cpu_us_per_msg: the four binaries, the PostgreSQL backends of the run's
//     database and the MariaDB server (its delta: other users included). The WAL the server
//     wrote meanwhile, divided by the messages, is wal_bytes_per_msg;
//  2. the ceilings, same servers, same run: pgbench with the one-message-per-transaction shape of
//     the pump, and raw sarama produce of events of the observed size to the same broker;
//  3. latency: fresh databases, no setting overridden, the snapshot first, then FLOPs at a
//     steady 200 messages/s for 30 s; mailbox commit → a consumer's receipt on
//     msgx.flight.changes (latency_default_p50_ms, latency_default_p99_ms); then, on the same
//     stack, 2,000 messages/s for 60 s (latency_2k_p99_ms), with the backlog (committed, not
//     yet received) sampled every second: its mean over the last 10 s against the 10 s after
//     the first 10 s is the growth;
//  4. each binary's peak RSS (VmHWM) just before it stops, the larger of the two stacks;
//  5. with MSGX_BENCH_1M=1 only (minutes more), the throughput run again on a 1,000,000-FLOP
//     backlog (e2e_1m_msgs_per_s): whether any step's cost grows with table size.
//
// With MSGX_BENCH_WRITE=1 (make bench) it writes the run to docs/runs/benchmarks.
//
//	MSGX_BENCH_WRITE=1 go test -run '^$' -bench BenchmarkEndToEnd -benchtime 1x -timeout 60m ./e2e/
func BenchmarkEndToEnd(b *testing.B) {
	if testing.Short() {
		b.Skip("end-to-end benchmark: minutes of real processes")
	}
	env := newBenchEnv(b)
	if env.size != fullSize && benchWrite() {
		b.Fatal("MSGX_BENCH_BRIEF=1 runs are too small to be written to docs/runs/benchmarks")
	}
	if os.Getenv("MSGX_BENCH_DRAIN_ONLY") == "1" {
		env.drainOnly(b)
		return
	}
	if os.Getenv("MSGX_BENCH_SUSTAINED_ONLY") == "1" {
		env.sustainedOnly(b)
		return
	}
	var r benchResult
	for b.Loop() {
		r = env.run(b)
	}
	b.ReportMetric(r.e2e.rate, "e2e_msgs/s")
	b.ReportMetric(r.pgbenchTPS, "pgbench_1msg_tx/s")
	b.ReportMetric(r.e2e.rate/r.pgbenchTPS, "x_pgbench")
	b.ReportMetric(r.saramaRate, "sarama_raw/s")
	b.ReportMetric(r.e2e.cpuPerMsg(), "cpu_us/msg")
	b.ReportMetric(ms(r.def.p50), "p50_ms")
	b.ReportMetric(ms(r.def.p99), "p99_ms")
	b.ReportMetric(float64(msKey(r.k2.p99)), "p99_2k_ms") // -1: not reached
	if r.m1.backlog > 0 {
		b.ReportMetric(r.m1.rate, "e2e_1m_msgs/s")
	}
	b.ReportMetric(r.rssMaxMB(), "rss_max_MB")
	section := r.section()
	fmt.Println("\n" + section) // not b.Log: benchmark logs are cut at ten lines
	if benchWrite() {
		path, err := writeRun(filepath.Join(env.root, "docs", "runs", "benchmarks"), section)
		require.NoError(b, err)
		fmt.Println("written to", path, "(update docs/benchmarks.md's current figures from it)")
	}
}

const (
	benchChunk        = 100_000         // FLOPs generated and written at once (bounds the test's memory)
	benchLatencyDrain = 3 * time.Minute // after the last write of a paced run
	benchAppName      = "msgx-bench"    // the benchmark's own PostgreSQL sessions (not counted as the pipeline's CPU)
)

// benchSize is how much a run does: fullSize for make bench, briefSize (MSGX_BENCH_BRIEF=1)
// for make bench-modes, which runs every iteration mode to its end in a minute or two.
type benchSize struct {
	flights, backlog, backlog1M int
	rate, rate2k                int // messages/s of the default latency run and of the sustained run
	latencyFor, latency2kFor    time.Duration
}

var (
	fullSize  = benchSize{flights: 1200, backlog: 100_000, backlog1M: 1_000_000, rate: 200, rate2k: 2000, latencyFor: 30 * time.Second, latency2kFor: 60 * time.Second}
	briefSize = benchSize{flights: 60, backlog: 2_000, backlog1M: 4_000, rate: 200, rate2k: 2000, latencyFor: 3 * time.Second, latency2kFor: 3 * time.Second}
)

// benchEnv is what both runs share: binaries, servers, the simulated day.
type benchEnv struct {
	size                benchSize
	root, bin, logs     string
	dbs                 stack.Databases    // fresh for each run, dropped at the end
	head                []simulate.Message // reference lists and the schedule snapshot
	flights             []simulate.Flight  // the snapshot's records
	machine             machine
	ctx                 context.Context
	throughputDeadline  time.Duration
	latencyDrainTimeout time.Duration
	// rollbackShare is the share of the paced runs' inserts first tried in a transaction that
	// rolls back (each leaves a permanent gap); 0 but in BenchmarkGapProof.
	rollbackShare float64
}

func newBenchEnv(b *testing.B) *benchEnv {
	root, err := stack.Root()
	require.NoError(b, err)
	bin := benchBinaries(b, root)
	u, err := url.Parse(testdb.AdminURL())
	require.NoError(b, err)
	u.Path, u.RawQuery = "", ""
	budget := 25 * time.Minute
	if os.Getenv("MSGX_BENCH_1M") == "1" || os.Getenv("MSGX_BENCH_BACKLOG") != "" {
		budget += 10 * 15 * time.Minute
	}
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	b.Cleanup(cancel)
	size := fullSize
	if os.Getenv("MSGX_BENCH_BRIEF") == "1" {
		size = briefSize
	}
	e := &benchEnv{
		size: size, root: root, bin: bin, logs: filepath.Join(root, ".devstack", "bench", "logs"),
		dbs: stack.Databases{ // per process: concurrent runs must not share databases
			PGServer: u.String(), PGDatabase: fmt.Sprintf("msgx_e2e_bench_%d", os.Getpid()),
			MySQLServer: mailboxdb.ServerDSN(), MySQLDB: fmt.Sprintf("msgx_e2e_bench_%d_mailbox", os.Getpid()), Fresh: true,
		},
		ctx: ctx, throughputDeadline: 15 * time.Minute, latencyDrainTimeout: benchLatencyDrain,
	}
	require.NoError(b, os.RemoveAll(e.logs))
	b.Cleanup(func() {
		if err := stack.Drop(context.Background(), e.dbs); err != nil {
			b.Errorf("drop the benchmark's databases: %v", err)
		}
	})
	cfg := simulate.DefaultConfig()
	cfg.Flights, cfg.BadShare, cfg.Additions, cfg.Seed = e.size.flights, 0, 0, 9
	cfg.Date = benchToday(b)
	day := simulate.Generate(cfg)
	snap := slices.IndexFunc(day.Messages, func(m simulate.Message) bool { return m.Type == "SCHD" && m.Subtype == "DNLD" })
	require.GreaterOrEqual(b, snap, 0, "the day has no schedule snapshot")
	e.head = day.Messages[:snap+1]
	e.flights = day.Messages[snap].Records
	require.Len(b, e.flights, e.size.flights)
	return e
}

// drainOnly is the iteration form (MSGX_BENCH_DRAIN_ONLY=1): the 100k throughput run alone,
// its figures printed per process, nothing written. With MSGX_BENCH_PERF=file it also records
// a system-wide perf profile (perf record -a -g) of the drain, every process included; with
// MSGX_BENCH_BACKLOG=n it drains n FLOPs instead of 100k (1000000: the 1M run alone).
func (e *benchEnv) drainOnly(b *testing.B) {
	n := e.size.backlog
	if v := os.Getenv("MSGX_BENCH_BACKLOG"); v != "" {
		var err error
		n, err = strconv.Atoi(v)
		require.NoError(b, err, "MSGX_BENCH_BACKLOG")
	}
	for b.Loop() {
		d, s, _ := e.drainBacklog(b, n, "throughput")
		rss := map[string]int64{}
		peakRSS(b, s, rss)
		require.NoError(b, s.Close())
		fmt.Printf("throughput: %d messages in %s, %.0f msgs/s, %.0f µs CPU/msg (%s); %.0f B WAL/msg; ingested %s, processed %s\n",
			d.backlog, d.drain.Round(time.Millisecond), d.rate, d.cpuPerMsg(), benchResult{e2e: d}.cpuParts(), d.walPerMsg(),
			d.ingested.Round(time.Millisecond), d.processed.Round(time.Millisecond))
		for _, bin := range stack.Binaries {
			fmt.Printf("peak RSS %s %.1f MB\n", bin, float64(rss[bin])/(1<<20))
		}
	}
}

// sustainedOnly is the iteration form MSGX_BENCH_SUSTAINED_ONLY=1: the 2,000 msgs/s run alone
// on a fresh stack, its figures printed, nothing written.
func (e *benchEnv) sustainedOnly(b *testing.B) {
	for b.Loop() {
		r := e.newResult()
		e.latency(b, &r, false)
		fmt.Printf("peak RSS: %.1f MB (largest binary)\n", r.rssMaxMB())
	}
}

// newResult is an empty result of this environment's run.
func (e *benchEnv) newResult() benchResult {
	return benchResult{at: time.Now().UTC(), loadStart: loadAvg(), rss: map[string]int64{}, size: e.size}
}

// benchResult is the figures of one run.
type benchResult struct {
	machine            machine
	at                 time.Time
	loadStart, loadEnd string
	e2e, m1            drainRun // the 100k backlog; the 1M one (zero unless MSGX_BENCH_1M=1)
	events             int64    // KAFKA:msg events delivered by the throughput run
	payload            int      // their mean payload size (bytes)
	pgbenchTPS         float64
	saramaRate         float64
	def, k2            latencyRun       // 200 msgs/s and 2,000 msgs/s, default configuration
	rss                map[string]int64 // peak RSS per binary (bytes)
	size               benchSize
	// ab is the A/B run make bench made before this one (scripts/bench-ab.sh, AB_OUT: key: value
	// lines; MSGX_BENCH_AB names the file), in the order written; nil without one.
	ab [][2]string
}

// drainRun is one throughput run: a pre-written backlog drained by a fresh stack.
type drainRun struct {
	backlog             int           // messages drained (head + FLOPs)
	drain               time.Duration // stack start → all delivered
	ingested, processed time.Duration // stack start → watermark at the end, nothing open
	rate                float64
	// wal is the WAL the server wrote during the drain, bytes (every database's; the run's is
	// the only one at work), checkpoints' full-page images included: the storage's work.
	wal int64
	// cpu is the CPU time of each process during the drain: the binaries (stack.Binaries),
	// cpuPG (the run database's backends), cpuMariaDB (the server's delta, other users
	// included), and for information cpuPGAll (every PostgreSQL process's delta, other users
	// and the WAL writer and checkpointer included) and the development broker.
	cpu map[string]time.Duration
}

const (
	cpuPG      = "postgres"
	cpuPGAll   = "postgres_all"
	cpuMariaDB = "mariadbd"
	cpuBroker  = "devbroker"
)

// cpuCounted are the processes cpu_us_per_msg adds up.
var cpuCounted = append(slices.Clone(stack.Binaries), cpuPG, cpuMariaDB)

// cpuPerMsg is the CPU time of the pipeline's processes per message, µs.
func (d drainRun) cpuPerMsg() float64 {
	var t time.Duration
	for _, name := range cpuCounted {
		t += d.cpu[name]
	}
	return d.perMsg(t)
}

func (d drainRun) perMsg(t time.Duration) float64 {
	if d.backlog == 0 {
		return 0
	}
	return float64(t.Microseconds()) / float64(d.backlog)
}

// latencyRun is one paced run into a running stack.
type latencyRun struct {
	rate                int // messages/s asked
	dur                 time.Duration
	written             float64 // messages/s the writer reached
	msgs, arrived       int
	p50, p90, p99, pmax time.Duration
	// backlog (committed, not yet received) sampled every second while writing: the mean of
	// the 10 s after the first 10 s, the mean of the last 10 s, and the largest sample.
	backlogEarly, backlogLate float64
	backlogMax                int
	complete                  bool // every message was delivered within the drain timeout
	// commitsPerS is the run database's PostgreSQL commits per second while writing
	// (pg_stat_database.xact_commit: every stage, the benchmark's own queries included).
	commitsPerS float64
	// p50 and p99 of commit → enqueued (ingest: the poll and the waits below a lower id still
	// uncommitted) and of enqueued → on Kafka (processor and dispatcher).
	wait, deliver [2]time.Duration
}

// growth is the backlog's growth between the early and the late window (messages).
func (l latencyRun) growth() float64 { return l.backlogLate - l.backlogEarly }

func (e *benchEnv) run(b *testing.B) benchResult {
	r := e.newResult()
	r.ab = readAB(b)
	e.throughput(b, &r)
	e.latency(b, &r, true)
	if os.Getenv("MSGX_BENCH_1M") == "1" {
		var s *stack.Stack
		r.m1, s, _ = e.drainBacklog(b, e.size.backlog1M, "throughput-1m")
		peakRSS(b, s, r.rss)
		require.NoError(b, s.Close())
	}
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
	cfg.ConnConfig.RuntimeParams["application_name"] = benchAppName
	pool, err := pgxpool.NewWithConfig(e.ctx, cfg)
	require.NoError(b, err)
	b.Cleanup(pool.Close)
	return pool, pgURL, mysqlDSN
}

// write inserts msgs into the mailbox with the simulator's Writer and returns the highest id
// and the rate it wrote at.
func (e *benchEnv) write(b *testing.B, dsn string, cfg simulate.WriterConfig, msgs []simulate.Message) (int64, float64) {
	db, err := simulate.OpenMailbox(dsn)
	require.NoError(b, err)
	defer db.Close()
	w, err := simulate.NewWriter(db, cfg)
	require.NoError(b, err)
	start := time.Now()
	wr, err := w.Write(e.ctx, msgs)
	require.NoError(b, err)
	require.Len(b, wr.IDs, len(msgs))
	return slices.Max(wr.IDs), float64(len(msgs)) / time.Since(start).Seconds()
}

// drainBacklog writes the head and n FLOPs into fresh databases, starts a stack with the
// default configuration and times the drain. The stack is left running for the caller.
func (e *benchEnv) drainBacklog(b *testing.B, n int, name string) (drainRun, *stack.Stack, *pgxpool.Pool) {
	pool, pgURL, dsn := e.prepare(b)
	if e.machine.cpus == 0 {
		e.machine = describeMachine(e.ctx, b, pool, dsn)
	}
	gen := newFlopGen(e.flights, e.head[len(e.head)-1].SEQN+1, e.head[len(e.head)-1].At, 1)
	e.write(b, dsn, simulate.WriterConfig{Conns: 1, Batch: 1}, e.head)
	var maxID int64
	for left := n; left > 0; left -= benchChunk {
		maxID, _ = e.write(b, dsn, simulate.WriterConfig{Conns: 4, Batch: 500}, gen.messages(min(left, benchChunk)))
	}
	d := drainRun{backlog: len(e.head) + n, cpu: map[string]time.Duration{}}

	heap, cpuProf, trace := os.Getenv("MSGX_BENCH_HEAP"), os.Getenv("MSGX_BENCH_CPUPROF"), os.Getenv("MSGX_BENCH_TRACE")
	var env []string
	if heap != "" || cpuProf != "" || trace != "" {
		env = []string{"MSGX_PPROF=true"}
	}
	walStart := walLSN(b, e.ctx, pool)
	start := time.Now()
	s, err := stack.Start(e.ctx, stack.Options{
		BinDir: e.bin, LogDir: filepath.Join(e.logs, name), PGURL: pgURL, MySQL: dsn, RandomPorts: true, Env: env,
	})
	require.NoError(b, err)
	// A drain that fails stops the stack too: the broker logs nothing, so no broken pipe ends it,
	// and it would hold its port and whatever the benchmark's parent passed it (a lock) for good.
	b.Cleanup(func() { _ = s.Close() })
	profiled := cmp.Or(os.Getenv("MSGX_BENCH_PROFILE_BIN"), "processor")
	if heap != "" {
		// The binary's heap 8 s into the drain (mid-drain on this machine), for pprof.
		t := time.AfterFunc(8*time.Second, func() { saveProfile(s.Proc(profiled).Addr, "heap", heap) })
		defer t.Stop()
	}
	if cpuProf != "" {
		// The binary's CPU profile of 10 s from 3 s into the drain.
		t := time.AfterFunc(3*time.Second, func() { saveProfile(s.Proc(profiled).Addr, "profile?seconds=10", cpuProf) })
		defer t.Stop()
	}
	if trace != "" {
		// The binary's execution trace of 3 s from 5 s into the drain: where its wall time goes.
		t := time.AfterFunc(5*time.Second, func() { saveProfile(s.Proc(profiled).Addr, "trace?seconds=3", trace) })
		defer t.Stop()
	}
	pgAll, my := stack.CommCPU("postgres"), stack.CommCPU("mariadbd")
	stopPerf := startPerf(b, os.Getenv("MSGX_BENCH_PERF"))
	e.drainStages(b, pool, maxID, start, &d, name)
	require.NoError(b, pool.QueryRow(e.ctx, `SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1::pg_lsn)::bigint`, walStart).Scan(&d.wal))
	stopPerf()
	d.rate = float64(d.backlog) / d.drain.Seconds()
	d.cpu[cpuPGAll], d.cpu[cpuMariaDB] = stack.CommCPU("postgres")-pgAll, stack.CommCPU("mariadbd")-my
	d.cpu[cpuPG] = backendsCPU(b, e.ctx, pool)
	for _, bin := range stack.Binaries {
		d.cpu[bin], err = stack.CPUTime(s.Proc(bin).Pid())
		require.NoError(b, err)
	}
	if p := s.BrokerProc(); p != nil {
		d.cpu[cpuBroker], err = stack.CPUTime(p.Pid())
		require.NoError(b, err)
	}

	byStatus := map[string]int64{}
	rows, err := pool.Query(e.ctx, `SELECT status, count(*) FROM proc_state GROUP BY status`)
	require.NoError(b, err)
	for rows.Next() {
		var st string
		var c int64
		require.NoError(b, rows.Scan(&st, &c))
		byStatus[st] = c
	}
	require.NoError(b, rows.Err())
	require.Equal(b, map[string]int64{"SUCCEEDED": int64(d.backlog)}, byStatus, "every message applied")
	return d, s, pool
}

// walLSN is the server's current WAL write position.
func walLSN(b *testing.B, ctx context.Context, pool *pgxpool.Pool) string {
	var lsn string
	require.NoError(b, pool.QueryRow(ctx, `SELECT pg_current_wal_lsn()::text`).Scan(&lsn))
	return lsn
}

// walPerMsg is the WAL written per message, bytes.
func (d drainRun) walPerMsg() float64 { return float64(d.wal) / float64(d.backlog) }

// backendsCPU is the CPU time of the PostgreSQL backends of the run's database other than the
// benchmark's own: the pipeline's share of the server. The binaries keep their connections for
// the whole run, so each backend's total is its CPU during the run.
func backendsCPU(b *testing.B, ctx context.Context, pool *pgxpool.Pool) time.Duration {
	rows, err := pool.Query(ctx, `SELECT pid FROM pg_stat_activity
		WHERE datname = current_database() AND application_name <> $1`, benchAppName)
	require.NoError(b, err)
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	require.NoError(b, err)
	var t time.Duration
	for _, pid := range pids {
		if c, err := stack.CPUTime(int(pid)); err == nil { // a backend may just have ended
			t += c
		}
	}
	return t
}

// throughput drains the pre-written backlog, then measures both ceilings.
func (e *benchEnv) throughput(b *testing.B, r *benchResult) {
	var s *stack.Stack
	var pool *pgxpool.Pool
	r.e2e, s, pool = e.drainBacklog(b, e.size.backlog, "throughput")
	fmt.Printf("throughput: %d messages in %s, %.0f msgs/s, %.0f µs CPU/msg\n", r.e2e.backlog, r.e2e.drain, r.e2e.rate, r.e2e.cpuPerMsg())
	stopped := false
	defer func() {
		if !stopped {
			_ = s.Close()
		}
	}()
	peakRSS(b, s, r.rss)
	var payload float64
	require.NoError(b, pool.QueryRow(e.ctx, `SELECT count(*), COALESCE(avg(octet_length(COALESCE(body, payload::text))), 0)
		FROM msg_event_delivery WHERE target = 'KAFKA:msg' AND status = 'SENT'`).Scan(&r.events, &payload))
	r.payload = int(payload)

	var err error
	r.saramaRate, err = stack.RawProduceRate(e.ctx, s.Kafka, e.size.backlog, 500, r.payload, e.size.flights)
	require.NoError(b, err)
	stopped = true
	require.NoError(b, s.Close())
	r.pgbenchTPS, err = stack.PGBenchCeiling(e.ctx, pgURLOf(pool), 10*time.Second)
	require.NoError(b, err)
}

// pgURLOf is the URL pool was opened with.
func pgURLOf(pool *pgxpool.Pool) string { return pool.Config().ConnString() }

// drainStages polls the backlog until everything up to maxID is delivered, noting when each
// stage finished: ingest (watermark), processor (nothing open), dispatcher (nothing unsent).
func (e *benchEnv) drainStages(b *testing.B, pool *pgxpool.Pool, maxID int64, start time.Time, d *drainRun, name string) {
	deadline := e.throughputDeadline * time.Duration(max(1, d.backlog/e.size.backlog))
	ctx, cancel := context.WithTimeout(e.ctx, deadline)
	defer cancel()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		now := time.Since(start)
		bl, err := stack.ReadBacklog(ctx, pool)
		require.NoError(b, err, "backlog (logs in %s)", filepath.Join(e.logs, name))
		if bl.Watermark >= maxID && d.ingested == 0 {
			d.ingested = now
		}
		if bl.Watermark >= maxID && !bl.Open && d.processed == 0 {
			d.processed = now
		}
		unsent := "not asked"
		if d.processed != 0 {
			asked := time.Since(start)
			some, err := stack.ReadUnsent(ctx, pool)
			require.NoError(b, err, "backlog (logs in %s)", filepath.Join(e.logs, name))
			if !some {
				d.drain = asked
				return
			}
			unsent = "some"
		}
		select {
		case <-ctx.Done():
			b.Fatalf("not drained within %s: %+v, unsent events %s (logs in %s)", deadline, bl, unsent, filepath.Join(e.logs, name))
		case <-tick.C:
		}
	}
}

// latency starts a stack with the default configuration on fresh databases, lets the snapshot
// through, then runs the 200 msgs/s and the 2,000 msgs/s runs one after the other.
func (e *benchEnv) latency(b *testing.B, r *benchResult, at200 bool) {
	pool, pgURL, dsn := e.prepare(b)
	s, err := stack.Start(e.ctx, stack.Options{
		BinDir: e.bin, LogDir: filepath.Join(e.logs, "latency"), PGURL: pgURL, MySQL: dsn, RandomPorts: true,
	})
	require.NoError(b, err)
	defer func() { _ = s.Close() }()
	headID, _ := e.write(b, dsn, simulate.WriterConfig{Conns: 1, Batch: 1}, e.head)
	ctx, cancel := context.WithTimeout(e.ctx, e.latencyDrainTimeout)
	_, err = stack.WaitDelivered(ctx, pool, headID, 200*time.Millisecond)
	cancel()
	require.NoError(b, err, "the snapshot did not go through (logs in %s)", filepath.Join(e.logs, "latency"))

	gen := newFlopGen(e.flights, e.head[len(e.head)-1].SEQN+1, e.head[len(e.head)-1].At, 2)
	if at200 {
		r.def = e.paced(b, s, pool, dsn, gen, e.size.rate, e.size.latencyFor, 1, true)
		fmt.Printf("latency, default configuration, %s: %s\n", r.def.what(), r.def.figures())
	}
	// Ten rows per INSERT statement: the writer's inserts are sequential, and one row per
	// statement cannot keep 2,000/s on a busy machine; each row still has its own commit time.
	r.k2 = e.paced(b, s, pool, dsn, gen, e.size.rate2k, e.size.latency2kFor, 10, false)
	fmt.Printf("sustained, %s: %s; backlog growth %+.0f; %.0f PostgreSQL commits/s\n", r.k2.what(), r.k2.figures(), r.k2.growth(), r.k2.commitsPerS)
	peakRSS(b, s, r.rss)
}

// paced writes rate FLOPs/s for d into the running stack s and times each from its mailbox
// commit to its record on msgx.flight.changes.
func (e *benchEnv) paced(b *testing.B, s *stack.Stack, pool *pgxpool.Pool, dsn string, gen *flopGen,
	rate int, d time.Duration, batch int, mustDrain bool) (l latencyRun) {
	l = latencyRun{rate: rate, dur: d}
	lat := stack.NewLatencies()
	c, err := stack.Consume(s.Brokers, []string{"msgx.flight.changes"}, lat.Arrive)
	require.NoError(b, err)
	defer func() { require.NoError(b, c.Close()) }()
	n := int(d.Seconds()) * rate
	var firstID int64 // the lowest id written (commits come from several connections)
	var mu sync.Mutex
	commit := func(first int64, k int, at time.Time) {
		mu.Lock()
		if firstID == 0 || first < firstID {
			firstID = first
		}
		mu.Unlock()
		lat.Commit(first, k, at)
	}
	samples := make(chan []int, 1)
	stop := make(chan struct{})
	go func() { // the backlog, every second while writing
		var out []int
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-stop:
				samples <- out
				return
			case <-t.C:
				committed, arrived := lat.Counts()
				out = append(out, committed-arrived)
			}
		}
	}()
	commits0, began := xactCommits(b, e.ctx, pool), time.Now()
	maxID, written := e.write(b, dsn, simulate.WriterConfig{Conns: 4, Pace: simulate.PaceSteady, Rate: float64(rate),
		Batch: batch, Committed: commit, RollbackShare: e.rollbackShare}, gen.messages(n))
	l.commitsPerS = float64(xactCommits(b, e.ctx, pool)-commits0) / time.Since(began).Seconds()
	close(stop)
	stageReport(b, e.ctx, s, pool)
	l.written = written
	backlog := <-samples
	l.backlogEarly, l.backlogLate, l.backlogMax = windowMean(backlog, 10, 20), windowMean(backlog, len(backlog)-10, len(backlog)), slices.Max(append(backlog, 0))

	ctx, cancel := context.WithTimeout(e.ctx, e.latencyDrainTimeout)
	defer cancel()
	_, err = stack.WaitDelivered(ctx, pool, maxID, 200*time.Millisecond)
	defer func() { l.wait, l.deliver = split(b, e.ctx, pool, lat, firstID, maxID) }()
	if err != nil && !mustDrain {
		// A stack slower than the rate (a loaded machine) has not caught up: the figures are
		// of what arrived, the rest counted as later than anything that did (missed).
		l.msgs, l.arrived = lat.Counts()
		l.p50, l.p90, l.p99, l.pmax = lowerQuantiles(lat, l.msgs, l.arrived)
		return l
	}
	require.NoError(b, err)
	l.complete = true
	var events int
	require.NoError(b, pool.QueryRow(ctx, `SELECT count(DISTINCT msg_id) FROM msg_event
		WHERE target = 'KAFKA:msg' AND msg_id BETWEEN $1 AND $2`, firstID, maxID).Scan(&events))
	for { // the consumer's last fetch
		_, arrived := lat.Counts()
		if arrived >= events || ctx.Err() != nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	l.msgs, l.arrived = lat.Counts()
	require.GreaterOrEqual(b, l.arrived, n*9/10, "most FLOPs reach the consumer")
	p := lat.Percentiles(0.5, 0.9, 0.99, 1)
	l.p50, l.p90, l.p99, l.pmax = p[0], p[1], p[2], p[3]
	return l
}

// xactCommits is the run database's commits so far (pg_stat_database; a backend reports its
// counts when it goes idle, at most a second late, so a long run's rate is exact to a second).
func xactCommits(b *testing.B, ctx context.Context, pool *pgxpool.Pool) int64 {
	var n int64
	require.NoError(b, pool.QueryRow(ctx, `SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()`).Scan(&n))
	return n
}

// split is p50 and p99 of the two parts of the arrived messages' latency (stack.Latencies.Split):
// commit → enqueued by ingest, and enqueued → on Kafka.
func split(b *testing.B, ctx context.Context, pool *pgxpool.Pool, lat *stack.Latencies, first, last int64) (wait, deliver [2]time.Duration) {
	rows, err := pool.Query(ctx, `SELECT msg_id, enqueued_at FROM proc_state WHERE msg_id BETWEEN $1 AND $2`, first, last)
	require.NoError(b, err)
	enqueued := map[int64]time.Time{}
	var id int64
	var at time.Time
	_, err = pgx.ForEachRow(rows, []any{&id, &at}, func() error { enqueued[id] = at; return nil })
	require.NoError(b, err)
	w, d := lat.Split(enqueued)
	qw, qd := stack.Quantiles(w, 0.5, 0.99), stack.Quantiles(d, 0.5, 0.99)
	return [2]time.Duration{qw[0], qw[1]}, [2]time.Duration{qd[0], qd[1]}
}

// lowerQuantiles are p50, p90, p99 and max over all msgs committed when only arrived of them
// arrived (the others counted as later than every arrival); a quantile among the missing ones
// is notArrived.
func lowerQuantiles(lat *stack.Latencies, msgs, arrived int) (p50, p90, p99, pmax time.Duration) {
	q := func(p float64) time.Duration {
		if arrived == 0 || p*float64(msgs) >= float64(arrived) {
			return notArrived
		}
		return lat.Percentiles(p * float64(msgs) / float64(arrived))[0]
	}
	return q(0.5), q(0.9), q(0.99), q(1)
}

// notArrived stands for a quantile that fell among messages that never arrived.
const notArrived = time.Duration(1<<63 - 1)

// windowMean is the mean of xs[from:to] (clamped; 0 when empty).
func windowMean(xs []int, from, to int) float64 {
	from, to = max(0, min(from, len(xs))), max(0, min(to, len(xs)))
	if from >= to {
		return 0
	}
	sum := 0
	for _, x := range xs[from:to] {
		sum += x
	}
	return float64(sum) / float64(to-from)
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
