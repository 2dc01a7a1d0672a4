// Package chaos is the fault suite (make chaos, and its short form in make test): each scenario
// runs a simulated day at a steady rate through the real binaries (pkg/dev/stack, supervised like
// Kubernetes would) on fresh databases of a private PostgreSQL cluster and MariaDB instance
// (pkg/dev/privdb: restarting them disturbs nothing else), breaks something while the day is
// written, and then checks the outcome with the end-to-end comparison (pkg/dev/verify): final
// state = model, every mailbox row terminal once with its marker, Kafka records = SENT events,
// per-FLID versions never decreasing, changes complete. A scenario passes only when every check
// passes, no binary exited that the scenario did not kill, and its own expectation held.
//
// The binaries run in production's configuration (production.go): each as its own role, over
// verified TLS to PostgreSQL, the mailbox and Kafka (SCRAM-SHA-512), with MSGX_ENV=production.
package chaos

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/msgx/msgx/pkg/clock"
	"github.com/msgx/msgx/pkg/dev/apachekafka"
	"github.com/msgx/msgx/pkg/dev/privdb"
	"github.com/msgx/msgx/pkg/dev/simulate"
	"github.com/msgx/msgx/pkg/dev/stack"
	"github.com/msgx/msgx/pkg/dev/verify"
)

// Config configures a suite run.
type Config struct {
	BinDir  string        // the built binaries (stack.Build)
	WorkDir string        // logs and broker data, one directory per scenario
	Flights int           // flights of the simulated day (default 60: about 800 messages)
	Feed    time.Duration // how long the day's messages take to write (default 30s)
	Seed    uint64
	Date    time.Time // operation day (today in the airport zone: the history sweep keeps it)
	Log     io.Writer // progress, one line per step
	// Kafka, when set, is the cluster (NewKafkaNode) of every scenario that does not fault the
	// development broker (Scenario.DevBroker) nor brings its own (Scenario.Kafka); nil: those
	// run on the development broker too.
	Kafka *RealKafka
	// Env are settings of every binary of every scenario, after the scenario's own (they win);
	// the report's configuration column names them with the scenario's.
	Env []string
}

// Scenario is one fault and what must hold after it.
type Scenario struct {
	Name     string
	Did      string   // what is done, for the report
	Expected string   // what must hold, for the report
	Env      []string // extra settings of every binary
	// Standbys starts a second instance of every binary.
	Standbys bool
	// Writer adjusts the simulator's writer (the default: two connections, 2% held transactions).
	Writer func(*simulate.WriterConfig)
	// Fault breaks something while the day is written; it returns when the system is whole
	// again (the recovery time is measured from then) and reports its observations.
	Fault func(ctx context.Context, r *Run) error
	// Check, when set, adds the scenario's own checks after the pipeline drained.
	Check func(ctx context.Context, r *Run)
	// Issue names the open issue this scenario is known to fail on (for the report).
	Issue string
	// Alone, when set, replaces the stack and the simulated day: the scenario runs its own
	// processes (from binDir, logging to logDir) on the fresh database of pgURL (the
	// administrator's; r.Access has each binary's own login), and reports through r (Observe,
	// Problem, Recovered: the recovery column is r.Recovery, the configuration column
	// r.Configuration).
	Alone func(ctx context.Context, r *Run, binDir, logDir, pgURL string) error
	// ExactlyOnce makes any duplicate record a failure (no producer allowance).
	ExactlyOnce bool
	// Kafka, when set, runs the scenario on this real Apache Kafka cluster instead of the
	// development broker (Run.Kafka is its handle).
	Kafka *RealKafka
	// DevBroker says why the scenario needs the development broker (the fault is done to its
	// process): it runs there even when Config.Kafka is set.
	DevBroker string
	// Feed, when set, replaces Config.Feed: faults that last long need traffic throughout.
	Feed time.Duration
	// PGStandby, when set, runs the scenario on its own primary and streaming standby.
	PGStandby *PGStandby
	// Purge runs an AODB that deletes every mailbox row it sees marked, at once, while the
	// scenario runs; the comparison counts a purged row as marked and judges its outcome against
	// what the simulator wrote.
	Purge bool
}

