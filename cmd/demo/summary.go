package main

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/msgx/msgx/pkg/dev/simulate"
	"github.com/msgx/msgx/pkg/dev/stack"
	"github.com/msgx/msgx/pkg/dev/verify"
	"github.com/msgx/msgx/pkg/roles"
	"github.com/msgx/msgx/pkg/status"
)

type summaryInput struct {
	day      simulate.Day
	written  simulate.Written
	answers  int // the AODB's answers to requests (mailbox rows besides the day)
	snap     status.Snapshot
	consumer *stack.Consumer
	lat      *stack.Latencies
	mailbox  *sql.DB
	pool     *pgxpool.Pool
	bootOK   bool
	prefix   string // the binaries' role names: <prefix>ingest, …
	early    early  // the early update: intended SKIPPED no-match
}

// shownProblems is how many differences a failed check prints.
const shownProblems = 5

// summary prints what msgx made of the day next to what the simulator intended, and reports
// whether every check passed: every message's outcome and marker, every flight's state field by
// field (pkg/dev/verify, the comparison the end-to-end test and the chaos suite use), the state
// topic, and the delivered event counts against the outbox and the stored versions.
func summary(ctx context.Context, out io.Writer, in summaryInput) (bool, error) {
	// Rows of the mailbox besides the day are the AODB's answers (intended SUCCEEDED) and the
	// early update (SKIPPED no-match).
	extra, err := verify.Answers(ctx, in.mailbox, in.written)
	if err != nil {
		return false, err
	}
	extra[in.early.id] = verify.Want{Status: "SKIPPED"}
	rep, err := verify.Day(ctx, verify.Input{Pool: in.pool, Mailbox: in.mailbox, Day: in.day, Written: in.written,
		Extra: extra, Records: in.consumer.Records})
	if err != nil {
		return false, fmt.Errorf("compare with the model: %w", err)
	}
	r := &report{out: out, allOK: in.bootOK, problems: map[string][]string{}}
	for _, c := range rep.Checks {
		r.problems[c.Name] = c.Problems
	}
	fmt.Fprintln(out, "\n== summary ==")
	for _, section := range []func(context.Context, summaryInput, map[int64]verify.Want, verify.Report) error{
		r.messages, r.flights, r.delivery, r.sessions,
	} {
		if err := section(ctx, in, extra, rep); err != nil {
			return false, err
		}
	}
	if err := latency(ctx, out, in); err != nil {
		return false, err
	}
	verdict := "every check ok"
	if !r.allOK {
		verdict = "MISMATCH: see the lines above"
	}
	r.line("verdict", "%s", verdict)
	return r.allOK, nil
}

// report prints the summary's lines and remembers whether every check was ok.
type report struct {
	out      io.Writer
	allOK    bool
	problems map[string][]string // verify.Day's problems by check name
}

// ok is a check's verdict word.
func (r *report) ok(b bool) string {
	r.allOK = r.allOK && b
	if b {
		return "ok"
	}
	return "MISMATCH"
}

func (r *report) line(label, format string, a ...any) {
	fmt.Fprintf(r.out, "%-26s "+format+"\n", append([]any{label}, a...)...)
}

// check prints one of verify.Day's checks with its first problems.
func (r *report) check(label, name, what string) {
	p := r.problems[name]
	r.line(label, "%s: %s", what, r.ok(len(p) == 0))
	for _, m := range p[:min(len(p), shownProblems)] {
		fmt.Fprintf(r.out, "%-26s   %s\n", "", m)
	}
	if len(p) > shownProblems {
		fmt.Fprintf(r.out, "%-26s   … and %d more\n", "", len(p)-shownProblems)
	}
}

// terminal counts the messages that reached an end.
func terminal(s status.Snapshot) int64 {
	return s.ByStatus["SUCCEEDED"] + s.ByStatus["SKIPPED"] + s.ByStatus["DEAD"]
}

