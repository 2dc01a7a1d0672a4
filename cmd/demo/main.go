// Command demo runs msgx on a simulated airport day and shows what happens: it brings up the
// local stack (fresh databases msgx_demo and msgx_demo_mailbox, the development Kafka broker and
// the four binaries, each its own process connected as its own least-privilege database role),
// writes the day into the mailbox at a visible pace through several MySQL connections with
// out-of-order commits, prints live progress, then a summary that compares every flight with the
// simulator's model (pkg/dev/verify), and stops everything. It exits non-zero when the summary
// finds a difference. `make demo` runs it.
package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/msgx/msgx/pkg/cmdline"
	"github.com/msgx/msgx/pkg/dev/simulate"
	"github.com/msgx/msgx/pkg/dev/stack"
	"github.com/msgx/msgx/pkg/dev/verify"
	"github.com/msgx/msgx/pkg/status"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	code := cmdline.Exit(os.Stderr, "demo", run(ctx, os.Args[1:], os.Stdout))
	stop()
	os.Exit(code)
}

// maxCommitDelay is the demo's gap window: short, so rolled-back inserts are visible but brief.
const maxCommitDelay = 3 * time.Second

// options are one demo run's settings: the flags, and where it keeps its state (tests give
// their own databases, role prefix and directories).
type options struct {
	flights      int
	rate         float64
	seed         uint64
	bad          float64
	pgServer     string // PostgreSQL server URL without database (administrator)
	mysqlServer  string // MariaDB server DSN without database (administrator)
	pgDB, mailDB string
	rolePrefix   string // the binaries' role names: <prefix>ingest, …
	root         string // the repository: hints name paths relative to it
	binDir       string // built here unless prebuilt
	prebuilt     bool
	logDir       string
	// beforeSummary, when set, runs on the drained pipeline before the comparison (tests inject a
	// difference with it).
	beforeSummary func(ctx context.Context, pool *pgxpool.Pool) error
}

// errMismatch is the demo's failure: a check of the summary found a difference.
var errMismatch = errors.New("the summary found differences (lines marked MISMATCH)")

func run(ctx context.Context, args []string, out io.Writer) error {
	fs := cmdline.New("demo", "[--flights N] [--rate R] [--seed S] [--bad F]", "Runs a simulated airport day through a local stack and compares every flight with the model; exits 1 on any mismatch.", out)
	o := options{pgServer: "postgres://postgres@127.0.0.1:5432", mysqlServer: "root@tcp(127.0.0.1:3306)/",
		pgDB: "msgx_demo", mailDB: "msgx_demo_mailbox", rolePrefix: "msgx_demo_"}
	fs.IntVar(&o.flights, "flights", 300, "flights in the simulated day")
	fs.Float64Var(&o.rate, "rate", 150, "messages per second written to the mailbox")
	fs.Uint64Var(&o.seed, "seed", 1, "simulation seed")
	fs.Float64Var(&o.bad, "bad", 0.02, "share of bad messages (malformed, protocol errors, duplicates)")
	if err := fs.NoArgs(args); err != nil {
		return err
	}
	root, err := stack.Root()
	if err != nil {
		return err
	}
	dir := filepath.Join(root, ".devstack")
	o.root, o.binDir, o.logDir = root, filepath.Join(dir, "bin"), filepath.Join(dir, "demo-logs")
	return demo(ctx, o, out)
}

// demo runs the stack on a simulated day and returns errMismatch when the summary finds a
// difference.
func demo(ctx context.Context, o options, out io.Writer) error {
	d, err := startDemo(ctx, o, out)
	if err != nil {
		return err
	}
	defer d.close(out)
	bootOK, err := bootstrapLoop(ctx, out, d.pool, d.day)
	if err != nil {
		return err
	}
	wr, late, err := d.writeAndWatch(ctx, o, out)
	if err != nil {
		return err
	}
	if o.beforeSummary != nil {
		if err := o.beforeSummary(ctx, d.pool); err != nil {
			return err
		}
	}
	snap, err := status.Read(ctx, d.pool, time.Now())
	if err != nil {
		return err
	}
	ok, err := summary(ctx, out, summaryInput{day: d.day, written: wr, answers: d.aodb.Stats().Answers, snap: snap,
		consumer: d.consumer, lat: d.lat, mailbox: d.mailbox, pool: d.pool, bootOK: bootOK, prefix: o.rolePrefix, early: late})
	if err != nil {
		return err
	}
	hints(out, o, d.access, late)
	if !ok {
		return errMismatch
	}
	return nil
}

// demoRun is a running demo: the stack, the simulated AODB and what watches them.
type demoRun struct {
	stack    *stack.Stack
	access   stack.Access
	day      simulate.Day
	lat      *stack.Latencies
	consumer *stack.Consumer
	pool     *pgxpool.Pool
	aodb     *simulate.RunningAODB
	mailbox  *sql.DB
	closers  []func() // run by close, last first
}