// Result is one scenario's outcome.
type Result struct {
	Scenario
	Passed     bool
	Problems   []string // what broke, one line each
	Observed   string   // the scenario's own observations
	Recovery   time.Duration
	Duplicates int
	Lost       int
	Exits      int // unexpected exits the supervisor reported
	Messages   int
	Took       time.Duration
	// Configuration is how the binaries ran (Production, or what an Alone scenario reported).
	Configuration string
}

// Servers are the private database servers of a suite run: TLS only, with administrators
// behind passwords, their certificate signed by the run's CA (which the brokers' is too).
type Servers struct {
	PG    *privdb.Postgres
	MySQL *privdb.MariaDB
	shape *productionShape
}

// StartServers makes the run's CA and starts a private PostgreSQL cluster and MariaDB instance
// that accept only TLS (PostgreSQL hostssl with SCRAM, MariaDB require_secure_transport).
func StartServers() (*Servers, error) {
	shape, err := newProductionShape()
	if err != nil {
		return nil, err
	}
	pg, err := privdb.StartPostgresWith(shape.pgOptions())
	if err != nil {
		return nil, errors.Join(err, shape.close())
	}
	my, err := privdb.StartMariaDBWith(shape.myOptions())
	if err != nil {
		return nil, errors.Join(err, pg.Close(), shape.close())
	}
	return &Servers{PG: pg, MySQL: my, shape: shape}, nil
}

// Close stops both servers and removes their data and the CA.
func (s *Servers) Close() error { return errors.Join(s.PG.Close(), s.MySQL.Close(), s.shape.close()) }

// Run is one scenario while it runs: the fault's handle on the system.
type Run struct {
	Stack   *stack.Stack
	Servers *Servers
	Pool    *pgxpool.Pool
	Mailbox *sql.DB
	DSN     string // the mailbox's DSN (the administrator's)
	// Access are each binary's own logins (pkg/roles as `msgxctl roles apply --mysql` sets them).
	Access stack.Access
	Rand   *rand.Rand
	Feed   time.Duration
	Day    simulate.Day
	LogDir string // the binaries' logs (<key>.log)
	// Kafka is the real Apache Kafka cluster the scenario runs on (Scenario.Kafka or
	// Config.Kafka; nil on the development broker).
	Kafka *apachekafka.Cluster
	// Consumer reads both topics (read_committed) from the start of the scenario.
	Consumer *stack.Consumer
	log      func(format string, args ...any)

	mu       sync.Mutex
	observed []string
	problems []string
	killed   map[string]int // SIGKILLs sent per key: their exits are expected
	exits    []stack.Exit
	extra    map[int64]verify.Want

	// Recovery, set by an Alone scenario, is its recovery figure.
	Recovery time.Duration
	// Configuration, set by an Alone scenario, is how its processes ran (the report's column).
	Configuration string
	// Standby is a PGStandby scenario's standby (Servers.PG its primary).
	Standby *privdb.Postgres
	ha      *haPair

	maxCommitted atomic.Int64 // highest mailbox id the writer committed
	recoverFrom  time.Time    // when the last fault ended
	recoverID    int64        // the highest committed mailbox id then
}

// Observe records an observation for the report.
func (r *Run) Observe(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.observed = append(r.observed, fmt.Sprintf(format, args...))
}

// Problem records a broken expectation of the scenario.
func (r *Run) Problem(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.problems = append(r.problems, fmt.Sprintf(format, args...))
}

// Logf logs a progress line.
func (r *Run) Logf(format string, args ...any) { r.log(format, args...) }

// Recovered marks the end of a fault: the recovery time is measured from the last call until
// every mailbox row committed by then is processed and every event created by then is sent.
func (r *Run) Recovered() {
	r.mu.Lock()
	r.recoverFrom = time.Now()
	r.recoverID = r.maxCommitted.Load()
	r.mu.Unlock()
}