// messages: what was written, the watermark, every outcome and marker.
func (r *report) messages(ctx context.Context, in summaryInput, extra map[int64]verify.Want, _ verify.Report) error {
	s := in.snap
	written := int64(len(in.written.IDs)) + int64(in.answers) + 1 // + the early update
	r.line("messages written", "%d   (simulator intended: %s; AODB answers: %d, in the mailbox: %d: %s)",
		written, in.day.Summary(), in.answers, len(extra)-1, r.ok(len(extra)-1 == in.answers))
	r.line("early update", "msg_id %d: a stand change for FLID %d, which the AODB never announced: %s",
		in.early.id, in.early.flid, earlyOutcome(ctx, in.pool, in.early))
	maxID := slices.Max(in.written.IDs)
	for id := range extra {
		maxID = max(maxID, id)
	}
	if len(in.written.Gaps) > 0 {
		maxID = max(maxID, slices.Max(in.written.Gaps))
	}
	r.line("watermark W", "%d = highest mailbox id: %d messages + %d AODB answers + the early update + %d ids of rolled-back inserts (never committed): %s",
		s.Watermark, len(in.written.IDs), len(extra)-1, len(in.written.Gaps), r.ok(s.Watermark == maxID))
	r.line("outcomes", "SUCCEEDED %d, SKIPPED %d, DEAD %d, FAILED %d, PENDING %d",
		s.ByStatus["SUCCEEDED"], s.ByStatus["SKIPPED"], s.ByStatus["DEAD"], s.ByStatus["FAILED"], s.ByStatus["PENDING"])
	reasons, err := counts(ctx, in.pool, skippedByReasonSQL)
	if err != nil {
		return err
	}
	r.line("skipped by reason", "%s", status.Counts(reasons))
	r.line("dead by class", "%s", status.Counts(s.DeadByClass))
	term := terminal(s)
	r.line("accounted", "%d + %d + %d = %d of %d written: %s; FAILED left: %d",
		s.ByStatus["SUCCEEDED"], s.ByStatus["SKIPPED"], s.ByStatus["DEAD"], term, written, r.ok(term == written), s.ByStatus["FAILED"])
	r.check("intended outcomes", "outcomes", "each message's proc_state row = the simulator's intended outcome")
	r.check("processed markers", "markers", fmt.Sprintf("%d of %d terminal rows marked in the mailbox", term-int64(len(r.problems["markers"])), term))
	return nil
}

// flights: the flight counts, every flight against the model, the requests.
func (r *report) flights(ctx context.Context, in summaryInput, _ map[int64]verify.Want, rep verify.Report) error {
	s := in.snap
	want := map[string]int64{"ACTIVE": int64(in.day.Expected.Count("ACTIVE")), "DELETED": int64(in.day.Expected.Count("DELETED"))}
	r.line("flights", "%s   (simulator: %s): %s", status.Counts(s.Flights), status.Counts(want),
		r.ok(s.Flights["ACTIVE"] == want["ACTIVE"] && s.Flights["DELETED"] == want["DELETED"]))
	r.check("flights = model", "flights = model", fmt.Sprintf("%d flights compared with the simulator's model, field by field", rep.Flights))
	requests, err := counts(ctx, in.pool, requestsSQL)
	if err != nil {
		return err
	}
	r.line("requests by final state", "%s", status.Counts(requests))
	return nil
}

// delivery: both topics against the outbox and the stored versions.
func (r *report) delivery(ctx context.Context, in summaryInput, _ map[int64]verify.Want, rep verify.Report) error {
	sent, err := counts(ctx, in.pool, sentByTargetSQL)
	if err != nil {
		return err
	}
	distinct := distinctEvents(in.consumer.Records())
	r.line("events delivered", "msgx.flight.changes %d events (expected %d: one per flight version, Σ state_version of %d flights; SENT KAFKA:msg %d): %s",
		distinct[verify.TopicChanges], rep.Versions, rep.Flights, sent["KAFKA:msg"],
		r.ok(int64(distinct[verify.TopicChanges]) == rep.Versions && sent["KAFKA:msg"] == rep.Versions))
	// The flush publishes one record per changed FLID and flush period (its newest state): their
	// number depends on timing, between one per flight and one per flight version.
	st := int64(distinct[verify.TopicState])
	r.line("", "msgx.flight.state %d events (expected between %d, one per flight, and %d, one per flight version: the flush sends the newest state of a FLID once per MSGX_SCHD_FLUSH_PERIOD): %s",
		st, rep.Flights, rep.Versions, r.ok(st >= int64(rep.Flights) && st <= rep.Versions))
	r.line("", "%d records beyond the first of their event (the idempotent producer's allowance after a retry)", rep.Duplicates)
	r.check("", "changes complete", "msgx.flight.changes holds versions 1..state_version of every flight, in order")
	r.check("", "state topic caught up", "the last msgx.flight.state record of every flight read")
	r.check("", "state topic = flights", "the last msgx.flight.state record of every flight = its stored state")
	r.check("", "records follow the contract", "every record's headers follow docs/events.md")
	r.check("", "versions never decrease", "no FLID's state_version goes down on a topic")
	r.check("", "records = sent events", "every record is a SENT outbox event, every SENT KAFKA:msg event is on its topic")
	return nil
}

