package chaos

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/rs/zerolog"

	"github.com/msgx/msgx/pkg/daemon"
	"github.com/msgx/msgx/pkg/dev/privdb"
	"github.com/msgx/msgx/pkg/dev/stack"
	"github.com/msgx/msgx/pkg/roles"
)

// PGStandby runs a scenario on its own private primary with a streaming standby (pg_basebackup),
// every binary on a multi-host URL with target_session_attrs=read-write (Run.Standby is the standby).
type PGStandby struct {
	Sync bool // synchronous_standby_names = '*': commits wait for the standby
}

// haPair is a PGStandby scenario's primary and standby, and the standby made of the promoted
// server after a failover (rebuildStandby).
type haPair struct {
	primary, standby *privdb.Postgres
	rebuilt          *privdb.Postgres
	sync             bool
}

// withStandbyPair starts the scenario's own primary when it asks for one (else srv as it is).
func withStandbyPair(srv *Servers, sc Scenario) (*Servers, *haPair, error) {
	if sc.PGStandby == nil {
		return srv, nil, nil
	}
	pg, err := privdb.StartPostgresWith(srv.shape.pgOptions())
	if err != nil {
		return nil, nil, fmt.Errorf("start the primary: %w", err)
	}
	return &Servers{PG: pg, MySQL: srv.MySQL, shape: srv.shape}, &haPair{primary: pg, sync: sc.PGStandby.Sync}, nil
}

// startStandby copies the prepared primary (its roles included) to a standby, waits until it
// streams (and is synchronous when asked), and returns pgURL and every role's URL naming both
// servers.
func (h *haPair) startStandby(ctx context.Context, pgURL string, a stack.Access) (string, stack.Access, error) {
	s, err := h.primary.StartStandby()
	if err != nil {
		return "", a, fmt.Errorf("start the standby: %w", err)
	}
	h.standby = s
	if err := h.primary.WaitStreaming(ctx, false); err != nil {
		return "", a, err
	}
	if h.sync {
		if err := h.primary.SetSynchronous(ctx, "*"); err != nil {
			return "", a, err
		}
		if err := h.primary.WaitStreaming(ctx, true); err != nil {
			return "", a, err
		}
	}
	if pgURL, err = h.bothHosts(pgURL); err != nil {
		return "", a, err
	}
	both := stack.Access{Prefix: a.Prefix, PG: map[roles.Role]string{}, MySQL: a.MySQL}
	for r, u := range a.PG {
		if both.PG[r], err = h.bothHosts(u); err != nil {
			return "", a, err
		}
	}
	return pgURL, both, nil
}

// bothHosts is pgURL on the primary and the standby, for the server that takes writes.
func (h *haPair) bothHosts(pgURL string) (string, error) {
	u, err := url.Parse(pgURL)
	if err != nil {
		return "", err
	}
	u.Host = fmt.Sprintf("127.0.0.1:%d,127.0.0.1:%d", h.primary.Port, h.standby.Port)
	q := u.Query()
	q.Set("target_session_attrs", "read-write")
	u.RawQuery = q.Encode()
	return u.String(), nil
}

func (h *haPair) close() error {
	var err error
	if h.rebuilt != nil {
		err = h.rebuilt.Close()
	}
	if h.standby != nil {
		err = errors.Join(err, h.standby.Close())
	}
	return errors.Join(err, h.primary.Close())
}

// rebuildStandby makes a streaming standby of the promoted server, as an HA manager does after
// a failover (Patroni, CloudNativePG), and waits until it streams: the markers wait for one
// (MSGX_MARKER_STANDBYS), so none is written from the promotion until then.
func (r *Run) rebuildStandby(ctx context.Context) error {
	at := time.Now()
	s, err := r.Standby.StartStandby()
	if err != nil {
		return fmt.Errorf("make a standby of the promoted server: %w", err)
	}
	r.ha.rebuilt = s
	if err := r.Standby.WaitStreaming(ctx, false); err != nil {
		return err
	}
	r.Observe("a new standby of the promoted server streams %s later", time.Since(at).Round(100*time.Millisecond))
	return nil
}

// harnessPool is the harness's own pool on pgURL, guarded as the binaries' pools are (it leaves
// a read-only server and refuses a stray old primary on a multi-host URL).
func harnessPool(ctx context.Context, pgURL string) (*pgxpool.Pool, error) {
	pc, err := pgxpool.ParseConfig(pgURL)
	if err != nil {
		return nil, err
	}
	guard := daemon.GuardReadOnly(pc, zerolog.Nop())
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, err
	}
	guard.Attach(pool)
	return pool, nil
}