// Expect adds a mailbox row the scenario wrote itself, with its intended outcome.
func (r *Run) Expect(id int64, want verify.Want) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.extra[id] = want
}

// Sleep waits d or until ctx ends.
func Sleep(ctx context.Context, d time.Duration) error {
	if !clock.WallSleep(ctx, d) {
		return ctx.Err()
	}
	return nil
}

// fastEnv are the settings of every scenario's binaries: short polls so a day drains quickly.
// The gap delay stays production's (MSGX_MAX_COMMIT_DELAY 30s, the floor production accepts): a
// transaction lost in a MariaDB restart holds ingest that long.
var fastEnv = []string{
	"MSGX_POLL_INTERVAL=100ms",
	"MSGX_SCHD_FLUSH_PERIOD=500ms",
	"MSGX_BACKFILL_INTERVAL=1s",
	"MSGX_LOG_LEVEL=info",
}

// RunAll runs the scenarios one after the other on one pair of private servers (fresh databases
// for each) and returns their results; the error is a failure of the harness itself.
func RunAll(ctx context.Context, cfg Config, srv *Servers, scenarios []Scenario) ([]Result, error) {
	if cfg.Flights == 0 {
		cfg.Flights = 60
	}
	if cfg.Feed == 0 {
		cfg.Feed = 30 * time.Second
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	var out []Result
	for i, sc := range scenarios {
		if ctx.Err() != nil {
			return out, ctx.Err()
		}
		fmt.Fprintf(cfg.Log, "chaos: [%d/%d] %s: %s\n", i+1, len(scenarios), sc.Name, sc.Did)
		res, err := runOne(ctx, cfg, srv, sc, uint64(i))
		if err != nil {
			if ctx.Err() != nil {
				return out, fmt.Errorf("%s: %w", sc.Name, err)
			}
			// The scenario could not be carried out: a failure of that scenario, not of the run.
			res.Passed = false
			res.Problems = append(res.Problems, "the scenario could not be carried out: "+err.Error())
		}
		verdict := "PASS"
		if !res.Passed {
			verdict = "FAIL"
		}
		fmt.Fprintf(cfg.Log, "chaos: [%d/%d] %s: %s in %s (recovery %s, duplicates %d, lost %d)\n",
			i+1, len(scenarios), sc.Name, verdict, res.Took.Round(time.Second), res.Recovery.Round(100*time.Millisecond), res.Duplicates, res.Lost)
		for _, p := range res.Problems {
			fmt.Fprintf(cfg.Log, "chaos:     %s\n", p)
		}
		out = append(out, res)
	}
	return out, nil
}

func runOne(ctx context.Context, cfg Config, srv *Servers, sc Scenario, n uint64) (Result, error) {
	start := time.Now()
	res := Result{Scenario: sc}
	dir := filepath.Join(cfg.WorkDir, sc.Name)
	if err := os.RemoveAll(dir); err != nil {
		return res, err
	}
	srv, ha, err := withStandbyPair(srv, sc)
	if err != nil {
		return res, err
	}
	if ha != nil {
		defer func() { _ = ha.close() }()
	}
	dbs := stack.Databases{PGServer: srv.PG.ServerURL(), PGDatabase: "chaos", MySQLServer: srv.MySQL.ServerDSN(), MySQLDB: "chaos_mailbox", Fresh: true}
	prep, err := stack.PrepareRoles(ctx, dbs, rolePrefix)
	if err != nil {
		return res, fmt.Errorf("prepare databases and roles: %w", err)
	}
	pgURL, mysqlDSN, access := prep.PGURL, prep.MySQLDSN, prep.Access
	if ha != nil {
		if pgURL, access, err = ha.startStandby(ctx, pgURL, access); err != nil {
			return res, err
		}
	}
	pool, err := harnessPool(ctx, pgURL)
	if err != nil {
		return res, err
	}
	defer pool.Close()
	mailbox, err := simulate.OpenMailbox(mysqlDSN)
	if err != nil {
		return res, err
	}
	defer mailbox.Close()

	feed := cfg.Feed
	if sc.Feed > 0 {
		feed = sc.Feed
	}
	r := &Run{Servers: srv, Pool: pool, Mailbox: mailbox, DSN: mysqlDSN, Access: access, Feed: feed,
		Rand: rand.New(rand.NewPCG(cfg.Seed, n)), killed: map[string]int{}, extra: map[int64]verify.Want{},
		log: func(f string, a ...any) { fmt.Fprintf(cfg.Log, "chaos:     "+f+"\n", a...) }}
	if ha != nil {
		r.Standby, r.ha = ha.standby, ha
	}
	res.Configuration = Production(devBroker(sc))
	if k := clusterOf(cfg, sc); k != nil {
		if r.Kafka, err = k.prepare(ctx, srv.shape, r.Logf); err != nil {
			return res, fmt.Errorf("prepare Apache Kafka: %w", err)
		}
		res.Configuration = Production(k.Name())
	}
	if set := settingsText(sc.Env, cfg.Env); set != "" {
		res.Configuration += "; with " + set
	}
	if sc.Alone != nil {
		return runAlone(ctx, cfg, sc, r, dir, pgURL, start)
	}
	r.LogDir = filepath.Join(dir, "logs")
	var external []string
	if r.Kafka != nil {
		external = r.Kafka.Addrs()
	}
	renv, err := roleEnv(access)
	if err != nil {
		return res, err
	}
	s, err := stack.Start(ctx, stack.Options{
		BinDir: cfg.BinDir, LogDir: filepath.Join(dir, "logs"), RoleEnv: renv, RandomPorts: true,
		KafkaDataDir: filepath.Join(dir, "kafka"), ExternalBrokers: external, KafkaAuth: srv.shape.kafkaAuth(),
		Env: append(append(append(srv.shape.env(), fastEnv...), sc.Env...), cfg.Env...),
		Supervise: &stack.Supervision{Delay: 500 * time.Millisecond, OnExit: func(e stack.Exit) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.exits = append(r.exits, e)
		}},
	})
	if err != nil {
		return res, fmt.Errorf("start the stack (logs in %s): %w", dir, err)
	}
	r.Stack = s
	defer func() { _ = s.Close() }()
	if sc.Standbys {
		for _, b := range stack.Binaries {
			if _, err := s.StartInstance(ctx, b, 2); err != nil {
				return res, fmt.Errorf("start the standby %s: %w", b, err)
			}
		}
	}
	consumer, err := stack.ConsumeWith(s.Kafka, []string{verify.TopicChanges, verify.TopicState}, nil)
	if err != nil {
		return res, err
	}
	defer func() { _ = consumer.Close() }()
	r.Consumer = consumer

	dcfg := simulate.DefaultConfig()
	dcfg.Seed, dcfg.Flights, dcfg.Additions, dcfg.Date = cfg.Seed+n, cfg.Flights, 2, cfg.Date
	day := simulate.Generate(dcfg)
	res.Messages = len(day.Messages)
	r.Day = day
	wcfg := simulate.WriterConfig{Conns: 2, Pace: simulate.PaceSteady, Rate: float64(len(day.Messages)) / feed.Seconds(),
		HoldShare: 0.02, Seed: cfg.Seed + n}
	if sc.Writer != nil {
		sc.Writer(&wcfg)
	}
	wcfg.Committed = func(first int64, k int, _ time.Time) {
		for last := first + int64(k) - 1; ; {
			m := r.maxCommitted.Load()
			if last <= m || r.maxCommitted.CompareAndSwap(m, last) {
				break
			}
		}
	}
	w, err := simulate.NewWriter(mailbox, wcfg)
	if err != nil {
		return res, err
	}
	var purge *purger
	if sc.Purge {
		purge = startPurge(ctx, mailbox)
		defer purge.stop()
	}
	type written struct {
		wr  simulate.Written
		err error
	}
	wctx, wcancel := context.WithCancel(ctx)
	defer wcancel()
	wdone := make(chan written, 1)
	go func() {
		wr, err := w.Write(wctx, day.Messages)
		wdone <- written{wr, err}
	}()
	if sc.Fault != nil {
		if err := sc.Fault(ctx, r); err != nil {
			wcancel()
			<-wdone
			return res, fmt.Errorf("fault: %w", err)
		}
	}
	r.mu.Lock()
	from, upTo := r.recoverFrom, r.recoverID
	r.mu.Unlock()
	var wrote *written
	if from.IsZero() {
		w := <-wdone
		wrote = &w
		from, upTo = time.Now(), r.maxCommitted.Load()
	}
	// A real Kafka cluster recovers within seconds of the fault's end; waiting less for it keeps a
	// stuck dispatcher from holding its slow suite for ten minutes.
	patience := 5 * time.Minute
	if sc.Kafka != nil {
		patience = 2 * time.Minute
	}
	// Recovery (measured while the day is still written): everything committed before the fault
	// ended is processed and sent.
	rec, rerr := waitRecovered(ctx, pool, upTo, from, patience)
	res.Recovery = rec
	if rerr != nil {
		res.Problems = append(res.Problems, "no recovery: "+rerr.Error())
	}
	if wrote == nil {
		w := <-wdone
		wrote = &w
	}
	wr := wrote.wr
	if wrote.err != nil {
		res.Problems = append(res.Problems, fmt.Sprintf("the simulator's writer failed: %v", wrote.err))
		res.Took = time.Since(start)
		return res, nil
	}
	maxID := r.maxCommitted.Load()
	for id := range r.extra {
		maxID = max(maxID, id)
	}
	if _, err := stack.WaitDrained(ctx, pool, maxID, 200*time.Millisecond, time.Second, patience); err != nil {
		res.Problems = append(res.Problems, "not drained: "+err.Error())
	}
	if err := checkSessions(ctx, r); err != nil {
		res.Problems = append(res.Problems, err.Error())
	}
	if sc.Check != nil {
		sc.Check(ctx, r)
	}
	var purged map[int64]bool
	if purge != nil {
		purged = r.endPurge(purge)
	}
	rep, err := verify.Day(ctx, verify.Input{Pool: pool, Mailbox: mailbox, Day: day, Written: wr, Extra: r.extra, Records: consumer.Records, Purged: purged})
	if err != nil {
		return res, fmt.Errorf("verify: %w", err)
	}
	res.Duplicates, res.Lost = rep.Duplicates, rep.Lost
	res.Problems = append(res.Problems, rep.Failed(3)...)
	if sc.ExactlyOnce && rep.Duplicates > 0 {
		res.Problems = append(res.Problems, fmt.Sprintf("%d duplicate records: each event must be sent once", rep.Duplicates))
	}

	r.mu.Lock()
	for _, e := range r.exits {
		if e.Signal == "killed" && r.killed[e.Key] > 0 {
			r.killed[e.Key]--
			continue
		}
		res.Exits++
		res.Problems = append(res.Problems, "unexpected exit: "+strings.ReplaceAll(e.String(), "\n", " | "))
	}
	res.Problems = append(res.Problems, r.problems...)
	res.Observed = strings.Join(r.observed, "; ")
	r.mu.Unlock()
	if wr.Reconnects > 0 {
		res.Observed = strings.TrimPrefix(res.Observed+fmt.Sprintf("; writer reconnected %d×, %d messages sent again", wr.Reconnects, wr.Resent), "; ")
	}
	res.Passed = len(res.Problems) == 0
	res.Took = time.Since(start)
	if err := s.Close(); err != nil {
		res.Problems = append(res.Problems, "stop the stack: "+err.Error())
		res.Passed = false
	}
	if res.Passed {
		_ = os.RemoveAll(dir)
	} else {
		res.Problems = append(res.Problems, "logs in "+filepath.Join(dir, "logs"))
		if k := clusterOf(cfg, sc); k != nil {
			res.Problems = append(res.Problems, "logs in "+k.dir+" (the Kafka nodes' server.log)")
		}
	}
	return res, nil
}

