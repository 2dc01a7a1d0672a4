package jobs

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/msgx/msgx/pkg/clock"
	"github.com/msgx/msgx/pkg/leader"
	"github.com/msgx/msgx/pkg/mailbox"
)

// Job names (the {task} label of the metrics and the job_state rows).
const (
	Backfill  = "backfill"
	History   = "history"
	Retention = "retention"
)

// Marker writes mailbox processed markers and reports each row's outcome (pkg/mailbox).
type Marker interface {
	MarkEach(ctx context.Context, ids []int64, at time.Time, status string) (map[int64]mailbox.MarkOutcome, error)
}

var _ Marker = (*mailbox.Mailbox)(nil)

// Result is what one run of a job did.
type Result struct {
	Selected int  // rows (flights for the history sweep) the run looked at
	Done     int  // rows it settled, purged, archived or deleted
	More     bool // the run stopped at its bound with work left
}

// Jobs runs the jobs stage.
type Jobs struct {
	cfg     Config
	pool    *pgxpool.Pool
	marker  Marker
	clock   clock.Clock
	log     zerolog.Logger
	metrics *Metrics

	// Scheduler state, in the injected clock's time. historyRetry holds a failed history sweep
	// back for a RetentionInterval.
	nextBackfill, nextRetention, historyRetry time.Time

	// requests is the request sweep (requests.go), nil when not configured.
	requests      RequestSweeper
	requestsEvery time.Duration
	nextRequests  time.Time
}

// New returns the jobs stage. marker may be nil only in shadow mode.
func New(cfg Config, pool *pgxpool.Pool, marker Marker, clk clock.Clock, metrics *Metrics, log zerolog.Logger) (*Jobs, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if marker == nil && !cfg.Shadow {
		return nil, errors.New("jobs: a mailbox marker is required unless in shadow mode")
	}
	if metrics == nil {
		metrics = NewMetrics(nil, clk)
	}
	j := &Jobs{cfg: cfg, pool: pool, marker: marker, clock: clk, log: log, metrics: metrics}
	return j, nil
}

