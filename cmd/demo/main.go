// Command demo runs msgx on a simulated airport day and shows what happens: it brings up the
// local stack (fresh databases msgx_demo and msgx_demo_mailbox, the development Kafka broker and
// the four binaries, each its own process), writes the day into the mailbox at a visible pace
// through several MySQL connections with out-of-order commits, prints live progress, then a
// summary, and stops everything. `make demo` runs it.
package main

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/msgx/msgx/pkg/cmdline"
	"github.com/msgx/msgx/pkg/dev/simulate"
	"github.com/msgx/msgx/pkg/dev/stack"
	"github.com/msgx/msgx/pkg/status"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	code := cmdline.Exit(os.Stderr, "demo", run(ctx, os.Args[1:], os.Stdout))
	stop()
	os.Exit(code)
}

// latencies records mailbox commit times and Kafka arrival times.
type latencies struct {
	mu        sync.Mutex
	committed map[int64]time.Time
	samples   []time.Duration
	seen      map[int64]bool
}

func (l *latencies) commit(first int64, n int, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := range int64(n) {
		l.committed[first+i] = at
	}
}

func (l *latencies) arrive(r stack.Record) {
	if r.Topic != "msgx.flight.changes" || r.MsgID == 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if at, ok := l.committed[r.MsgID]; ok && !l.seen[r.MsgID] {
		l.seen[r.MsgID] = true
		l.samples = append(l.samples, r.At.Sub(at))
	}
}

func (l *latencies) percentiles(ps ...float64) []time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := slices.Clone(l.samples)
	slices.Sort(s)
	out := make([]time.Duration, len(ps))
	for i, p := range ps {
		if len(s) > 0 {
			out[i] = s[min(len(s)-1, int(p*float64(len(s))))]
		}
	}
	return out
}

// maxCommitDelay is the demo's gap window: short, so rolled-back inserts are visible but brief.
const maxCommitDelay = 3 * time.Second

func run(ctx context.Context, args []string, out io.Writer) error {
	fs := cmdline.New("demo", "[--flights N] [--rate R] [--seed S] [--bad F]", "Runs a simulated airport day through a local stack and compares the outcome with the model.", os.Stdout)
	flights := fs.Int("flights", 300, "flights in the simulated day")
	rate := fs.Float64("rate", 150, "messages per second written to the mailbox")
	seed := fs.Uint64("seed", 1, "simulation seed")
	bad := fs.Float64("bad", 0.02, "share of bad messages (malformed, protocol errors, duplicates)")
	if err := fs.NoArgs(args); err != nil {
		return err
	}
	root, err := stack.Root()
	if err != nil {
		return err
	}
	dir := filepath.Join(root, ".devstack")
	fmt.Fprintln(out, "demo: building the binaries …")
	if err := stack.Build(ctx, filepath.Join(dir, "bin")); err != nil {
		return err
	}
	pgURL, mysqlDSN, err := stack.Prepare(ctx, stack.Databases{
		PGServer: "postgres://postgres@127.0.0.1:5432", PGDatabase: "msgx_demo",
		MySQLServer: "root@tcp(127.0.0.1:3306)/", MySQLDB: "msgx_demo_mailbox", Fresh: true,
	})
	if err != nil {
		return err
	}
	s, err := stack.Start(ctx, stack.Options{
		BinDir: filepath.Join(dir, "bin"), LogDir: filepath.Join(dir, "demo-logs"),
		PGURL: pgURL, MySQL: mysqlDSN, RandomPorts: true,
		Env: []string{"MSGX_POLL_INTERVAL=100ms", "MSGX_BACKFILL_INTERVAL=2s", "MSGX_SCHD_FLUSH_PERIOD=1s", "MSGX_MAX_COMMIT_DELAY=" + maxCommitDelay.String(),
			// The day starts with an empty flight table: the processor's bootstrap trigger asks
			// the (simulated) AODB for today and tomorrow; the jobs sweep sends at once.
			"MSGX_REQUEST_BOOTSTRAP=true", "MSGX_REQUEST_SWEEP_INTERVAL=500ms"},
	})
	if err != nil {
		return err
	}
	defer func() {
		fmt.Fprintln(out, "demo: stopping the binaries …")
		if err := s.Close(); err != nil {
			fmt.Fprintln(out, "demo: stop:", err)
		}
	}()
	fmt.Fprintf(out, "demo: stack up (logs in %s)\n", filepath.Join(dir, "demo-logs"))

	lat := &latencies{committed: map[int64]time.Time{}, seen: map[int64]bool{}}
	consumer, err := stack.Consume(s.Brokers, []string{"msgx.flight.changes", "msgx.flight.state"}, lat.arrive)
	if err != nil {
		return err
	}
	defer consumer.Close()

	cfg := simulate.DefaultConfig()
	cfg.Seed, cfg.Flights, cfg.BadShare = *seed, *flights, *bad
	cfg.Additions = max(1, *flights/50)
	cfg = cfg.Today() // the day the processor's bootstrap request asks for
	day := simulate.Generate(cfg)
	fmt.Fprintf(out, "demo: simulated day: %s\n", day.Summary())

	pool, err := pgxpool.New(ctx, pgURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	// The simulated AODB answers msgx's requests from what it knows of the day.
	aodb, err := simulate.StartAODB(mysqlDSN, day.AODBModel(), simulate.AODBConfig{}, 200*time.Millisecond)
	if err != nil {
		return err
	}
	defer func() {
		if err := aodb.Stop(); err != nil {
			fmt.Fprintln(out, "demo: simulated AODB:", err)
		}
	}()
	if err := bootstrapLoop(ctx, out, pool, day); err != nil {
		return err
	}

	db, err := simulate.OpenMailbox(mysqlDSN)
	if err != nil {
		return err
	}
	defer db.Close()
	w, err := simulate.NewWriter(db, simulate.WriterConfig{
		Conns: 4, Pace: simulate.PaceSteady, Rate: *rate, HoldShare: 0.05, RollbackShare: 0.003, Seed: *seed,
		Committed: lat.commit,
	})
	if err != nil {
		return err
	}
	type result struct {
		w   simulate.Written
		err error
	}
	written := make(chan result, 1)
	start := time.Now()
	go func() {
		wr, err := w.Write(ctx, day.Messages)
		written <- result{wr, err}
	}()

	var wr *simulate.Written
	var drainedSince time.Time
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case r := <-written:
			if r.err != nil {
				return fmt.Errorf("simulator: %w", r.err)
			}
			wr = &r.w
			fmt.Fprintf(out, "demo: all %d messages written in %s (%d out-of-order commits, %d rolled-back ids)\n",
				len(r.w.IDs), time.Since(start).Round(time.Millisecond), r.w.OutOfOrder, len(r.w.Gaps))
		case <-tick.C:
		}
		snap, err := status.Read(ctx, pool, time.Now())
		if err != nil {
			fmt.Fprintln(out, "demo: status:", err)
			continue
		}
		progress(out, time.Since(start), lat.count(), len(day.Messages), snap, consumer)
		if wr == nil {
			continue
		}
		if stack.Drained(snap, slices.Max(wr.IDs)) {
			if drainedSince.IsZero() {
				drainedSince = time.Now()
			}
			if time.Since(drainedSince) >= 3*time.Second { // markers and the schd flush settle
				break
			}
		} else {
			drainedSince = time.Time{}
		}
		if time.Since(start) > 15*time.Minute {
			return fmt.Errorf("the pipeline did not drain within 15 minutes; see msgxctl status and the logs")
		}
	}
	snap, err := status.Read(ctx, pool, time.Now())
	if err != nil {
		return err
	}
	return summary(ctx, out, day, *wr, aodb.Stats().Answers, snap, consumer, lat, db, pool)
}