// settingsText lists the settings of envs (KEY=VALUE), a later value of a key replacing an
// earlier one, for the configuration column.
func settingsText(envs ...[]string) string {
	var keys []string
	values := map[string]string{}
	for _, env := range envs {
		for _, kv := range env {
			k, _, _ := strings.Cut(kv, "=")
			if _, ok := values[k]; !ok {
				keys = append(keys, k)
			}
			values[k] = kv
		}
	}
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = values[k]
	}
	return strings.Join(out, " ")
}

// devBroker names the development broker in sc's configuration column, with why sc needs it.
func devBroker(sc Scenario) string {
	if sc.DevBroker == "" {
		return onDevBroker
	}
	return onDevBroker + " (" + sc.DevBroker + ")"
}

// clusterOf is the Apache Kafka cluster sc runs on: its own, or the suite's unless it faults the
// development broker (nil: the development broker).
func clusterOf(cfg Config, sc Scenario) *RealKafka {
	switch {
	case sc.Kafka != nil:
		return sc.Kafka
	case sc.DevBroker == "":
		return cfg.Kafka
	}
	return nil
}

// runAlone runs a scenario with its own processes (Scenario.Alone).
func runAlone(ctx context.Context, cfg Config, sc Scenario, r *Run, dir, pgURL string, start time.Time) (Result, error) {
	res := Result{Scenario: sc}
	logDir := filepath.Join(dir, "logs")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return res, err
	}
	if err := sc.Alone(ctx, r, cfg.BinDir, logDir, pgURL); err != nil {
		return res, err
	}
	r.mu.Lock()
	res.Problems = append(res.Problems, r.problems...)
	res.Observed = strings.Join(r.observed, "; ")
	res.Recovery = r.Recovery
	res.Configuration = r.Configuration
	r.mu.Unlock()
	res.Passed = len(res.Problems) == 0
	res.Took = time.Since(start)
	if res.Passed {
		_ = os.RemoveAll(dir)
	} else {
		res.Problems = append(res.Problems, "logs in "+logDir)
	}
	return res, nil
}