// startDemo builds the binaries, prepares the databases with each binary's role, starts the
// stack, a consumer of both topics and the simulated AODB, and generates the day.
func startDemo(ctx context.Context, o options, out io.Writer) (d *demoRun, err error) {
	d = &demoRun{}
	defer func() {
		if err != nil {
			d.close(out)
		}
	}()
	if !o.prebuilt {
		fmt.Fprintln(out, "demo: building the binaries …")
		if err := stack.Build(ctx, o.binDir); err != nil {
			return nil, err
		}
	}
	// Each binary logs in as its own least-privilege role and mailbox user (pkg/roles), as in
	// production; the demo itself observes as the administrator.
	db, err := stack.PrepareRoles(ctx, stack.Databases{
		PGServer: o.pgServer, PGDatabase: o.pgDB, MySQLServer: o.mysqlServer, MySQLDB: o.mailDB, Fresh: true,
	}, o.rolePrefix)
	if err != nil {
		return nil, err
	}
	d.access = db.Access
	if d.stack, err = stack.Start(ctx, stack.Options{
		BinDir: o.binDir, LogDir: o.logDir, RoleEnv: d.access.RoleEnv(), RandomPorts: true,
		Env: []string{"MSGX_POLL_INTERVAL=100ms", "MSGX_BACKFILL_INTERVAL=2s", "MSGX_SCHD_FLUSH_PERIOD=1s", "MSGX_MAX_COMMIT_DELAY=" + maxCommitDelay.String(),
			// The day starts with an empty flight table: the processor's bootstrap trigger asks
			// the (simulated) AODB for today and tomorrow; the jobs sweep sends at once.
			"MSGX_REQUEST_BOOTSTRAP=true", "MSGX_REQUEST_SWEEP_INTERVAL=500ms"},
	}); err != nil {
		return nil, err
	}
	d.closers = append(d.closers, func() {
		fmt.Fprintln(out, "demo: stopping the binaries …")
		if err := d.stack.Close(); err != nil {
			fmt.Fprintln(out, "demo: stop:", err)
		}
	})
	fmt.Fprintf(out, "demo: stack up (logs in %s); each binary connected as its own role %s<binary> and mailbox user\n", o.logDir, o.rolePrefix)
	fmt.Fprintf(out, "demo: while it runs, the read API answers: curl -H 'Authorization: Bearer %s' http://%s/flights/<FLID>\n", d.stack.APIToken, d.stack.Proc("ingest").APIAddr)

	d.lat = stack.NewLatencies()
	if d.consumer, err = stack.Consume(d.stack.Brokers, []string{verify.TopicChanges, verify.TopicState}, d.lat.Arrive); err != nil {
		return nil, err
	}
	d.closers = append(d.closers, func() { _ = d.consumer.Close() })

	cfg := simulate.DefaultConfig()
	cfg.Seed, cfg.Flights, cfg.BadShare = o.seed, o.flights, o.bad
	cfg.Additions = max(1, o.flights/50)
	cfg = cfg.Today() // the day the processor's bootstrap request asks for
	d.day = simulate.Generate(cfg)
	fmt.Fprintf(out, "demo: simulated day: %s\n", d.day.Summary())

	if d.pool, err = pgxpool.New(ctx, db.PGURL); err != nil {
		return nil, err
	}
	d.closers = append(d.closers, d.pool.Close)
	// The simulated AODB answers msgx's requests from what it knows of the day.
	if d.aodb, err = simulate.StartAODB(db.MySQLDSN, d.day.AODBModel(), simulate.AODBConfig{}, 200*time.Millisecond); err != nil {
		return nil, err
	}
	d.closers = append(d.closers, func() {
		if err := d.aodb.Stop(); err != nil {
			fmt.Fprintln(out, "demo: simulated AODB:", err)
		}
	})
	if d.mailbox, err = simulate.OpenMailbox(db.MySQLDSN); err != nil {
		return nil, err
	}
	d.closers = append(d.closers, func() { _ = d.mailbox.Close() })
	return d, nil
}

// close stops what startDemo started, last first.
func (d *demoRun) close(io.Writer) {
	for i := len(d.closers) - 1; i >= 0; i-- {
		d.closers[i]()
	}
	d.closers = nil
}

