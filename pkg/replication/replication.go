// Package replication holds the mailbox markers back until PostgreSQL's standbys have the
// commits they stand for (INV-8c). The AODB purges the rows it sees marked; a standby promoted
// without a batch's commit would have msgx derive those messages again from the mailbox, whose
// rows may be gone by then. So before the processor's immediate marker and the jobs stage's
// backfill sweep write a marker, Waiter.Await reads the primary's WAL position, which is at or
// past every commit the caller has seen, and waits, bounded, until MSGX_MARKER_STANDBYS standbys
// have replayed it. A wait that runs out writes nothing: the markers stay owed, and the sweep
// tries again at its next run.
package replication

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/msgx/msgx/pkg/clock"
	"github.com/msgx/msgx/pkg/envconf"
	"github.com/msgx/msgx/pkg/obs"
)

// Config is the standby rule of the markers, shared by the two stages that write them.
type Config struct {
	Standbys int           `envconfig:"MSGX_MARKER_STANDBYS" default:"0" desc:"processor and jobs: how many streaming standbys of PostgreSQL must have replayed a commit before the mailbox markers of its messages are written; set it (1 or more) wherever PostgreSQL has standbys, synchronous or not, or a failover can lose messages the AODB purged after their marker (docs/postgres-ha.md); 0: markers wait for no standby"`
	Wait     time.Duration `envconfig:"MSGX_MARKER_STANDBY_WAIT" default:"5s" desc:"processor and jobs: how long a marker write waits for MSGX_MARKER_STANDBYS standbys to replay its commit; when the wait runs out nothing is written and the markers stay owed (the backfill sweep tries again at its next run)"`
}

// maxStandbys bounds MSGX_MARKER_STANDBYS (PostgreSQL's max_wal_senders is 10 by default).
const maxStandbys = 64

// Validate reports every bad value, one line each.
func (c Config) Validate() error {
	var p envconf.Problems
	p.Between("MSGX_MARKER_STANDBYS", int64(c.Standbys), 0, maxStandbys)
	if c.Wait < 10*time.Millisecond || c.Wait > time.Minute {
		p.Add("MSGX_MARKER_STANDBY_WAIT", "must be between 10ms and 1m, got %s", c.Wait)
	}
	return p.Err()
}

// ErrBehind is a wait that ran out before enough standbys had replayed the position.
var ErrBehind = errors.New("the standbys have not replayed the commit")

// Querier reads one row: a pool, a connection or a transaction.
type Querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// The polls of a wait: at once, then after 1 ms, doubling up to 20 ms.
const (
	firstPause = time.Millisecond
	maxPause   = 20 * time.Millisecond
)

// Waiter applies the rule. A nil Waiter, or one whose rule asks for no standby, never waits.
// It is safe for concurrent use.
type Waiter struct {
	cfg     Config
	clock   clock.Clock
	metrics *Metrics

	mu      sync.Mutex
	behind  obs.Repeats // the warning of a wait that ran out, while the standbys stay behind
	checked atomic.Bool // Check has read the server once
}

// NewWaiter returns the rule's waiter, timed on clk, counted in m (nil: not counted).
func NewWaiter(cfg Config, clk clock.Clock, m *Metrics) *Waiter {
	if m == nil {
		m = NewMetrics(nil)
	}
	return &Waiter{cfg: cfg, clock: clk, metrics: m, behind: obs.Repeats{Every: obs.RepeatEvery}}
}

// Await waits until the rule's standbys have replayed every commit the caller has seen through
// q before this call: it reads the WAL position through q, then polls the standbys' replay
// positions through q, backing off on the clock, for at most the rule's Wait. It returns nil at
// once when the rule asks for no standby; else nil once enough standbys replayed the position,
// ErrBehind (wrapped, with how many did) when the wait ran out, or the error of a read. On an
// error the caller writes no marker: markers, how many it holds back, are counted, and log gets
// a warning (at most one per obs.RepeatEvery while the standbys stay behind).
func (w *Waiter) Await(ctx context.Context, q Querier, markers int, log zerolog.Logger) error {
	if w == nil || w.cfg.Standbys == 0 {
		return nil
	}
	start := w.clock.Now()
	err := w.await(ctx, q, start)
	w.metrics.wait.Observe(w.clock.Now().Sub(start).Seconds())
	w.mu.Lock()
	defer w.mu.Unlock()
	if err == nil {
		w.behind.Reset()
		return nil
	}
	w.metrics.held.Add(float64(markers))
	if n, due := w.behind.Due(w.clock.Now()); due {
		log.Warn().Err(err).Int("standbys", w.cfg.Standbys).Int("markers", markers).Int("tries", n).
			Msg("markers held back: the standbys have not replayed their commit (MSGX_MARKER_STANDBYS); they stay owed to the backfill sweep")
	}
	return err
}