// Run schedules the jobs until ctx ends, one at a time: the backfill sweep every
// BackfillInterval, retention every RetentionInterval, the history sweep once a day after
// HistorySweepAt airport time (and when msgxctl asked for it). A job's failure is logged and
// counted; the job runs again at its next turn. It returns leader.ErrFenced when a newer leader
// took over.
func (j *Jobs) Run(ctx context.Context, lease leader.Lease) error {
	j.log.Info().Dur("backfill_every", j.cfg.BackfillInterval).Dur("retention_every", j.cfg.RetentionInterval).
		Stringer("history_at", j.cfg.HistorySweepAt).Bool("shadow", j.cfg.Shadow).
		Bool("history_enabled", j.cfg.HistoryEnabled).Msg("jobs: scheduling")
	if !j.cfg.Shadow {
		j.cfg.Standbys.Check(ctx, j.pool, j.log)
	}
	t := time.NewTicker(j.cfg.Tick)
	defer t.Stop()
	for {
		lease.Tick("scheduler")
		if err := j.tick(ctx, lease); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// tick runs every job that is due now. Only ErrFenced (or the end of ctx) is returned.
func (j *Jobs) tick(ctx context.Context, lease leader.Lease) error {
	now := j.clock.Now()
	if !now.Before(j.nextBackfill) {
		if err := j.scheduled(ctx, lease, Backfill, nil, false); err != nil {
			return err
		}
		j.nextBackfill = now.Add(j.cfg.BackfillInterval)
	}
	day, requested, err := j.historyState(ctx)
	if err != nil {
		j.log.Warn().Err(err).Msg("jobs: read history schedule")
	} else if due, today := j.historyDue(now, day); (due || requested) && !now.Before(j.historyRetry) {
		var doneDay *time.Time
		if due {
			doneDay = &today
		}
		if err := j.scheduled(ctx, lease, History, doneDay, requested); err != nil {
			return err
		}
	}
	if !now.Before(j.nextRetention) {
		if err := j.scheduled(ctx, lease, Retention, nil, false); err != nil {
			return err
		}
		j.nextRetention = now.Add(j.cfg.RetentionInterval)
	}
	j.requestsTick(ctx, now)
	return nil
}

// historyDue reports whether the daily sweep is due at now, and the airport day it is for: the
// airport clock passed HistorySweepAt and that day's sweep has not completed.
func (j *Jobs) historyDue(now time.Time, doneDay *time.Time) (bool, time.Time) {
	today := clock.WallDay(now, j.cfg.Location)
	since := clock.WallClock(now, j.cfg.Location).Sub(today)
	if since < time.Duration(j.cfg.HistorySweepAt) {
		return false, today
	}
	return doneDay == nil || doneDay.Before(today), today
}

func (j *Jobs) historyState(ctx context.Context) (*time.Time, bool, error) {
	var day *time.Time
	var requested bool
	if err := j.pool.QueryRow(ctx, jobStateSQL, History).Scan(&day, &requested); err != nil {
		return nil, false, fmt.Errorf("read job state: %w", err)
	}
	return day, requested, nil
}

// scheduled runs one bounded pass of job and records it. For the history sweep, doneDay (the
// daily sweep) and request (an on-demand sweep) are settled once a pass finds no more work.
func (j *Jobs) scheduled(ctx context.Context, lease leader.Lease, job string, doneDay *time.Time, request bool) error {
	started := j.clock.Now()
	if _, err := j.pool.Exec(ctx, jobStartedSQL, job, started); err != nil && ctx.Err() == nil {
		j.log.Warn().Err(err).Str("job", job).Msg("jobs: record start")
	}
	res, err := j.RunOnce(ctx, job, lease)
	if errors.Is(err, leader.ErrFenced) || ctx.Err() != nil {
		return err
	}
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	complete := err == nil && !res.More
	if err != nil && job == History {
		j.historyRetry = started.Add(j.cfg.RetentionInterval)
	}
	if !complete {
		doneDay, request = nil, false
	}
	rerr := pgx.BeginFunc(ctx, j.pool, func(tx pgx.Tx) error {
		if err := lease.Check(ctx, tx); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, jobFinishedSQL, job, j.clock.Now(), res.Selected, msg, doneDay, request)
		return err
	})
	if errors.Is(rerr, leader.ErrFenced) {
		return rerr
	}
	if rerr != nil && ctx.Err() == nil {
		j.log.Warn().Err(rerr).Str("job", job).Msg("jobs: record run")
	}
	if job == History && complete && (doneDay != nil || request) {
		j.log.Info().Bool("on_demand", request).Msg("jobs: history sweep complete")
	}
	return nil
}

// RunOnce runs one bounded pass of job now, whatever its schedule (tests, and the scheduler).
// It counts the tick, the failure and the heartbeat; errors are returned, not retried.
func (j *Jobs) RunOnce(ctx context.Context, job string, lease leader.Lease) (Result, error) {
	var res Result
	var err error
	now := j.clock.Now()
	start := time.Now()
	switch job {
	case Backfill:
		res, err = j.backfill(ctx, lease, now)
	case History:
		res, err = j.history(ctx, lease, now)
	case Retention:
		res, err = j.retention(ctx, lease, now)
	default:
		return Result{}, fmt.Errorf("jobs: unknown job %q", job)
	}
	j.metrics.ticks.WithLabelValues(job).Inc()
	j.metrics.selected.WithLabelValues(job).Set(float64(res.Selected))
	log := j.log.With().Str("job", job).Int("selected", res.Selected).Int("done", res.Done).
		Bool("more", res.More).Dur("took", time.Since(start)).Logger()
	if err != nil {
		j.metrics.failures.WithLabelValues(job).Inc()
		if !errors.Is(err, leader.ErrFenced) && ctx.Err() == nil {
			log.Error().Err(err).Msg("jobs: run failed; retried at its next turn")
		}
		return res, err
	}
	j.metrics.beat(job, j.clock.Now())
	if res.Selected > 0 {
		log.Info().Msg("jobs: run")
	} else {
		log.Debug().Msg("jobs: run")
	}
	return res, nil
}

// loop runs step (one transaction of at most one batch) until it reports fewer rows than the
// batch, RunTxs transactions ran, or the run's budget is spent. It returns the rows done and
// whether work is left.
func (j *Jobs) loop(ctx context.Context, deadline time.Time, batch int, step func() (int, error)) (int, bool, error) {
	total := 0
	for range j.cfg.RunTxs {
		n, err := step()
		total += n
		if err != nil {
			return total, true, err
		}
		if n < batch {
			return total, false, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return total, true, ctx.Err()
		}
	}
	return total, true, nil
}

// Request asks the jobs leader for an on-demand run of job (msgxctl history sweep): it runs at
// the leader's next tick, whatever the schedule. by names who asked.
func Request(ctx context.Context, pool *pgxpool.Pool, job, by string, now time.Time) error {
	if job != History {
		return fmt.Errorf("jobs: only the %s job runs on demand", History)
	}
	if _, err := pool.Exec(ctx, requestSQL, job, now, by); err != nil {
		return fmt.Errorf("request %s run: %w", job, err)
	}
	return nil
}

// RunState is the recorded state of a job (job_state).
type RunState struct {
	Pending      bool       `json:"request_pending"`
	LastFinished *time.Time `json:"last_finished_at,omitempty"`
	LastSelected int64      `json:"last_selected"`
	LastError    string     `json:"last_error,omitempty"`
}

// State reads job's recorded state.
func State(ctx context.Context, pool *pgxpool.Pool, job string) (RunState, error) {
	var s RunState
	err := pool.QueryRow(ctx, requestPendingSQL, job).Scan(&s.Pending, &s.LastFinished, &s.LastSelected, &s.LastError)
	if err != nil {
		return s, fmt.Errorf("read %s state: %w", job, err)
	}
	return s, nil
}

// Metrics are the jobs' Prometheus instruments (names kept from the system msgx replaces, CLM-9).
type Metrics struct {
	clock     clock.Clock
	mu        sync.Mutex
	heartbeat map[string]time.Time

	ticks          *prometheus.CounterVec
	failures       *prometheus.CounterVec
	selected       *prometheus.GaugeVec
	oldestUnmarked prometheus.Gauge
	abandoned      prometheus.Gauge
	abandonedTotal *prometheus.CounterVec
	purged         *prometheus.CounterVec
}

// NewMetrics registers the jobs' metrics on reg (nil: not registered, for tests). Heartbeat
// ages are computed from clk at scrape time; they count from New until a job's first run.
func NewMetrics(reg prometheus.Registerer, clk clock.Clock) *Metrics {
	now := clk.Now()
	m := &Metrics{
		clock:     clk,
		heartbeat: map[string]time.Time{Backfill: now, History: now, Retention: now},
		ticks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "msgx_pipeline_job_ticks_total", Help: "Runs of each job.",
		}, []string{"task"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "msgx_pipeline_job_failures_total", Help: "Runs of each job that ended with an error.",
		}, []string{"task"}),
		selected: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "msgx_pipeline_job_last_sweep_selected", Help: "Rows (flights for history) the job's last run selected.",
		}, []string{"task"}),
		oldestUnmarked: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "msgx_pipeline_backfill_oldest_unmarked_seconds", Help: "Age since finished_at of the oldest terminal row whose mailbox marker is still owed (abandoned rows excluded); 0 when none.",
		}),
		abandoned: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "msgx_pipeline_backfill_abandoned_markers", Help: "Markers abandoned (MISSING_ROW, OVERDUE) and not yet reconciled, in proc_state and proc_state_hst.",
		}),
		abandonedTotal: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "msgx_pipeline_backfill_abandoned_total", Help: "Markers abandoned by the backfill sweep, by outcome (MISSING_ROW alerts at once).",
		}, []string{"outcome"}),
		purged: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "msgx_pipeline_job_rows_total", Help: "Rows each job settled, purged, archived or deleted, by job (label task; Prometheus owns the label job) and step.",
		}, []string{"task", "step"}),
	}
	if reg != nil {
		reg.MustRegister(m.ticks, m.failures, m.selected, m.oldestUnmarked, m.abandoned, m.abandonedTotal, m.purged)
		// Every series exists from the start (at 0), so alerts on increases see the first event.
		for _, job := range []string{Backfill, History, Retention} {
			m.ticks.WithLabelValues(job)
			m.failures.WithLabelValues(job)
		}
		for _, outcome := range []string{OutcomeMissingRow, OutcomeOverdue} {
			m.abandonedTotal.WithLabelValues(outcome)
		}
		for _, job := range []string{Backfill, History, Retention} {
			reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
				Name: "msgx_pipeline_job_heartbeat_age_seconds", Help: "Seconds since the job's last successful run.",
				ConstLabels: prometheus.Labels{"task": job},
			}, func() float64 { return m.HeartbeatAge(job).Seconds() }))
		}
	}
	return m
}

func (m *Metrics) beat(job string, at time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.heartbeat[job] = at
}

// HeartbeatAge is the time since job's last successful run.
func (m *Metrics) HeartbeatAge(job string) time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.clock.Now().Sub(m.heartbeat[job])
}