// sessions: every binary connected as its own role.
func (r *report) sessions(ctx context.Context, in summaryInput, _ map[int64]verify.Want, _ verify.Report) error {
	pgWrong, myUsers, err := sessions(ctx, in)
	if err != nil {
		return err
	}
	r.line("database sessions", "every binary's PostgreSQL session as its own role %s<binary>: %s; mailbox accounts connected: %s (root: the simulator, writer and AODB)",
		in.prefix, r.ok(len(pgWrong) == 0), strings.Join(myUsers, ", "))
	for _, w := range pgWrong {
		fmt.Fprintf(r.out, "%-26s   %s\n", "", w)
	}
	return nil
}

// latency prints the end-to-end latency and what it is made of.
func latency(ctx context.Context, out io.Writer, in summaryInput) error {
	enqueued := map[int64]time.Time{}
	rows, err := in.pool.Query(ctx, enqueuedSQL)
	if err != nil {
		return fmt.Errorf("read enqueue times: %w", err)
	}
	var id int64
	var at time.Time
	if _, err := pgx.ForEachRow(rows, []any{&id, &at}, func() error { enqueued[id] = at; return nil }); err != nil {
		return fmt.Errorf("read enqueue times: %w", err)
	}
	ps := []float64{0.5, 0.9, 0.99}
	text := func(d []time.Duration) string {
		return fmt.Sprintf("p50 %-7s p90 %-7s p99 %-7s", d[0].Round(time.Millisecond), d[1].Round(time.Millisecond), d[2].Round(time.Millisecond))
	}
	_, arrived := in.lat.Counts()
	wait, deliver := in.lat.Split(enqueued)
	behind := 0
	for _, d := range wait {
		if d >= time.Second {
			behind++
		}
	}
	pad := strings.Repeat(" ", 27+35+2) // under the explanation
	fmt.Fprintf(out, "%-26s %s  mailbox commit → first record on msgx.flight.changes (%d messages with a record), made of\n",
		"end-to-end latency", text(in.lat.Percentiles(ps...)), arrived)
	fmt.Fprintf(out, "%-26s %s  commit → enqueued. Ingest takes rows in id order: a row waits while a lower id is\n",
		"  waiting to be ingested", text(stack.Quantiles(wait, ps...)))
	fmt.Fprintf(out, "%smissing. %d messages waited over 1 s, behind the %d rolled-back ids (W skips one only\n", pad, behind, len(in.written.Gaps))
	fmt.Fprintf(out, "%safter MSGX_MAX_COMMIT_DELAY=%s) or behind the %d commits out of id order\n", pad, maxCommitDelay, in.written.OutOfOrder)
	fmt.Fprintf(out, "%-26s %s  enqueued → on Kafka: the pipeline's latency without those waits\n",
		"  processing and delivery", text(stack.Quantiles(deliver, ps...)))
	return nil
}

// sessions lists the binaries' PostgreSQL sessions not logged in as their own role (none: each
// binary runs as its least-privilege role), and the accounts connected to the mailbox.
func sessions(ctx context.Context, in summaryInput) (wrong, mailboxUsers []string, err error) {
	rows, err := in.pool.Query(ctx, sessionsSQL)
	if err != nil {
		return nil, nil, fmt.Errorf("read sessions: %w", err)
	}
	var app, user string
	seen := map[string]bool{}
	if _, err := pgx.ForEachRow(rows, []any{&app, &user}, func() error {
		bin, _, _ := strings.Cut(strings.TrimPrefix(app, "msgx-"), "-")
		seen[bin] = true
		if want := roles.Name(in.prefix, roles.Role(bin)); user != want {
			wrong = append(wrong, fmt.Sprintf("%s connects as %s, not %s", app, user, want))
		}
		return nil
	}); err != nil {
		return nil, nil, fmt.Errorf("read sessions: %w", err)
	}
	for _, b := range stack.Binaries {
		if !seen[b] {
			wrong = append(wrong, b+": no session")
		}
	}
	myRows, err := in.mailbox.QueryContext(ctx, mailboxUsersSQL)
	if err != nil {
		return nil, nil, fmt.Errorf("read mailbox sessions: %w", err)
	}
	defer myRows.Close()
	for myRows.Next() {
		var u string
		if err := myRows.Scan(&u); err != nil {
			return nil, nil, err
		}
		mailboxUsers = append(mailboxUsers, u)
	}
	slices.Sort(mailboxUsers)
	slices.Sort(wrong)
	return wrong, mailboxUsers, myRows.Err()
}

