package e2e_test

// Helpers of BenchmarkEndToEnd (bench_test.go): binaries, FLOP generation, the machine's
// description and the run file of docs/runs/benchmarks.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/dev/simulate"
	"github.com/msgx/msgx/pkg/dev/stack"
	"github.com/msgx/msgx/pkg/sis"
)

var (
	benchBinOnce sync.Once
	benchBinDir  string
	benchBinErr  error
)

// benchBinaries builds the binaries once per test binary, into .devstack/bench/bin.
func benchBinaries(b *testing.B, root string) string {
	benchBinOnce.Do(func() {
		benchBinDir = filepath.Join(root, ".devstack", "bench", "bin")
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		benchBinErr = stack.Build(ctx, benchBinDir)
	})
	require.NoError(b, benchBinErr)
	return benchBinDir
}

// benchToday is today's date in the airport zone: the jobs binary's history sweep purges an
// older simulated day.
func benchToday(b *testing.B) time.Time {
	loc, err := time.LoadLocation("Asia/Shanghai")
	require.NoError(b, err)
	y, m, d := time.Now().In(loc).Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

func benchWrite() bool { return os.Getenv("MSGX_BENCH_WRITE") == "1" }

// --- FLOP updates -------------------------------------------------------------------------

// flopGen makes FLOP updates over the snapshot's flights, in the simulator's XML layout, with
// fresh SEQNs. Every update changes its flight (a value different from the flight's last one of
// that subtype), so each one is a flight change and an event on msgx.flight.changes.
type flopGen struct {
	flights []simulate.Flight
	rng     *rand.Rand
	seqn    int64
	at      time.Time
	n       map[string]int    // per flight and subtype: updates so far
	last    map[string]string // per flight and subtype: the last body sent
}

func newFlopGen(flights []simulate.Flight, seqn int64, after time.Time, seed uint64) *flopGen {
	return &flopGen{flights: flights, rng: rand.New(rand.NewPCG(seed, seed^0x2545f4914f6cdd1d)), seqn: seqn,
		at: after, n: map[string]int{}, last: map[string]string{}}
}

var benchDelayCodes = []struct{ code, desc string }{
	{"AX", "ATC STAFF/EQUIPMENT PROBLEM"}, {"RE", "CREW ROTATION"}, {"WO", "WEATHER AT DEPARTURE"},
	{"TG", "AIRCRAFT TECHNICAL DEFECT"}, {"RA", "LATE ARRIVAL OF AIRCRAFT"},
}

// body renders the FLOP elements of subtype styp for f, variant k.
func (g *flopGen) body(f *simulate.Flight, styp string, k int) string {
	t := func(min int) string { return sis.FormatDateTime(f.Scheduled.Add(time.Duration(min) * time.Minute)) }
	switch styp {
	case "STND":
		s := 101 + (int(f.FLID)+k)%40
		if (int(f.FLID)+k)%3 == 0 {
			s = 401 + (int(f.FLID)+k)%60
		}
		return "\t\t<STND>" + strconv.Itoa(s) + "</STND>\n"
	case "GTDT":
		gate := fmt.Sprintf("G%02d", 1+(int(f.FLID)+k)%40)
		return "\t\t<GTDT GTNO=\"1\">\n\t\t\t<GATE>" + gate + "</GATE>\n\t\t\t<PGOT>" + t(-60-k%30) + "</PGOT>\n\t\t\t<PGCT>" +
			t(-15) + "</PGCT>\n\t\t\t<GTYP>D</GTYP>\n\t\t</GTDT>\n"
	case "DELY":
		d := benchDelayCodes[k%len(benchDelayCodes)]
		dura := 5 + k%115
		return fmt.Sprintf("\t\t<DELY CODE=%q STRT=%q DURA=\"%02d%02d\">%s</DELY>\n", d.code, t(0), dura/60, dura%60, d.desc)
	case "CNCL":
		if k%2 == 1 { // un-cancelled
			return "\t\t<CNCL></CNCL>\n"
		}
		return "\t\t<CNCL>" + t(-120+k%60) + "</CNCL>\n"
	default: // a time: ESTT EOBT TOBT ACTT
		return "\t\t<" + styp + ">" + t(-30+k%240) + "</" + styp + ">\n"
	}
}

// next returns the next update.
func (g *flopGen) next() simulate.Message {
	f := &g.flights[g.rng.IntN(len(g.flights))]
	dep := f.Movement == "D"
	var styp string
	switch x := g.rng.IntN(100); {
	case x < 30:
		styp = "ESTT"
	case x < 45:
		styp = "STND"
	case x < 60:
		styp = "GTDT"
	case x < 70 && dep:
		styp = "EOBT"
	case x < 70:
		styp = "ACTT"
	case x < 80:
		styp = "DELY"
	case x < 85:
		styp = "CNCL"
	case x < 95 && dep:
		styp = "TOBT"
	default:
		styp = "ACTT"
	}
	key := strconv.FormatInt(f.FLID, 10) + styp
	k := g.n[key]
	body := g.body(f, styp, k)
	if body == g.last[key] {
		k++
		body = g.body(f, styp, k)
	}
	g.n[key], g.last[key] = k+1, body
	g.at = g.at.Add(time.Second)
	m := simulate.Message{At: g.at, SNDR: "AODB", SEQN: g.seqn, Type: "FLOP", Subtype: styp, FLID: f.FLID,
		Outcome: simulate.OutcomeApplied, DuplicateOf: -1}
	g.seqn++
	m.Raw = []byte(`<?xml version="1.0" encoding="UTF-8"?>
<MSG xmlns:xsi = "http://www.w3.org/2001/XMLSchema-instance" xsi:noNamespaceSchemaLocation = "unisysaodbsis.xsd">
	<META>
		<SNDR>AODB</SNDR>
		<SEQN>` + strconv.FormatInt(m.SEQN, 10) + `</SEQN>
		<DTTM>` + g.at.Format("20060102150405") + `</DTTM>
		<TYPE>FLOP</TYPE>
		<STYP>` + styp + `</STYP>
	</META>
	<FLOP>
		<FLID>` + strconv.FormatInt(f.FLID, 10) + `</FLID>
		<FFID>` + f.Airline + "-" + f.FlightNumber + "-" + f.Movement + "-" + sis.FormatDateTime(f.Scheduled) + "-" + f.Indicator + `</FFID>
` + body + `	</FLOP>
</MSG>
`)
	return m
}

// messages returns the next n updates, indexed from 0.
func (g *flopGen) messages(n int) []simulate.Message {
	out := make([]simulate.Message, n)
	for i := range out {
		out[i] = g.next()
		out[i].Index = i
	}
	return out
}

// --- the machine ----------------------------------------------------------------------------

type machine struct {
	cpus                   int
	cpuModel, mem          string
	goVersion, pg, mariadb string
	pgSettings             string // the server settings that decide how a large backlog fares
}

func describeMachine(ctx context.Context, b *testing.B, pool *pgxpool.Pool, mysqlDSN string) machine {
	m := machine{cpus: runtime.NumCPU(), cpuModel: "unknown", mem: "unknown", goVersion: runtime.Version()}
	if s, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(s), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.cpuModel = strings.TrimSpace(v)
				break
			}
		}
	}
	if s, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, l := range strings.Split(string(s), "\n") {
			if v, ok := strings.CutPrefix(l, "MemTotal:"); ok {
				if kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64); err == nil {
					m.mem = fmt.Sprintf("%.1f GiB", float64(kb)/(1<<20))
				}
			}
		}
	}
	require.NoError(b, pool.QueryRow(ctx, `SHOW server_version`).Scan(&m.pg))
	require.NoError(b, pool.QueryRow(ctx, `SELECT string_agg(name || ' ' || current_setting(name), ', ' ORDER BY name)
		FROM unnest(ARRAY['autovacuum', 'max_wal_size', 'shared_buffers', 'synchronous_commit']) AS name`).Scan(&m.pgSettings))
	db, err := simulate.OpenMailbox(mysqlDSN)
	require.NoError(b, err)
	defer db.Close()
	require.NoError(b, db.QueryRowContext(ctx, `SELECT VERSION()`).Scan(&m.mariadb))
	return m
}