// bootstrapLoop waits (bounded) for the request loop before the day is written: the processor's
// bootstrap request, sent by the jobs stage, answered by the simulated AODB with a SCHD RESP,
// applied and DONE; the flights then equal the AODB's model of the requested days.
func bootstrapLoop(ctx context.Context, out io.Writer, pool *pgxpool.Pool, day simulate.Day) error {
	fmt.Fprintln(out, "demo: empty flight table: waiting for the bootstrap request and the AODB's answer …")
	deadline := time.Now().Add(time.Minute)
	for {
		var id int64
		var scope, st string
		err := pool.QueryRow(ctx, `SELECT req_id, scope, status FROM req_track WHERE origin = 'bootstrap' ORDER BY req_id LIMIT 1`).Scan(&id, &scope, &st)
		if err == nil && st == "DONE" {
			var from, to time.Time
			if err := pool.QueryRow(ctx, `SELECT scope_from, scope_to FROM req_track WHERE req_id = $1`, id).Scan(&from, &to); err != nil {
				return err
			}
			var active int64
			if err := pool.QueryRow(ctx, `SELECT count(*) FROM flight WHERE state = 'ACTIVE'`).Scan(&active); err != nil {
				return err
			}
			want := len(day.AODBModel().Expected(from, to).Flights)
			verdict := "ok"
			if active != int64(want) {
				verdict = "MISMATCH"
			}
			fmt.Fprintf(out, "demo: bootstrap request %d (RQFD %s) answered by the AODB's SCHD RESP: DONE; flights %d (AODB model: %d): %s\n",
				id, scope, active, want, verdict)
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no answered bootstrap request within a minute (last: %q %q, %v); see msgxctl request list-open and the logs", scope, st, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (l *latencies) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.committed)
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

func summary(ctx context.Context, out io.Writer, day simulate.Day, w simulate.Written, answers int, s status.Snapshot,
	c *stack.Consumer, lat *latencies, db *sql.DB, pool *pgxpool.Pool) error {
	ok := func(b bool) string {
		if b {
			return "ok"
		}
		return "MISMATCH"
	}
	written := int64(len(w.IDs)) + int64(answers) // the day and the AODB's answers to requests
	terminal := s.ByStatus["SUCCEEDED"] + s.ByStatus["SKIPPED"] + s.ByStatus["DEAD"]
	fmt.Fprintln(out, "\n== summary ==")
	fmt.Fprintf(out, "%-26s %d   (simulator intended: %s; AODB answers: %d)\n", "messages written", written, day.Summary(), answers)
	fmt.Fprintf(out, "%-26s SUCCEEDED %d, SKIPPED %d, DEAD %d, FAILED %d, PENDING %d\n", "outcomes",
		s.ByStatus["SUCCEEDED"], s.ByStatus["SKIPPED"], s.ByStatus["DEAD"], s.ByStatus["FAILED"], s.ByStatus["PENDING"])
	reasons := map[string]int64{}
	rows, err := pool.Query(ctx, `SELECT split_part(reason, ':', 1), count(*) FROM proc_state WHERE status = 'SKIPPED' GROUP BY 1`)
	if err != nil {
		return err
	}
	for rows.Next() {
		var k string
		var n int64
		if err := rows.Scan(&k, &n); err != nil {
			rows.Close()
			return err
		}
		reasons[k] = n
	}
	rows.Close()
	fmt.Fprintf(out, "%-26s %s\n", "skipped by reason", status.Counts(reasons))
	fmt.Fprintf(out, "%-26s %s\n", "dead by class", status.Counts(s.DeadByClass))
	fmt.Fprintf(out, "%-26s %d + %d + %d = %d of %d written: %s; FAILED left: %d\n", "accounted",
		s.ByStatus["SUCCEEDED"], s.ByStatus["SKIPPED"], s.ByStatus["DEAD"], terminal, written, ok(terminal == written), s.ByStatus["FAILED"])
	want := map[string]int64{"ACTIVE": int64(day.Expected.Count("ACTIVE")), "DELETED": int64(day.Expected.Count("DELETED"))}
	fmt.Fprintf(out, "%-26s %s   (simulator: %s): %s\n", "flights", status.Counts(s.Flights), status.Counts(want),
		ok(s.Flights["ACTIVE"] == want["ACTIVE"] && s.Flights["DELETED"] == want["DELETED"]))
	requests := map[string]int64{}
	rows, err = pool.Query(ctx, `SELECT req_type || ' ' || status, count(*) FROM req_track GROUP BY 1`)
	if err != nil {
		return err
	}
	for rows.Next() {
		var k string
		var n int64
		if err := rows.Scan(&k, &n); err != nil {
			rows.Close()
			return err
		}
		requests[k] = n
	}
	rows.Close()
	fmt.Fprintf(out, "%-26s %s\n", "requests by final state", status.Counts(requests))
	var marked int64
	if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM cminmsgs WHERE CMINMSGS_DATE_PROCESSED IS NOT NULL`).Scan(&marked); err != nil {
		return err
	}
	fmt.Fprintf(out, "%-26s %d of %d terminal rows marked in the mailbox: %s\n", "processed markers", marked, terminal, ok(marked == terminal))
	fmt.Fprintf(out, "%-26s msgx.flight.changes %d, msgx.flight.state %d\n", "events delivered",
		c.Count("msgx.flight.changes"), c.Count("msgx.flight.state"))
	p := lat.percentiles(0.5, 0.9, 0.99)
	fmt.Fprintf(out, "%-26s p50 %s  p90 %s  p99 %s  (%d messages, mailbox commit → record on msgx.flight.changes)\n",
		"end-to-end latency", p[0].Round(time.Millisecond), p[1].Round(time.Millisecond), p[2].Round(time.Millisecond), len(lat.samples))
	if len(w.Gaps) > 0 {
		fmt.Fprintf(out, "%-26s includes W waiting at %d rolled-back ids until each was %s old (MSGX_MAX_COMMIT_DELAY); make bench measures latency without gaps\n",
			"", len(w.Gaps), maxCommitDelay)
	}
	fmt.Fprintln(out, "\nwhere to look next:")
	fmt.Fprintln(out, "  make up                                   the same stack, kept running (ports 8081-8084, Kafka 127.0.0.1:9092)")
	fmt.Fprintln(out, "  .devstack/bin/msgxctl status              watermark, head, backlog, dead letters, markers, leaders")
	fmt.Fprintln(out, "  .devstack/bin/msgxctl replay --dry-run --class EXHAUSTED")
	fmt.Fprintln(out, "  curl -H \"Authorization: Bearer <token>\" http://127.0.0.1:8091/flights/<FLID>")
	fmt.Fprintln(out, "                                            the read API (ingest; make up prints a token); /metrics and /readyz on each binary's ops port")
	fmt.Fprintln(out, "  .devstack/demo-logs/                      each binary's JSON log of this run")
	fmt.Fprintln(out, "  docs/runbook.md, docs/events.md           operations and the consumer contract")
	return nil
}