// Bound is the longest an Await waits on the clock (0 for a nil Waiter).
func (w *Waiter) Bound() time.Duration {
	if w == nil {
		return 0
	}
	return w.cfg.Wait
}

// await reads the position and polls until enough standbys replayed it or start+Wait passed.
func (w *Waiter) await(ctx context.Context, q Querier, start time.Time) error {
	var pos int64
	if err := q.QueryRow(ctx, positionSQL).Scan(&pos); err != nil {
		return fmt.Errorf("read the WAL position: %w", err)
	}
	deadline := start.Add(w.cfg.Wait)
	pause := firstPause
	for {
		var replayed int
		if err := q.QueryRow(ctx, replayedSQL, pos).Scan(&replayed); err != nil {
			return fmt.Errorf("read the standbys' replay positions: %w", err)
		}
		if replayed >= w.cfg.Standbys {
			return nil
		}
		now := w.clock.Now()
		if !now.Before(deadline) {
			return fmt.Errorf("%w: %d of %d standbys within %s", ErrBehind, replayed, w.cfg.Standbys, w.cfg.Wait)
		}
		if !clock.Sleep(ctx, w.clock, min(pause, deadline.Sub(now))) {
			return ctx.Err()
		}
		pause = min(2*pause, maxPause)
	}
}

// Check reads, once per process, what the rule misses on this server, and logs it: standbys
// connected while the rule waits for none (a failover to one that lacks the last commits can
// lose messages the AODB purged), fewer standbys than the rule waits for (markers stay owed
// until they connect and catch up), or WAL senders this role cannot read (it lacks
// pg_read_all_stats: no marker is written while the rule asks for a standby). A failed read is
// logged and tried again at the next call.
func (w *Waiter) Check(ctx context.Context, q Querier, log zerolog.Logger) {
	if w == nil || w.checked.Load() {
		return
	}
	var hidden, standbys int
	if err := q.QueryRow(ctx, sendersSQL).Scan(&hidden, &standbys); err != nil {
		log.Warn().Err(err).Msg("markers: read the standbys of PostgreSQL; checked again at the next start")
		return
	}
	w.checked.Store(true)
	ev, msg := w.verdict(log, hidden, standbys)
	ev.Int("standbys_connected", standbys).Int("senders_unreadable", hidden).Int("standbys_required", w.cfg.Standbys).
		Dur("wait", w.cfg.Wait).Msg(msg)
}

// verdict is Check's line for what it read: its level and its message.
func (w *Waiter) verdict(log zerolog.Logger, hidden, standbys int) (*zerolog.Event, string) {
	switch {
	case hidden > 0 && w.cfg.Standbys > 0:
		return log.Error(), "markers: this role cannot read the standbys' replay positions, so no marker is written (grant pg_read_all_stats: msgxctl roles apply)"
	case hidden > 0:
		return log.Warn(), "markers: this role cannot read the WAL senders, so it cannot tell whether PostgreSQL has standbys (grant pg_read_all_stats: msgxctl roles apply)"
	case w.cfg.Standbys == 0 && standbys > 0:
		return log.Warn(), "markers: PostgreSQL has standbys but MSGX_MARKER_STANDBYS is 0: a failover to a standby without the last commits can lose messages the AODB purged after their marker (docs/postgres-ha.md)"
	case w.cfg.Standbys == 0:
		return log.Debug(), "markers: written without waiting for standbys (MSGX_MARKER_STANDBYS 0, none connected)"
	case standbys < w.cfg.Standbys:
		return log.Warn(), "markers: fewer standbys connected than MSGX_MARKER_STANDBYS: markers stay owed until enough have replayed their commit"
	}
	return log.Info(), "markers: written once the standbys have replayed their commit"
}

// Metrics are the rule's instruments, in the process of the stage that writes markers.
type Metrics struct {
	wait prometheus.Histogram
	held prometheus.Counter
}

// NewMetrics registers the rule's metrics on reg (nil: not registered, for tests).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		wait: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "msgx_marker_standby_wait_seconds",
			Help: "Time a marker write waited for MSGX_MARKER_STANDBYS standbys to replay its commit (until they had, or the wait ran out); none observed when the setting is 0.",
			// From a synchronous standby's replay (a millisecond) to MSGX_MARKER_STANDBY_WAIT's cap.
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 18),
		}),
		held: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "msgx_markers_held_for_standbys_total",
			Help: "Markers not written because fewer than MSGX_MARKER_STANDBYS standbys had replayed their commit within MSGX_MARKER_STANDBY_WAIT (or their positions could not be read); they stay owed to the backfill sweep.",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.wait, m.held)
	}
	return m
}
