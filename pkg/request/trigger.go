package request

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/rs/zerolog"

	"github.com/msgx/msgx/pkg/envconf"
)

// TriggerConfig switches and limits the automatic requests (docs/requests.md). Each trigger is
// off unless enabled; nothing is ever registered in shadow mode.
type TriggerConfig struct {
	Bootstrap         bool           `envconfig:"MSGX_REQUEST_BOOTSTRAP" default:"false" desc:"processor: at start, an empty flight table requests the schedule of today..today+MSGX_REQUEST_BOOTSTRAP_DAYS"`
	BootstrapDays     int            `envconfig:"MSGX_REQUEST_BOOTSTRAP_DAYS" default:"1" desc:"processor: days after today the bootstrap request covers (0..30)"`
	SelfHeal          bool           `envconfig:"MSGX_REQUEST_SELF_HEAL" default:"false" desc:"processor: FLOPs for unknown flights of one operation day beyond the threshold request that day's schedule"`
	SelfHealThreshold int            `envconfig:"MSGX_REQUEST_SELF_HEAL_THRESHOLD" default:"5" desc:"processor: unknown-flight FLOPs of one operation day within the window that trigger self-healing"`
	SelfHealWindow    time.Duration  `envconfig:"MSGX_REQUEST_SELF_HEAL_WINDOW" default:"10m" desc:"processor: window in which the self-healing threshold is counted"`
	Cooldown          time.Duration  `envconfig:"MSGX_REQUEST_TRIGGER_COOLDOWN" default:"24h" desc:"processor: an automatic trigger asks for one scope at most once per cooldown"`
	MaxPerHour        int            `envconfig:"MSGX_REQUEST_TRIGGER_MAX_PER_HOUR" default:"6" desc:"processor: at most this many requests per trigger and hour, all scopes"`
	Shadow            bool           // nothing is registered in shadow mode (set by the binary)
	Location          *time.Location // airport zone (set by the binary)
}

// DefaultTriggerConfig returns the defaults (the tags): both triggers off, UTC.
func DefaultTriggerConfig() TriggerConfig {
	var c TriggerConfig
	envconf.Defaults(&c)
	c.Location = time.UTC
	return c
}

// Validate reports every bad value, one line each.
func (c TriggerConfig) Validate() error {
	var p envconf.Problems
	p.Between("MSGX_REQUEST_BOOTSTRAP_DAYS", int64(c.BootstrapDays), 0, MaxDays-1)
	p.Between("MSGX_REQUEST_SELF_HEAL_THRESHOLD", int64(c.SelfHealThreshold), 1, 1_000_000)
	p.Positive("MSGX_REQUEST_SELF_HEAL_WINDOW", c.SelfHealWindow)
	p.Positive("MSGX_REQUEST_TRIGGER_COOLDOWN", c.Cooldown)
	p.Between("MSGX_REQUEST_TRIGGER_MAX_PER_HOUR", int64(c.MaxPerHour), 1, 3600)
	if c.Location == nil {
		p.Add("MSGX_AIRPORT_TZ", "request triggers: Location must be set")
	}
	return p.Err()
}

// Triggers registers the automatic requests. They are only registered here; the jobs stage
// sends them (Sweeper), so a trigger inside the processor's transaction never waits on MySQL.
type Triggers struct {
	store   *Store
	cfg     TriggerConfig
	metrics *Metrics
	log     zerolog.Logger
}

// NewTriggers returns the triggers.
func NewTriggers(store *Store, cfg TriggerConfig, metrics *Metrics, log zerolog.Logger) (*Triggers, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if metrics == nil {
		metrics = NewMetrics(nil)
	}
	return &Triggers{store: store, cfg: cfg, metrics: metrics, log: log.With().Str("part", "requests").Logger()}, nil
}

// Bootstrap registers the schedule requests of the days of today..today+BootstrapDays (airport
// calendar) no open request holds, when the trigger is on and the flight table is empty. It
// reports whether it registered any.
func (t *Triggers) Bootstrap(ctx context.Context, now time.Time) (bool, error) {
	if !t.cfg.Bootstrap {
		return false, nil
	}
	var fired bool
	err := pgx.BeginFunc(ctx, t.store.pool, func(tx pgx.Tx) error {
		var empty bool
		if err := tx.QueryRow(ctx, flightsEmptySQL).Scan(&empty); err != nil {
			return fmt.Errorf("bootstrap: read flights: %w", err)
		}
		if !empty {
			return nil
		}
		today := Day(now.In(t.cfg.Location))
		spec := Spec{Kind: Schedule, From: today, To: today.AddDate(0, 0, t.cfg.BootstrapDays), Origin: Bootstrap, Actor: "msgx:bootstrap"}
		var err error
		fired, err = t.fire(ctx, tx, spec, "empty flight table at start", now)
		return err
	})
	return fired, err
}

