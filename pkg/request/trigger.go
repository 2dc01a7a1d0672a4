package request

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/rs/zerolog"
)

// TriggerConfig switches and limits the automatic requests (docs/requests.md). Each trigger is
// off unless enabled; nothing is ever registered in shadow mode.
type TriggerConfig struct {
	// Bootstrap: at start, an empty flight table requests the schedule of today..today+BootstrapDays.
	Bootstrap     bool
	BootstrapDays int
	// SelfHeal: SelfHealThreshold FLOPs for unknown flights of one operation day within
	// SelfHealWindow request that day's schedule.
	SelfHeal          bool
	SelfHealThreshold int
	SelfHealWindow    time.Duration
	// Cooldown: a trigger asks for one scope at most once per Cooldown (the rate limit).
	Cooldown time.Duration
	// MaxPerHour bounds each trigger's requests over all scopes per hour.
	MaxPerHour int
	Shadow     bool
	Location   *time.Location
}

// DefaultTriggerConfig returns the defaults: both triggers off.
func DefaultTriggerConfig() TriggerConfig {
	return TriggerConfig{BootstrapDays: 1, SelfHealThreshold: 5, SelfHealWindow: 10 * time.Minute,
		Cooldown: 24 * time.Hour, MaxPerHour: 6, Location: time.UTC}
}

// Validate reports every bad value.
func (c TriggerConfig) Validate() error {
	var errs []error
	if c.BootstrapDays < 0 || c.BootstrapDays >= MaxDays {
		errs = append(errs, fmt.Errorf("request triggers: BootstrapDays must be 0..%d, got %d", MaxDays-1, c.BootstrapDays))
	}
	if c.SelfHealThreshold < 1 {
		errs = append(errs, fmt.Errorf("request triggers: SelfHealThreshold must be at least 1, got %d", c.SelfHealThreshold))
	}
	if c.SelfHealWindow <= 0 || c.Cooldown <= 0 {
		errs = append(errs, errors.New("request triggers: SelfHealWindow and Cooldown must be positive"))
	}
	if c.MaxPerHour < 1 {
		errs = append(errs, fmt.Errorf("request triggers: MaxPerHour must be at least 1, got %d", c.MaxPerHour))
	}
	if c.Location == nil {
		errs = append(errs, errors.New("request triggers: Location must be set"))
	}
	return errors.Join(errs...)
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
	return &Triggers{store: store, cfg: cfg, metrics: metrics, log: log.With().Str("component", "requests").Logger()}, nil
}

// Bootstrap registers the schedule request of today..today+BootstrapDays (airport calendar)
// when the trigger is on and the flight table is empty. It reports whether it registered one.
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
// day's schedule request (rate-limited). It reports whether it registered one.
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

// fire registers spec unless shadow mode or a rate limit says no. The request row is the audit
// record: origin, actor msgx:<trigger>, the reason and the time.
func (t *Triggers) fire(ctx context.Context, tx pgx.Tx, spec Spec, why string, now time.Time) (bool, error) {
	origin := string(spec.Origin)
	if t.cfg.Shadow {
		t.metrics.Triggers.WithLabelValues(origin, TriggerShadow).Inc()
		return false, nil
	}
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