// loadAvg is the 1, 5 and 15 minute load average.
func loadAvg() string {
	s, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(s))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// --- the report -----------------------------------------------------------------------------

func (r benchResult) rssMaxMB() float64 {
	var m int64
	for _, v := range r.rss {
		m = max(m, v)
	}
	return float64(m) / (1 << 20)
}

// target says whether a figure met its target, and by how much it missed.
func target(ok bool, miss string) string {
	if ok {
		return "met"
	}
	return "**missed** " + miss
}

// Targets on a quiet 2-core machine (docs/benchmarks.md): rate, ratio and CPU; latencies, commits
// and memory.
const (
	targetRate      = 8000 // msgs/s end to end
	targetRatio     = 8    // × the pgbench ceiling
	targetCPU       = 200  // µs of CPU per message, every process
	targetP50       = 50 * time.Millisecond
	targetP99       = 100 * time.Millisecond
	targetP99At2k   = 300 * time.Millisecond
	targetCommits2k = 150 // PostgreSQL commits per second at 2,000 msgs/s, every stage
	// The A/B against the wave's base (make bench's AB_BASE): throughput at least, CPU per message
	// at most, these ratios.
	targetABRate    = 1.6
	targetABCPU     = 0.6
	targetRSS       = 64  // MB per binary
	target1MSlowest = 0.8 // the 1M backlog's rate against the 100k one's
)

