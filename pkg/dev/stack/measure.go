package stack

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/msgx/msgx/pkg/dev/broker"
	"github.com/msgx/msgx/pkg/event"
	"github.com/msgx/msgx/pkg/kafka"
)

// Measurements of a running stack for the end-to-end benchmark (e2e/bench_test.go) and the demo.

// Latencies pairs mailbox commits (simulate.WriterConfig.Committed) with the arrival of the
// records they caused on msgx.flight.changes (Consume's onRecord): end-to-end latency.
type Latencies struct {
	mu        sync.Mutex
	committed map[int64]time.Time
	arrived   map[int64]time.Time // the first record of each message
	samples   []time.Duration
}

// NewLatencies returns an empty recorder.
func NewLatencies() *Latencies {
	return &Latencies{committed: map[int64]time.Time{}, arrived: map[int64]time.Time{}}
}

// Commit records that mailbox ids first … first+n-1 became visible at at.
func (l *Latencies) Commit(first int64, n int, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := range int64(n) {
		l.committed[first+i] = at
	}
}

// Arrive records the first record of a committed message on msgx.flight.changes.
func (l *Latencies) Arrive(r Record) {
	if r.Topic != "msgx.flight.changes" || r.MsgID == 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if at, ok := l.committed[r.MsgID]; ok {
		if _, seen := l.arrived[r.MsgID]; !seen {
			l.arrived[r.MsgID] = r.At
			l.samples = append(l.samples, r.At.Sub(at))
		}
	}
}

// Counts returns how many messages were committed and how many of them arrived.
func (l *Latencies) Counts() (committed, arrived int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.committed), len(l.samples)
}

// Percentiles returns the latency at each quantile p (0 … 1) of the arrived messages.
func (l *Latencies) Percentiles(ps ...float64) []time.Duration {
	l.mu.Lock()
	s := slices.Clone(l.samples)
	l.mu.Unlock()
	return Quantiles(s, ps...)
}

// Split divides the latency of every arrived message whose enqueue time is known (proc_state's
// enqueued_at: ingest enqueues a row when its watermark passes the row's id) into the wait to be
// ingested (commit → enqueued: the poll interval, and the wait below a missing id — a
// rolled-back insert's gap window or a lower id committed later) and the rest (enqueued →
// record on Kafka: processing, the outbox and the dispatcher).
func (l *Latencies) Split(enqueued map[int64]time.Time) (ingest, deliver []time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for id, at := range l.arrived {
		if e, ok := enqueued[id]; ok {
			ingest = append(ingest, e.Sub(l.committed[id]))
			deliver = append(deliver, at.Sub(e))
		}
	}
	return ingest, deliver
}

// Quantiles returns the value at each quantile p (0 … 1) of samples (sorted in place).
func Quantiles(samples []time.Duration, ps ...float64) []time.Duration {
	slices.Sort(samples)
	out := make([]time.Duration, len(ps))
	for i, p := range ps {
		if len(samples) > 0 {
			out[i] = samples[min(len(samples)-1, int(p*float64(len(samples))))]
		}
	}
	return out
}

// PeakRSS returns the peak resident set size (VmHWM) of process pid in bytes (Linux).
func PeakRSS(pid int) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("parse VmHWM %q: %w", rest, err)
			}
			return kb << 10, nil
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("no VmHWM in /proc/%d/status", pid)
}

// Backlog is what stands between the mailbox and Kafka, read with index probes (cheap enough to
// poll while the pipeline runs flat out: counting the open rows instead would load the server
// being measured). "Some open row" is the smallest open msg_id, which the open index answers
// whatever the statistics: as EXISTS it was planned as a scan of proc_state when half of a
// 1,000,000-row table was still open, 0.76 s a poll (docs/benchmarks.md).
type Backlog struct {
	Watermark int64 // highest mailbox id ingested without a gap below it
	Open      bool  // some proc_state row is PENDING or FAILED
}

const backlogSQL = `
SELECT (SELECT watermark FROM inbox_cursor),
       (SELECT min(msg_id) FROM proc_state WHERE status IN ('PENDING', 'FAILED')) IS NOT NULL`

