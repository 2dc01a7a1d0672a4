package ingest

import (
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/msgx/msgx/pkg/clock"
	"github.com/msgx/msgx/pkg/sis"
)

// Metrics are ingest's Prometheus metrics. Create them once per process (they outlive
// leadership terms) and share them between the Ingester and the Compat handler.
type Metrics struct {
	clock clock.Clock

	watermark  prometheus.Gauge
	gapLimit   prometheus.Gauge
	enqueued   *prometheus.CounterVec
	skipped    prometheus.Counter
	passed     *prometheus.CounterVec
	proofReads *prometheus.CounterVec
	late       prometheus.Counter
	unstorable prometheus.Counter
	charsets   *prometheus.CounterVec
	pollErrors *prometheus.CounterVec
	compat     *prometheus.CounterVec
	apiRefused *prometheus.CounterVec

	mu             sync.Mutex
	lastSuccess    time.Time
	blocking       int64
	blockingSince  time.Time
	reprobing      int64
	reprobingSince time.Time
}

// NewMetrics registers ingest's metrics with reg. Ages are computed at scrape time from clk.
func NewMetrics(reg prometheus.Registerer, clk clock.Clock) *Metrics {
	m := &Metrics{
		clock: clk,
		watermark: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "msgx_ingest_watermark", Help: "Watermark W: every mailbox id ≤ W is enqueued or recorded as a skipped gap.",
		}),
		enqueued: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "msgx_ingest_rows_enqueued_total", Help: "proc_state rows inserted by ingest, by source (poll, late, compat).",
		}, []string{"source"}),
		skipped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "msgx_ingest_gap_ids_skipped_total", Help: "Mailbox ids skipped as permanent gaps (recorded in inbox_gap).",
		}),
		passed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "msgx_ingest_gap_ids_passed_total",
			Help: "Mailbox ids skipped as permanent gaps, by how: aged (missing for MSGX_MAX_COMMIT_DELAY) or proved (no open InnoDB transaction could still commit them).",
		}, []string{"by"}),
		proofReads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "msgx_ingest_gap_proof_reads_total",
			Help: "Reads of InnoDB's transaction list while a gap held W, by outcome (proved, blocked, settling, stale, clock, xa, error, unavailable).",
		}, []string{"outcome"}),
		late: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "msgx_ingest_late_rows_total", Help: "Rows found by the re-probe after their id was skipped, enqueued below W.",
		}),
		unstorable: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "msgx_ingest_unstorable_rows_total", Help: "Mailbox rows whose text PostgreSQL cannot hold (NUL byte, invalid UTF-8); enqueued with raw NULL and their bytes in raw_bytes.",
		}),
		charsets: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "msgx_ingest_declared_charset_rows_total",
			Help: "Mailbox rows declaring GB2312, GBK or GB18030, by declared charset and what their bytes were: utf-8 (converted by the MySQL server from the column's charset) or declared (the charset's own bytes, from a binary column; stored as UTF-8).",
		}, []string{"declared", "bytes"}),
		gapLimit: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "msgx_ingest_max_commit_delay_seconds",
			Help: "The age at which this ingest judges a gap in mailbox ids permanent and skips it (MSGX_MAX_COMMIT_DELAY); the gap alert compares with it.",
		}),
		pollErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "msgx_ingest_poll_errors_total", Help: "Failed ingest steps, by the store that failed (mailbox, postgres).",
		}, []string{"store"}),
		compat: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "msgx_ingest_compat_requests_total", Help: "POST /cminmsgs/send requests by HTTP status code.",
		}, []string{"code"}),
		apiRefused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "msgx_ingest_api_refused_total", Help: "API requests refused before their handler (pkg/httpauth), by HTTP status code and reason (no_token, invalid_token, scope, rate, concurrency).",
		}, []string{"code", "reason"}),
	}
	m.initLabels()
	reg.MustRegister(m.watermark, m.gapLimit, m.enqueued, m.skipped, m.passed, m.proofReads, m.late, m.unstorable, m.charsets, m.pollErrors, m.compat, m.apiRefused)

	const (
		openHelp = "Open gaps in mailbox ids: blocking = missing ids holding W now; reprobing = skipped ids still re-probed."
		ageHelp  = "Age in seconds of the oldest open gap: blocking = the gap holding W; reprobing = oldest skipped id still re-probed (0: none)."
	)
	gauge := func(name, help, state string, f func() float64) prometheus.GaugeFunc {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help, ConstLabels: prometheus.Labels{"state": state}}, f)
	}
	reg.MustRegister(
		gauge("msgx_ingest_open_gaps", openHelp, "blocking", func() float64 { return m.read(func() float64 { return float64(m.blocking) }) }),
		gauge("msgx_ingest_open_gaps", openHelp, "reprobing", func() float64 { return m.read(func() float64 { return float64(m.reprobing) }) }),
		gauge("msgx_ingest_oldest_gap_age_seconds", ageHelp, "blocking", func() float64 { return m.age(&m.blockingSince) }),
		gauge("msgx_ingest_oldest_gap_age_seconds", ageHelp, "reprobing", func() float64 { return m.age(&m.reprobingSince) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "msgx_ingest_last_success_poll_age_seconds",
			Help: "Seconds since the last successful ingest poll (-1 before the first one).",
		}, func() float64 {
			m.mu.Lock()
			defer m.mu.Unlock()
			if m.lastSuccess.IsZero() {
				return -1
			}
			return m.clock.Now().Sub(m.lastSuccess).Seconds()
		}),
	)
	return m
}