func (r benchResult) section() string {
	var b strings.Builder
	m := r.machine
	ratio := r.e2e.rate / r.pgbenchTPS
	cpu := r.e2e.cpuPerMsg()
	fmt.Fprintf(&b, "## %s\n\n", r.at.Format("2006-01-02 15:04 UTC"))
	fmt.Fprintf(&b, "Machine: %d CPUs (%s), %s RAM, %s, PostgreSQL %s (%s), MariaDB %s, the development Kafka broker (kfake, its own process). "+
		"Load average (1/5/15 min) %s at the start, %s at the end. Every binary runs with its default configuration.\n\n",
		m.cpus, m.cpuModel, m.mem, m.goVersion, m.pg, m.pgSettings, m.mariadb, r.loadStart, r.loadEnd)
	b.WriteString("| measure | result | target |\n|---|---|---|\n")
	fmt.Fprintf(&b, "| throughput: %d messages (reference lists, %d-flight snapshot, %d FLOPs) pre-written, stack start → all terminal and every KAFKA:msg event acknowledged | %.0f msgs/s (%s; %d events of %d B mean) | ≥ %d: %s |\n",
		r.e2e.backlog, r.size.flights, r.size.backlog, r.e2e.rate, r.e2e.drain.Round(time.Millisecond), r.events, r.payload, targetRate,
		target(r.e2e.rate >= targetRate, fmt.Sprintf("by %.0f%%", 100*(1-r.e2e.rate/targetRate))))
	fmt.Fprintf(&b, "| pgbench ceiling: one message per transaction (head read, identity, terminal write, commit), 1 client, 10 s | %.0f tps | |\n", r.pgbenchTPS)
	fmt.Fprintf(&b, "| throughput / pgbench ceiling | %.2f× | ≥ %d×: %s |\n", ratio, targetRatio,
		target(ratio >= targetRatio, fmt.Sprintf("by %.0f%%", 100*(1-ratio/targetRatio))))
	fmt.Fprintf(&b, "| CPU per message during the throughput run: the four binaries, the run database's PostgreSQL backends, the MariaDB server | %.0f µs (%s) | ≤ %d µs: %s |\n",
		cpu, r.cpuParts(), targetCPU, target(cpu <= targetCPU, fmt.Sprintf("by %.0f µs", cpu-targetCPU)))
	fmt.Fprintf(&b, "| WAL per message during the throughput run (the server's, checkpoints' full-page images included) | %.0f B | |\n", r.e2e.walPerMsg())
	fmt.Fprintf(&b, "| raw sarama produce to the same broker (batches of 500, %d B values) | %.0f records/s (throughput is %.2f× of it) | |\n",
		r.payload, r.saramaRate, r.e2e.rate/r.saramaRate)
	fmt.Fprintf(&b, "| latency, default configuration, mailbox commit → consumer receipt on msgx.flight.changes, %s | %s | p50 < %d ms: %s; p99 < %d ms: %s |\n",
		r.def.what(), r.def.figures(), targetP50.Milliseconds(),
		target(r.def.p50 < targetP50, fmt.Sprintf("by %d ms", (r.def.p50-targetP50).Milliseconds())), targetP99.Milliseconds(),
		target(r.def.p99 < targetP99, fmt.Sprintf("by %d ms", (r.def.p99-targetP99).Milliseconds())))
	fmt.Fprintf(&b, "| sustained, default configuration, %s; backlog (committed, not yet received) mean %.0f in s 10–20, %.0f in the last 10 s, max %d | %s; backlog growth %+.0f messages; %.0f PostgreSQL commits/s | p99 < %d ms: %s; no growth: %s; ≤ %d commits/s: %s |\n",
		r.k2.what(), r.k2.backlogEarly, r.k2.backlogLate, r.k2.backlogMax, r.k2.figures(), r.k2.growth(), r.k2.commitsPerS,
		targetP99At2k.Milliseconds(), target(r.k2.p99 < targetP99At2k, fmt.Sprintf("(p99 %s)", msText(r.k2.p99))),
		target(r.k2.written >= 0.95*float64(r.k2.rate) && r.k2.growth() <= max(100, 0.1*float64(r.k2.rate)),
			fmt.Sprintf("(%+.0f messages)", r.k2.growth())),
		targetCommits2k, target(r.k2.commitsPerS <= targetCommits2k, fmt.Sprintf("(%.0f)", r.k2.commitsPerS)))
	if r.m1.backlog > 0 {
		rel := r.m1.rate / r.e2e.rate
		fmt.Fprintf(&b, "| throughput, %d-message backlog, as above | %.0f msgs/s (%s; %.2f× the 100k run; CPU %.0f µs/msg) | within 20%% of the 100k run: %s |\n",
			r.m1.backlog, r.m1.rate, r.m1.drain.Round(time.Millisecond), rel, r.m1.cpuPerMsg(),
			target(rel >= target1MSlowest, fmt.Sprintf("by %.0f%%", 100*(target1MSlowest-rel))))
	}
	var parts []string
	worst := ""
	for _, name := range stack.Binaries {
		mb := float64(r.rss[name]) / (1 << 20)
		parts = append(parts, fmt.Sprintf("%s %.1f", name, mb))
		if mb >= targetRSS {
			worst += fmt.Sprintf(" %s by %.1f MB", name, mb-targetRSS)
		}
	}
	fmt.Fprintf(&b, "| peak RSS (VmHWM before stop, largest of the stacks; the 1,200-flight snapshot is the largest schedule), MB | %s | < %d each: %s |\n\n",
		strings.Join(parts, ", "), targetRSS, target(worst == "", worst))
	b.WriteString(r.abSection())
	fmt.Fprintf(&b, "Throughput run, from the stack's start: everything ingested at %.1f s, processed at %.1f s, delivered at %.1f s. "+
		"CPU time during it (of %.0f s available on %d CPUs): ", r.e2e.ingested.Seconds(), r.e2e.processed.Seconds(), r.e2e.drain.Seconds(),
		r.e2e.drain.Seconds()*float64(m.cpus), m.cpus)
	var cpus []string
	for _, name := range cpuCounted {
		cpus = append(cpus, fmt.Sprintf("%s %.1f s", name, r.e2e.cpu[name].Seconds()))
	}
	fmt.Fprintf(&b, "%s (postgres: the backends of the run's database over their whole life, the stack's start-up included; mariadbd: the whole server's delta, other users included). "+
		"For information: every PostgreSQL process %.1f s (other users, WAL writer and checkpointer included), the development broker %.1f s.\n\n",
		strings.Join(cpus, ", "), r.e2e.cpu[cpuPGAll].Seconds(), r.e2e.cpu[cpuBroker].Seconds())
	b.WriteString("```\n")
	fmt.Fprintf(&b, "e2e_msgs_per_s: %.0f\n", r.e2e.rate)
	fmt.Fprintf(&b, "pgbench_ceiling_tps: %.0f\n", r.pgbenchTPS)
	fmt.Fprintf(&b, "e2e_over_ceiling: %.2f\n", ratio)
	fmt.Fprintf(&b, "sarama_raw_per_s: %.0f\n", r.saramaRate)
	fmt.Fprintf(&b, "cpu_us_per_msg: %.0f\n", cpu)
	fmt.Fprintf(&b, "wal_bytes_per_msg: %.0f\n", r.e2e.walPerMsg())
	for _, name := range cpuCounted {
		fmt.Fprintf(&b, "cpu_us_per_msg_%s: %.0f\n", name, r.e2e.perMsg(r.e2e.cpu[name]))
	}
	fmt.Fprintf(&b, "latency_p50_ms: %d\n", r.def.p50.Milliseconds())
	fmt.Fprintf(&b, "latency_p99_ms: %d\n", r.def.p99.Milliseconds())
	fmt.Fprintf(&b, "latency_default_p50_ms: %d\n", r.def.p50.Milliseconds())
	fmt.Fprintf(&b, "latency_default_p99_ms: %d\n", r.def.p99.Milliseconds())
	fmt.Fprintf(&b, "latency_2k_p99_ms: %d\n", msKey(r.k2.p99))
	fmt.Fprintf(&b, "latency_2k_written_per_s: %.0f\n", r.k2.written)
	fmt.Fprintf(&b, "latency_2k_backlog_growth: %.0f\n", r.k2.growth())
	fmt.Fprintf(&b, "commits_per_s_2k: %.0f\n", r.k2.commitsPerS)
	if r.m1.backlog > 0 {
		fmt.Fprintf(&b, "e2e_1m_msgs_per_s: %.0f\n", r.m1.rate)
	} else {
		b.WriteString("e2e_1m_msgs_per_s: not run (MSGX_BENCH_1M=1)\n")
	}
	for _, name := range stack.Binaries {
		fmt.Fprintf(&b, "rss_%s_mb: %.1f\n", name, float64(r.rss[name])/(1<<20))
	}
	fmt.Fprintf(&b, "rss_max_mb: %.1f\n", r.rssMaxMB())
	for _, kv := range r.ab {
		fmt.Fprintf(&b, "%s: %s\n", kv[0], kv[1])
	}
	b.WriteString("```\n")
	return b.String()
}