// UnknownFlightTx counts, inside the processor's transaction that SKIPPED it, one FLOP for an
// unknown flight of operation day day; past the threshold within the window it registers that
// day's schedule request unless an open request holds the day (and rate-limited). It reports
// whether it registered one.
func (t *Triggers) UnknownFlightTx(ctx context.Context, tx pgx.Tx, day, now time.Time) (bool, error) {
	if !t.cfg.SelfHeal {
		return false, nil
	}
	day = Day(day)
	var n int
	if err := tx.QueryRow(ctx, tallySQL, day, now, now.Add(-t.cfg.SelfHealWindow)).Scan(&n); err != nil {
		return false, fmt.Errorf("self-heal: count unknown flight: %w", err)
	}
	if n < t.cfg.SelfHealThreshold {
		return false, nil
	}
	spec := Spec{Kind: Schedule, From: day, To: day, Origin: SelfHeal, Actor: "msgx:self-heal"}
	return t.fire(ctx, tx, spec, fmt.Sprintf("%d FLOPs for unknown flights of %s within %s", n, day.Format(time.DateOnly), t.cfg.SelfHealWindow), now)
}

// fire registers the parts of spec no open request covers (Store.Uncovered: each run of days
// no open RQFD owns), unless shadow mode or a rate limit says no. The request row is the audit
// record: origin, actor msgx:<trigger>, the reason and the time. It reports whether it registered
// any.
func (t *Triggers) fire(ctx context.Context, tx pgx.Tx, spec Spec, why string, now time.Time) (bool, error) {
	origin := string(spec.Origin)
	if t.cfg.Shadow {
		t.metrics.Triggers.WithLabelValues(origin, TriggerShadow).Inc()
		return false, nil
	}
	parts, err := t.store.Uncovered(ctx, tx, spec)
	if err != nil {
		return false, fmt.Errorf("%s: %w", origin, err)
	}
	if len(parts) == 0 {
		t.metrics.Triggers.WithLabelValues(origin, TriggerCovered).Inc()
		return false, nil
	}
	fired := false
	for _, part := range parts {
		ok, err := t.fireOne(ctx, tx, part, why, now)
		if err != nil {
			return fired, err
		}
		fired = fired || ok
	}
	return fired, nil
}

// fireOne registers one uncovered part unless a rate limit says no.
func (t *Triggers) fireOne(ctx context.Context, tx pgx.Tx, spec Spec, why string, now time.Time) (bool, error) {
	origin := string(spec.Origin)
	var recent bool
	if err := tx.QueryRow(ctx, recentOriginSQL, spec.Origin, spec.Scope(), now.Add(-t.cfg.Cooldown)).Scan(&recent); err != nil {
		return false, fmt.Errorf("%s: rate limit: %w", origin, err)
	}
	var lastHour int
	if err := tx.QueryRow(ctx, countOriginSinceSQL, spec.Origin, now.Add(-time.Hour)).Scan(&lastHour); err != nil {
		return false, fmt.Errorf("%s: rate limit: %w", origin, err)
	}
	if recent || lastHour >= t.cfg.MaxPerHour {
		t.metrics.Triggers.WithLabelValues(origin, TriggerRateLimited).Inc()
		return false, nil
	}
	spec.Reason = why
	reg, err := t.store.RegisterTx(ctx, tx, spec, now)
	if err != nil {
		return false, err
	}
	t.metrics.Triggers.WithLabelValues(origin, TriggerFired).Inc()
	t.metrics.Outcomes.WithLabelValues(string(spec.Kind), OutcomeRegistered).Inc()
	t.log.Info().Str("trigger", origin).Int64("req_id", reg.Request.ID).Str("scope", reg.Request.Scope).Str("why", why).
		Msg("requests: automatic request registered")
	return true, nil
}