// unsentSQL: is some KAFKA:msg event not SENT? Its probe walks the index entries of the events
// sent since the last vacuum (thousands of pages in a large drain), so pollers ask it only once
// nothing is open.
const unsentSQL = `
SELECT EXISTS (SELECT 1 FROM msg_event WHERE target = 'KAFKA:msg' AND status IN ('PENDING', 'DEAD'))
    OR EXISTS (SELECT 1 FROM msg_event WHERE event_id > msgx_change_cursor() AND target = 'KAFKA:msg' AND status = 'QUEUED')`

// ReadBacklog reads the backlog.
func ReadBacklog(ctx context.Context, pool *pgxpool.Pool) (Backlog, error) {
	var b Backlog
	err := pool.QueryRow(ctx, backlogSQL).Scan(&b.Watermark, &b.Open)
	return b, err
}

// ReadUnsent reports whether some KAFKA:msg event waits for the broker.
func ReadUnsent(ctx context.Context, pool *pgxpool.Pool) (bool, error) {
	var unsent bool
	err := pool.QueryRow(ctx, unsentSQL).Scan(&unsent)
	return unsent, err
}

// WaitDelivered polls the backlog every poll until every mailbox id up to maxID is ingested and
// terminal and no KAFKA:msg event waits for the broker, and returns the time it saw that. Unlike
// WaitDrained it neither waits for markers nor reads the full status: it times a drain.
func WaitDelivered(ctx context.Context, pool *pgxpool.Pool, maxID int64, poll time.Duration) (time.Time, error) {
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		b, err := ReadBacklog(ctx, pool)
		if err != nil {
			return time.Time{}, fmt.Errorf("read backlog: %w", err)
		}
		unsent := "not asked"
		if b.Watermark >= maxID && !b.Open {
			at := time.Now()
			some, err := ReadUnsent(ctx, pool)
			if err != nil {
				return time.Time{}, fmt.Errorf("read backlog: %w", err)
			}
			if !some {
				return at, nil
			}
			unsent = "some"
		}
		select {
		case <-ctx.Done():
			return time.Time{}, fmt.Errorf("not drained (watermark %d of %d, open %t, unsent events %s): %w",
				b.Watermark, maxID, b.Open, unsent, ctx.Err())
		case <-t.C:
		}
	}
}

// pgbenchScript is the one-message-per-transaction shape of the pump: read the head with its
// text, bind its identity, write its terminal status and marker intent, commit.
const pgbenchScript = `BEGIN;
SELECT msg_id, raw, status, attempts FROM bench_ps WHERE status IN ('PENDING','FAILED') ORDER BY msg_id LIMIT 1 \gset
INSERT INTO bench_id (identity_key, msg_id, raw_sha256, dttm, bound_at) VALUES ('AODB|FLOP|STND|' || :msg_id, :msg_id, '\x00', now(), now()) ON CONFLICT DO NOTHING;
UPDATE bench_ps SET status = 'SUCCEEDED', attempts = attempts + 1, finished_at = now(), backfill_next_at = now(), identity_key = 'AODB|FLOP|STND|' || :msg_id WHERE msg_id = :msg_id;
COMMIT;
`