// abSection is the A/B paragraph of a section: this tree against the base commit, drained in
// interleaved pairs on this machine just before the run (make bench; scripts/bench-ab.sh).
func (r benchResult) abSection() string {
	if r.ab == nil {
		return ""
	}
	v := map[string]string{}
	for _, kv := range r.ab {
		v[kv[0]] = kv[1]
	}
	ratio := func(k string) float64 { f, _ := strconv.ParseFloat(v[k], 64); return f }
	return fmt.Sprintf("A/B in the same session, before the run above (`make bench-ab`: %s interleaved pairs of fresh-stack "+
		"drains of the same backlog, medians): this tree (%s) %s msgs/s at %s µs CPU per message, the base %s %s msgs/s at %s µs: "+
		"throughput **%.2f×** the base (target ≥ %.1f×: %s), CPU per message **%.2f×** (target ≤ %.1f×: %s).\n\n",
		v["ab_pairs"], v["ab_tree"], v["ab_tree_msgs"], v["ab_tree_cpu_us"], v["ab_base"], v["ab_base_msgs"], v["ab_base_cpu_us"],
		ratio("ab_e2e_ratio"), targetABRate, strings.TrimSpace(target(ratio("ab_e2e_ratio") >= targetABRate, "")),
		ratio("ab_cpu_ratio"), targetABCPU, strings.TrimSpace(target(ratio("ab_cpu_ratio") <= targetABCPU, "")))
}