// counts runs a query of (key, count) rows.
func counts(ctx context.Context, pool *pgxpool.Pool, query string) (map[string]int64, error) {
	rows, err := pool.Query(ctx, query)
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	var k string
	var n int64
	if _, err := pgx.ForEachRow(rows, []any{&k, &n}, func() error { out[k] = n; return nil }); err != nil {
		return nil, err
	}
	return out, nil
}

// distinctEvents counts the distinct events (by event id) read per topic.
func distinctEvents(recs []stack.Record) map[string]int {
	seen := map[string]map[int64]bool{}
	for _, r := range recs {
		if seen[r.Topic] == nil {
			seen[r.Topic] = map[int64]bool{}
		}
		seen[r.Topic][r.EventID] = true
	}
	out := map[string]int{}
	for t, ids := range seen {
		out[t] = len(ids)
	}
	return out
}

// hints prints where to look next. Nothing of the demo runs any more: the commands work on what
// it leaves, its two databases, as the roles it applied.
func hints(out io.Writer, o options, a stack.Access, e early) {
	bin := o.binDir
	if rel, err := filepath.Rel(o.root, bin); err == nil && !strings.HasPrefix(rel, "..") {
		bin = rel
	}
	logs := o.logDir
	if rel, err := filepath.Rel(o.root, logs); err == nil && !strings.HasPrefix(rel, "..") {
		logs = rel
	}
	ctl := filepath.Join(bin, "msgxctl")
	fmt.Fprintf(out, "\nwhere to look next (the demo stopped everything; its databases %s and %s stay until the next demo):\n", o.pgDB, o.mailDB)
	fmt.Fprintf(out, "  MSGX_PG_URL='%s' %s status\n", a.PG[roles.Reader], ctl)
	fmt.Fprintf(out, "      watermark, head, backlog, dead letters, markers, leaders — as the read-only role %s\n", roles.Name(a.Prefix, roles.Reader))
	fmt.Fprintf(out, "  MSGX_PG_URL='%s' %s show %d\n", a.PG[roles.Reader], ctl, e.id)
	fmt.Fprintf(out, "      the early update: SKIPPED no-match, FLID %d was unknown when it came\n", e.flid)
	fmt.Fprintf(out, "  MSGX_PG_URL='%s' %s replay --dry-run --ids %d\n", a.PG[roles.Admin], ctl, e.id)
	fmt.Fprintf(out, "      what a replay would take back once the flight exists — as the operator role %s\n", roles.Name(a.Prefix, roles.Admin))
	fmt.Fprintln(out, "  make up      the same stack kept running (database msgx, ops ports 8081-8084, API 127.0.0.1:8091, Kafka 127.0.0.1:9092)")
	fmt.Fprintln(out, "               with the operator console: it prints the console's URL and a login token;")
	fmt.Fprintln(out, "               it prints an API token (export MSGX_TOKEN=…) for the read API:")
	fmt.Fprintln(out, "               curl -H \"Authorization: Bearer $MSGX_TOKEN\" http://127.0.0.1:8091/flights/<FLID>")
	fmt.Fprintf(out, "  %-12s each binary's JSON log of this run\n", logs+"/")
	fmt.Fprintln(out, "  docs/runbook.md, docs/events.md   operations and the consumer contract")
}

// earlyOutcome is the early update's status and reason as stored.
func earlyOutcome(ctx context.Context, pool *pgxpool.Pool, e early) string {
	var st string
	if err := pool.QueryRow(ctx, earlyOutcomeSQL, e.id).Scan(&st); err != nil {
		return "not read: " + err.Error()
	}
	return st
}