// PGBenchCeiling runs pgbench (one client, for d) with the one-message-per-transaction shape of
// the pump against copies of proc_state and msg_identity (as found on pgURL's search_path) in a
// scratch schema, and returns its transactions per second: the ceiling of the naive design on
// this server, with the server's own commit durability (session settings of pgURL are not
// passed to pgbench).
func PGBenchCeiling(ctx context.Context, pgURL string, d time.Duration) (float64, error) {
	if _, err := exec.LookPath("pgbench"); err != nil {
		return 0, err
	}
	conn, err := pgx.Connect(ctx, pgURL)
	if err != nil {
		return 0, err
	}
	defer conn.Close(context.Background())
	schema := "bench_pgbench_" + strconv.Itoa(os.Getpid())
	rows := max(200_000, int(d.Seconds())*20_000)
	for _, q := range []string{
		`DROP SCHEMA IF EXISTS ` + schema + ` CASCADE`,
		`CREATE SCHEMA ` + schema,
		`CREATE TABLE ` + schema + `.bench_ps (LIKE proc_state INCLUDING ALL)`,
		`INSERT INTO ` + schema + `.bench_ps (msg_id, raw, raw_sha256, enqueued_at)
		 SELECT g, 'x', sha256(int8send(g)), now() FROM generate_series(1, ` + strconv.Itoa(rows) + `) g`,
		`CREATE TABLE ` + schema + `.bench_id (LIKE msg_identity INCLUDING ALL)`,
		`ANALYZE ` + schema + `.bench_ps`,
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			return 0, fmt.Errorf("prepare pgbench tables: %w", err)
		}
	}
	defer func() { _, _ = conn.Exec(context.Background(), `DROP SCHEMA IF EXISTS `+schema+` CASCADE`) }()
	f, err := os.CreateTemp("", "pgbench-*.sql")
	if err != nil {
		return 0, err
	}
	defer os.Remove(f.Name())
	if _, err := f.WriteString(pgbenchScript); err != nil {
		f.Close()
		return 0, err
	}
	if err := f.Close(); err != nil {
		return 0, err
	}
	secs := strconv.Itoa(max(1, int(d.Seconds())))
	cc := conn.Config()
	cmd := exec.CommandContext(ctx, "pgbench", "-n", "-c", "1", "-T", secs, "-f", f.Name(),
		"-h", cc.Host, "-p", strconv.Itoa(int(cc.Port)), "-U", cc.User, cc.Database)
	cmd.Env = append(os.Environ(), "PGOPTIONS=-c search_path="+schema)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("pgbench: %v: %s", err, out)
	}
	m := regexp.MustCompile(`tps = ([0-9.]+)`).FindSubmatch(out)
	if m == nil {
		return 0, fmt.Errorf("pgbench output without tps: %s", out)
	}
	return strconv.ParseFloat(string(m[1]), 64)
}

// RawProduceRate sends n records of size bytes (keys spread over keys values, the headers the
// dispatcher sets: event.Record) to cfg.TopicChanges with a plain sarama producer (broker.DialPlain: the
// dispatcher's client library), in batches of batch, without transactions, and returns the acknowledged records per second: the broker
// ceiling of the dispatcher.
func RawProduceRate(ctx context.Context, cfg kafka.Config, n, batch, size, keys int) (float64, error) {
	p, err := broker.DialPlain(cfg)
	if err != nil {
		return 0, err
	}
	defer p.Close()
	value := []byte(`{"flid":0,"pad":"` + strings.Repeat("x", max(0, size-20)) + `"}`)
	recs := make([]kafka.Record, 0, batch)
	start := time.Now()
	for i := 0; i < n; {
		recs = recs[:0]
		for ; len(recs) < batch && i < n; i++ {
			r := event.Record(event.Claimed{EventID: int64(i + 1), Target: event.TargetMsg, FLID: strconv.Itoa(100001 + i%keys),
				Type: event.Upsert, StateVersion: int64(i/keys + 1), MsgID: int64(i + 1), Payload: value, CreatedAt: start}, 1)
			rec := kafka.Record{Topic: cfg.TopicChanges, Key: r.Key, Value: r.Value, Headers: make([]kafka.Header, len(r.Headers))}
			for j, h := range r.Headers {
				rec.Headers[j] = kafka.Header(h)
			}
			recs = append(recs, rec)
		}
		if err := errors.Join(p.Send(ctx, recs)...); err != nil {
			return 0, err
		}
	}
	return float64(n) / time.Since(start).Seconds(), nil
}

// CPUTime returns the user plus system CPU time process pid has used (Linux, USER_HZ = 100).
func CPUTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces; the fields after its ')' start at field 3.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, fmt.Errorf("parse /proc/%d/stat", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("parse /proc/%d/stat: %d fields", pid, len(f))
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("parse /proc/%d/stat: %w", pid, err)
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond, nil
}

// CommCPU returns the CPU time used so far by every live process named comm (e.g. "postgres",
// "mariadbd"): the database servers' share of a run, as the difference of two readings.
func CommCPU(comm string) time.Duration {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	var total time.Duration
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		c, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		if err != nil || strings.TrimSpace(string(c)) != comm {
			continue
		}
		if t, err := CPUTime(pid); err == nil {
			total += t
		}
	}
	return total
}