// readAB reads the A/B figures file (MSGX_BENCH_AB), key: value lines.
func readAB(b *testing.B) [][2]string {
	file := os.Getenv("MSGX_BENCH_AB")
	if file == "" {
		return nil
	}
	data, err := os.ReadFile(file)
	require.NoError(b, err, "MSGX_BENCH_AB")
	var out [][2]string
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		k, val, ok := strings.Cut(l, ": ")
		require.True(b, ok, "MSGX_BENCH_AB line %q", l)
		out = append(out, [2]string{k, val})
	}
	return out
}

// cpuParts lists the CPU per message of each counted process.
func (r benchResult) cpuParts() string {
	var parts []string
	for _, name := range cpuCounted {
		parts = append(parts, fmt.Sprintf("%s %.0f", name, r.e2e.perMsg(r.e2e.cpu[name])))
	}
	return strings.Join(parts, ", ")
}

// what describes a paced run.
func (l latencyRun) what() string {
	return fmt.Sprintf("%d msgs/s for %s (written at %.0f/s; %d of %d arrived)", l.rate, l.dur, l.written, l.arrived, l.msgs)
}

// figures are a paced run's percentiles.
func (l latencyRun) figures() string {
	out := fmt.Sprintf("p50 %s, p90 %s, p99 %s, max %s", msText(l.p50), msText(l.p90), msText(l.p99), msText(l.pmax))
	out += fmt.Sprintf("; commit → enqueued p50 %d ms, p99 %d ms; enqueued → on Kafka p50 %d ms, p99 %d ms",
		l.wait[0].Milliseconds(), l.wait[1].Milliseconds(), l.deliver[0].Milliseconds(), l.deliver[1].Milliseconds())
	if !l.complete {
		out += fmt.Sprintf(" (not drained %s after the last write: %d of %d arrived)", benchLatencyDrain, l.arrived, l.msgs)
	}
	return out
}

// msText is a latency in ms, or that it was not reached.
func msText(d time.Duration) string {
	if d == notArrived {
		return "not reached"
	}
	return fmt.Sprintf("%d ms", d.Milliseconds())
}