const recoveredSQL = `
SELECT (SELECT watermark FROM inbox_cursor) >= $1
   AND NOT EXISTS (SELECT 1 FROM proc_state WHERE msg_id <= $1 AND status IN ('PENDING', 'FAILED'))
   AND NOT EXISTS (SELECT 1 FROM msg_event WHERE status = 'PENDING' AND created_at <= $2)
   AND NOT EXISTS (SELECT 1 FROM msg_event WHERE status = 'QUEUED' AND NOT msgx_passed(event_id, msgx_change_cursor())
                      AND created_at <= $2)
   AND NOT EXISTS (SELECT 1 FROM msg_state_log WHERE created_at <= $2)
   AND NOT EXISTS (SELECT 1 FROM msg_state_out WHERE status = 'PENDING' AND pending_since <= $2)`

// waitRecovered polls until every mailbox row up to maxID is processed and every event created
// before from is sent, and returns the time since from.
func waitRecovered(ctx context.Context, pool *pgxpool.Pool, maxID int64, from time.Time, timeout time.Duration) (time.Duration, error) {
	deadline := time.Now().Add(timeout)
	var last error
	for {
		var ok bool
		err := pool.QueryRow(ctx, recoveredSQL, maxID, from).Scan(&ok)
		if err == nil && ok {
			return time.Since(from), nil
		}
		if err != nil {
			last = err
		}
		if time.Now().After(deadline) {
			return time.Since(from), fmt.Errorf("rows up to %d not processed and sent within %s (last error: %v)", maxID, timeout, last)
		}
		if err := Sleep(ctx, 100*time.Millisecond); err != nil {
			return time.Since(from), err
		}
	}
}

// AirportToday is today's date in the simulator's (and the binaries' default) airport zone: the
// jobs binary's history sweep at start would purge an older day.
func AirportToday() time.Time {
	loc, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		loc = time.UTC
	}
	y, m, d := time.Now().In(loc).Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}