// initLabels gives every known label value its series at zero, so rates and alerts see them
// before the first event.
func (m *Metrics) initLabels() {
	for _, s := range []string{"poll", "late", "compat"} {
		m.enqueued.WithLabelValues(s)
	}
	for _, by := range []passedBy{passedAged, passedProved} {
		m.passed.WithLabelValues(string(by))
	}
	for _, o := range proofOutcomes {
		m.proofReads.WithLabelValues(string(o))
	}
	for _, s := range []string{"mailbox", "postgres"} {
		m.pollErrors.WithLabelValues(s)
	}
	for _, cs := range []string{"GB2312", "GBK", "GB18030"} {
		for _, form := range []sis.Form{sis.FormConverted, sis.FormDeclared} {
			m.charsets.WithLabelValues(cs, charsetBytes(form))
		}
	}
}

func (m *Metrics) read(f func() float64) float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return f()
}

func (m *Metrics) age(since *time.Time) float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if since.IsZero() {
		return 0
	}
	return max(0, m.clock.Now().Sub(*since).Seconds())
}

// charsetBytes is the bytes label of a Form.
func charsetBytes(f sis.Form) string {
	if f == sis.FormDeclared {
		return "declared"
	}
	return "utf-8"
}

// copied counts the inserted rows of c that declared a Chinese charset.
func (m *Metrics) copied(c copies, inserted []int64) {
	if len(c.chinese) == 0 {
		return
	}
	for _, id := range inserted {
		if t, ok := c.chinese[id]; ok {
			m.charsets.WithLabelValues(t.Declared, charsetBytes(t.Form)).Inc()
		}
	}
}

// polled records a successful poll and the cursor it left.
func (m *Metrics) polled(now time.Time, cur cursor, blocked int64) {
	m.watermark.Set(float64(cur.W))
	m.mu.Lock()
	defer m.mu.Unlock()
	m.lastSuccess = now
	m.blocking = blocked
	m.blockingSince = time.Time{}
	if blocked > 0 {
		m.blockingSince = cur.FirstSeen
	}
}

// ledger records the re-probe ledger's size and oldest entry.
func (m *Metrics) ledger(n int64, oldest time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reprobing, m.reprobingSince = n, oldest
	if n == 0 {
		m.reprobingSince = time.Time{}
	}
}

// APIRefused counts one API request the gate refused (httpauth.Gate.Refused).
func (m *Metrics) APIRefused(code int, reason string) {
	m.apiRefused.WithLabelValues(strconv.Itoa(code), reason).Inc()
}