// msKey is a latency for the key: value block (-1: not reached).
func msKey(d time.Duration) int64 {
	if d == notArrived {
		return -1
	}
	return d.Milliseconds()
}

// writeRun writes section, a run whose first line is "## YYYY-MM-DD HH:MM UTC…", as a file of
// its own in dir (docs/runs/benchmarks), named YYYY-MM-DD-HHMM.md, its heading the run's title.
func writeRun(dir, section string) (string, error) {
	title, body, _ := strings.Cut(section, "\n")
	m := regexp.MustCompile(`^## (\d{4}-\d{2}-\d{2}) (\d{2}):(\d{2}) UTC`).FindStringSubmatch(title)
	if m == nil {
		return "", fmt.Errorf("a run's section starts with its date, got %q", title)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(dir, m[1]+"-"+m[2]+m[3]+".md")
	text := "# Benchmark run: " + strings.TrimPrefix(title, "## ") + "\n" + strings.ReplaceAll(body, "\n### ", "\n## ")
	return path, os.WriteFile(path, []byte(text), 0o644)
}

// startPerf starts a system-wide perf profile (call graphs) written to out, when out is set; the
// function it returns stops it and waits for the file.
func startPerf(b *testing.B, out string) func() {
	if out == "" {
		return func() {}
	}
	cmd := exec.Command("perf", "record", "-F", "499", "-a", "-g", "-o", out)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	require.NoError(b, cmd.Start(), "perf record (MSGX_BENCH_PERF)")
	return func() {
		require.NoError(b, cmd.Process.Signal(os.Interrupt))
		_ = cmd.Wait()
	}
}

// saveProfile writes the pprof profile path (heap; profile?seconds=n: CPU) of the binary serving
// addr (MSGX_PPROF) to file; failures are printed (a diagnosis aid, not a figure).
func saveProfile(addr, path, file string) {
	resp, err := http.Get("http://" + addr + "/debug/pprof/" + path)
	if err != nil {
		fmt.Println("profile:", err)
		return
	}
	defer resp.Body.Close()
	f, err := os.Create(file)
	if err == nil {
		_, err = io.Copy(f, resp.Body)
		err = errors.Join(err, f.Close())
	}
	if err != nil {
		fmt.Println("profile:", err)
	}
}

// stageReport prints where a paced run's backlog is when the writer stops (messages not yet
// terminal; KAFKA:msg events not yet sent) and the processor's and dispatcher's batch sizes so
// far (their histograms' means): which stage falls behind, and with what batches.
func stageReport(b *testing.B, ctx context.Context, s *stack.Stack, pool *pgxpool.Pool) {
	var open, unsent int64
	require.NoError(b, pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM proc_state WHERE status IN ('PENDING', 'FAILED')),
		(SELECT count(*) FROM msg_event_delivery WHERE target = 'KAFKA:msg' AND status = 'PENDING')`).Scan(&open, &unsent))
	fmt.Printf("  at the writer's end: %d messages not terminal, %d KAFKA:msg events unsent", open, unsent)
	for _, m := range []struct{ bin, metric string }{
		{"processor", "msgx_pump_batch_messages"}, {"processor", "msgx_pump_tx_seconds"},
		{"dispatcher", "msgx_dispatch_batch_records"}, {"dispatcher", "msgx_dispatch_produce_seconds"},
	} {
		sum, count := histogram(s.Proc(m.bin).Addr, m.metric)
		if count > 0 {
			fmt.Printf("; %s mean %.3g over %.0f", m.metric, sum/count, count)
		}
	}
	fmt.Println()
}

// histogram reads a histogram's _sum and _count (all series added) from a binary's /metrics.
func histogram(addr, name string) (sum, count float64) {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return 0, 0
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(body), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 {
			continue
		}
		v, _ := strconv.ParseFloat(f[1], 64)
		switch {
		case strings.HasPrefix(f[0], name+"_sum"):
			sum += v
		case strings.HasPrefix(f[0], name+"_count"):
			count += v
		}
	}
	return sum, count
}

func TestWriteRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path, err := writeRun(dir, "## 2026-12-06 09:05 UTC\n\nMachine: …\n\n### The A/B\n\ntext\n")
	require.NoError(t, err)
	require.Equal(t, filepath.Join(dir, "2026-12-06-0905.md"), path)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "# Benchmark run: 2026-12-06 09:05 UTC\n\nMachine: …\n\n## The A/B\n\ntext\n", string(b))
	_, err = writeRun(dir, "no date\n")
	require.Error(t, err)
}