// writeAndWatch writes the day into the mailbox, then the early update, printing progress every
// second, until the pipeline has drained both (bounded: 15 minutes).
func (d *demoRun) writeAndWatch(ctx context.Context, o options, out io.Writer) (simulate.Written, early, error) {
	w, err := simulate.NewWriter(d.mailbox, simulate.WriterConfig{
		Conns: 4, Pace: simulate.PaceSteady, Rate: o.rate, HoldShare: 0.05, RollbackShare: 0.003, Seed: o.seed,
		Committed: d.lat.Commit,
	})
	if err != nil {
		return simulate.Written{}, early{}, err
	}
	type result struct {
		w   simulate.Written
		err error
	}
	written := make(chan result, 1)
	start := time.Now()
	go func() {
		wr, err := w.Write(ctx, d.day.Messages)
		written <- result{wr, err}
	}()

	fmt.Fprintln(out, "demo: columns: written = messages committed to the mailbox; W = ingest's watermark, a mailbox id: every id up to W is")
	fmt.Fprintln(out, "      enqueued or judged missing. Rolled-back inserts consume ids without a row and the AODB's answers are rows too,")
	fmt.Fprintln(out, "      so W ends above written; it stops below a missing id for up to MSGX_MAX_COMMIT_DELAY="+maxCommitDelay.String()+".")
	var wr *simulate.Written
	var late early // the early update, written after the day
	var drainedSince time.Time
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return simulate.Written{}, early{}, ctx.Err()
		case r := <-written:
			if r.err != nil {
				return simulate.Written{}, early{}, fmt.Errorf("simulator: %w", r.err)
			}
			wr = &r.w
			if late, err = writeEarly(ctx, d.mailbox, d.day); err != nil {
				return simulate.Written{}, early{}, err
			}
			fmt.Fprintf(out, "demo: all %d messages written in %s (%d out-of-order commits; %d rolled-back inserts consumed ids %v without a row:\n"+
				"      W ends at %d messages + %d rolled-back ids + the AODB's answers)\n",
				len(r.w.IDs), time.Since(start).Round(time.Millisecond), r.w.OutOfOrder, len(r.w.Gaps), r.w.Gaps, len(r.w.IDs), len(r.w.Gaps))
		case <-tick.C:
		}
		snap, err := status.Read(ctx, d.pool, time.Now())
		if err != nil {
			fmt.Fprintln(out, "demo: status:", err)
			continue
		}
		committed, _ := d.lat.Counts()
		progress(out, time.Since(start), committed, len(d.day.Messages), snap, d.consumer)
		if wr == nil {
			continue
		}
		if stack.Drained(snap, max(slices.Max(wr.IDs), late.id)) {
			if drainedSince.IsZero() {
				drainedSince = time.Now()
			}
			if time.Since(drainedSince) >= 3*time.Second { // markers and the schd flush settle
				return *wr, late, nil
			}
		} else {
			drainedSince = time.Time{}
		}
		if time.Since(start) > 15*time.Minute {
			return simulate.Written{}, early{}, fmt.Errorf("the pipeline did not drain within 15 minutes; see msgxctl status and the logs")
		}
	}
}

// bootstrapLoop waits (bounded) for the request loop before the day is written: the processor's
// bootstrap request, sent by the jobs stage, answered by the simulated AODB with a SCHD RESP,
// applied and DONE; the flights then equal the AODB's model of the requested days.
func bootstrapLoop(ctx context.Context, out io.Writer, pool *pgxpool.Pool, day simulate.Day) (bool, error) {
	fmt.Fprintln(out, "demo: empty flight table: waiting for the bootstrap request and the AODB's answer …")
	deadline := time.Now().Add(time.Minute)
	for {
		var id int64
		var scope, st string
		var from, to time.Time
		err := pool.QueryRow(ctx, bootstrapSQL).Scan(&id, &scope, &st, &from, &to)
		if err == nil && st == "DONE" {
			var active int64
			if err := pool.QueryRow(ctx, activeFlightsSQL).Scan(&active); err != nil {
				return false, err
			}
			want := len(day.AODBModel().Expected(from, to).Flights)
			verdict := "ok"
			if active != int64(want) {
				verdict = "MISMATCH"
			}
			fmt.Fprintf(out, "demo: bootstrap request %d (RQFD %s) answered by the AODB's SCHD RESP: DONE; flights %d (AODB model: %d): %s\n",
				id, scope, active, want, verdict)
			return verdict == "ok", nil
		}
		if time.Now().After(deadline) {
			return false, fmt.Errorf("no answered bootstrap request within a minute (last: %q %q, %v); see msgxctl request list-open and the logs", scope, st, err)
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func progress(out io.Writer, el time.Duration, written, total int, s status.Snapshot, c *stack.Consumer) {
	done := s.ByStatus["SUCCEEDED"] + s.ByStatus["SKIPPED"] + s.ByStatus["DEAD"]
	head := "idle"
	if s.Head != nil {
		head = fmt.Sprintf("%.1fs", s.Head.Age)
	}
	var dead int64
	for _, n := range s.DeadByClass {
		dead += n
	}
	fmt.Fprintf(out, "%5.0fs  written %5d/%d  ingested W=%-6d processed %5d  backlog %4d  head %-6s dead %3d  delivered changes %5d state %5d\n",
		el.Seconds(), written, total, s.Watermark, done, s.ByStatus["PENDING"]+s.ByStatus["FAILED"], head, dead,
		c.Count("msgx.flight.changes"), c.Count("msgx.flight.state"))
}