// standbysEnv are the settings of a scenario whose PostgreSQL has a standby: a marker waits
// until the standby has its commit (INV-8c), as production must be configured with standbys.
var standbysEnv = []string{"MSGX_MARKER_STANDBYS=1"}

// pgFailover kills the primary while the day is written and promotes the standby: synchronous,
// or asynchronous with the WAL senders paused 4 s before (a real lag, so a lost tail). A new
// standby of the promoted server is made then, as an HA manager does.
func pgFailover(sync bool) Scenario {
	name, did := "pg-failover-sync", "the primary SIGKILLed while the day is written and its synchronous standby promoted (every binary on a multi-host URL)"
	expected := "every binary works on the promoted server; event ids name one record each; " + allHold
	if !sync {
		name = "pg-failover-lost-tail"
		did = "the primary's WAL senders paused (SIGSTOP) 4 s, the primary SIGKILLed and its asynchronous standby promoted without the last transactions"
		expected = "the lost work is done again from the mailbox; no event id names two records; the state topic never goes back; change versions Kafka holds are not re-sent; the loss is reported (log, metric); " + allHold
	}
	return Scenario{
		Name: name, Did: did, Expected: expected, PGStandby: &PGStandby{Sync: sync}, Env: standbysEnv,
		Fault: func(ctx context.Context, r *Run) error {
			if err := Sleep(ctx, r.Feed/3); err != nil {
				return err
			}
			if !sync {
				if _, err := r.Servers.PG.PauseWALSenders(ctx); err != nil {
					return err
				}
				if err := Sleep(ctx, 4*time.Second); err != nil {
					return err
				}
				gap, err := r.Servers.PG.ReplayedLSNGap(ctx)
				if err != nil {
					return err
				}
				r.Observe("standby %d kB of WAL behind when the primary was killed", gap/1024)
			}
			at := time.Now()
			if err := r.Servers.PG.Kill(); err != nil {
				return err
			}
			if err := r.Standby.Promote(); err != nil {
				return err
			}
			r.Observe("standby promoted %s after the kill", time.Since(at).Round(10*time.Millisecond))
			r.Recovered()
			return r.rebuildStandby(ctx)
		},
		Check: func(ctx context.Context, r *Run) { checkFailover(ctx, r, sync) },
	}
}

// checkFailover checks that the dispatcher saw the new timeline and reported a lost tail
// exactly when the promoted server had lost change records Kafka held.
func checkFailover(ctx context.Context, r *Run, sync bool) {
	var timelines, beyond, held int
	if err := r.Pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM db_timeline), (SELECT count(*) FILTER (WHERE NOT stored) FROM msg_kafka_held), (SELECT count(*) FROM msg_kafka_held)`).
		Scan(&timelines, &beyond, &held); err != nil {
		r.Problem("read the failover records: %v", err)
		return
	}
	if timelines < 2 {
		r.Problem("the dispatcher recorded %d timeline(s), not the promotion's new one", timelines)
	}
	logs, _ := filepath.Glob(filepath.Join(r.LogDir, "dispatcher*.log"))
	reported := false
	for _, f := range logs {
		b, _ := os.ReadFile(f)
		reported = reported || strings.Contains(string(b), "Kafka holds change records this database has no event for")
	}
	switch {
	case sync && beyond > 0:
		r.Problem("a synchronous failover lost %d change records Kafka held", beyond)
	case beyond > 0 && !reported:
		r.Problem("%d change records lost by the database but no log line reports it", beyond)
	}
	r.Observe("%d timelines recorded; %d change records on Kafka unknown as sent to the promoted server, %d of them lost by it (reported: %t)", timelines, held, beyond, reported)
	r.observeMarkerWaits(ctx)
}

// pgStray is the lost-tail failover, then the old primary started again as it was (writable, on
// the old timeline: a stray no HA manager fenced) while the day is still written, then the
// processor and the dispatcher SIGKILLed (fresh processes connect from the multi-host URL, whose
// first host is the stray).
func pgStray() Scenario {
	sc := pgFailover(false)
	sc.Name = "pg-failover-stray"
	sc.Did = "the lost-tail failover, then the old primary started again writable on its old timeline (a stray listed first in the URL), then processor and dispatcher SIGKILLed"
	sc.Expected = "no binary works on the stray (no msgx session on it, nothing written to it); " + sc.Expected
	failover := sc.Fault
	sc.Fault = func(ctx context.Context, r *Run) error {
		if err := failover(ctx, r); err != nil {
			return err
		}
		if err := r.Servers.PG.Start(); err != nil {
			return fmt.Errorf("start the stray: %w", err)
		}
		r.Observe("old primary started again as a stray")
		for _, b := range []string{"processor", "dispatcher"} {
			if err := Sleep(ctx, 2*time.Second); err != nil {
				return err
			}
			if _, err := r.Kill(ctx, b); err != nil {
				return err
			}
		}
		r.Recovered()
		return nil
	}
	check := sc.Check
	sc.Check = func(ctx context.Context, r *Run) {
		check(ctx, r)
		var sessions int
		if err := r.Servers.PG.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE 'msgx-%'`, &sessions); err != nil {
			r.Problem("read the stray's sessions: %v", err)
			return
		}
		if sessions > 0 {
			r.Problem("%d msgx sessions on the stray old primary", sessions)
		}
		r.Observe("%d msgx sessions on the stray at the end", sessions)
	}
	return sc
}

// pgFailoverPurge is the lost-tail failover with an AODB that purges every row it sees marked, at
// once: a marker written for a commit the promoted standby lacks would lose its message for good,
// since msgx derives the lost work again from the mailbox (INV-8c).
func pgFailoverPurge() Scenario {
	sc := pgFailover(false)
	sc.Name = "pg-failover-lost-tail-purge"
	sc.Did = "the lost-tail failover (WAL senders paused 4 s, primary SIGKILLed, asynchronous standby promoted) while an AODB deletes every mailbox row it sees marked, at once"
	sc.Expected = "no message is marked and then lost: every message the simulator wrote has its intended outcome, a purged row counting as marked; " + sc.Expected
	sc.Purge = true
	return sc
}

// markerWaitMetrics are the standby rule's metrics (pkg/replication).
const (
	markerWaitMetric  = "msgx_marker_standby_wait_seconds"
	markersHeldMetric = "msgx_markers_held_for_standbys_total"
)

// observeMarkerWaits reports what the markers' wait for the standbys cost, from the /metrics of
// the processor (immediate markers) and the jobs stage (sweep): waits, their median and 99th
// percentile (the histogram buckets' upper bounds) and the markers held back for the standbys.
func (r *Run) observeMarkerWaits(ctx context.Context) {
	for _, bin := range []string{"processor", "jobs"} {
		p := r.Stack.Proc(bin)
		if p == nil {
			continue
		}
		h, err := scrapeHistogram(ctx, p.Addr, markerWaitMetric, markersHeldMetric)
		if err != nil {
			r.Observe("%s: marker waits not read: %v", bin, err)
			continue
		}
		if h.count == 0 {
			r.Observe("%s: no marker waited for a standby", bin)
			continue
		}
		r.Observe("%s: %.0f marker waits for the standby, median ≤ %s, p99 ≤ %s, mean %s; %.0f markers held back for it",
			bin, h.count, h.quantile(0.5), h.quantile(0.99), h.mean(), h.other)
	}
}

// histogram is one histogram read from /metrics: cumulative bucket counts by upper bound.
type histogram struct {
	bounds []float64 // ascending, +Inf last
	counts []float64
	count  float64
	sum    float64
	other  float64 // the value of the counter read with it
}

// quantile is the upper bound of the bucket the q-quantile falls in.
func (h histogram) quantile(q float64) string {
	for i, c := range h.counts {
		if h.count > 0 && c >= q*h.count {
			if math.IsInf(h.bounds[i], 1) {
				return "+Inf"
			}
			return time.Duration(h.bounds[i] * float64(time.Second)).String()
		}
	}
	return "-"
}

func (h histogram) mean() string {
	if h.count == 0 {
		return "-"
	}
	return time.Duration(h.sum / h.count * float64(time.Second)).Round(10 * time.Microsecond).String()
}

// scrapeHistogram reads histogram name (its first series) and counter other from addr's /metrics.
func scrapeHistogram(ctx context.Context, addr, name, other string) (histogram, error) {
	var h histogram
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return h, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return h, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return h, fmt.Errorf("scrape %s/metrics: %s", addr, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return h, fmt.Errorf("parse %s/metrics: %w", addr, err)
	}
	if f := fams[name]; f != nil && f.GetType() == dto.MetricType_HISTOGRAM {
		hg := f.GetMetric()[0].GetHistogram()
		for _, b := range hg.GetBucket() {
			h.bounds, h.counts = append(h.bounds, b.GetUpperBound()), append(h.counts, float64(b.GetCumulativeCount()))
		}
		h.count, h.sum = float64(hg.GetSampleCount()), hg.GetSampleSum()
	}
	if f := fams[other]; f != nil {
		h.other = f.GetMetric()[0].GetCounter().GetValue()
	}
	return h, nil
}
