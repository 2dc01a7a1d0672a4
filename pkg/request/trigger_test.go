package request_test

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/request"
)

func (b *bundle) triggers(t *testing.T, mod func(*request.TriggerConfig)) *request.Triggers {
	t.Helper()
	cfg := request.DefaultTriggerConfig()
	cfg.Bootstrap, cfg.SelfHeal, cfg.Location = true, true, shanghai
	if mod != nil {
		mod(&cfg)
	}
	tr, err := request.NewTriggers(b.store, cfg, b.metrics, zerolog.Nop())
	require.NoError(t, err)
	return tr
}

func (b *bundle) count(t *testing.T, sql string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, b.pg.Pool.QueryRow(ctx, sql, args...).Scan(&n))
	return n
}

func TestSelfHealFiresOncePerDayAndScopeUnderABurst(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tr := b.triggers(t, nil)
	d2 := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	d3 := d2.AddDate(0, 0, 1)
	unknown := func(day time.Time) bool {
		var fired bool
		require.NoError(t, pgx.BeginFunc(ctx, b.pg.Pool, func(tx pgx.Tx) error {
			var err error
			fired, err = tr.UnknownFlightTx(ctx, tx, day, b.clock.Now())
			return err
		}))
		return fired
	}
	fired := 0
	for i := range 200 {
		if unknown(d2) {
			fired++
			require.Equal(t, 4, i, "fires at the threshold (5th unknown FLOP)")
		}
		if i%3 == 0 {
			unknown(d3)
		}
		b.clock.Advance(time.Second)
	}
	require.Equal(t, 1, fired, "one request for the day under a burst of unknown-flight FLOPs")
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM req_track WHERE origin = 'self-heal' AND scope = '2026-12-02..2026-12-02'`))
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM req_track WHERE origin = 'self-heal' AND scope = '2026-12-03..2026-12-03'`),
		"another operation day is another scope")
	require.Equal(t, 2, b.count(t, `SELECT count(*) FROM req_track WHERE actor = 'msgx:self-heal' AND reason LIKE '5 FLOPs for unknown flights of 2026-12-0_ within 10m0s'`),
		"the request row audits the trigger: actor and reason")
	require.Equal(t, 2.0, testutil.ToFloat64(b.metrics.Triggers.WithLabelValues("self-heal", request.TriggerFired)))
	require.Positive(t, testutil.ToFloat64(b.metrics.Triggers.WithLabelValues("self-heal", request.TriggerCovered)),
		"while the day's request is open, the day is covered")
	require.Zero(t, testutil.ToFloat64(b.metrics.Triggers.WithLabelValues("self-heal", request.TriggerRateLimited)))

	// Even after the request closed, the same day is not asked again within the cooldown …
	_, err := b.pg.Pool.Exec(ctx, `UPDATE req_track SET status = 'EXPIRED', closed_at = $1, close_reason = 'timeout'`, b.clock.Now())
	require.NoError(t, err)
	_, err = b.pg.Pool.Exec(ctx, `DELETE FROM req_open_day`)
	require.NoError(t, err)
	for range 20 {
		require.False(t, unknown(d2))
	}
	require.Positive(t, testutil.ToFloat64(b.metrics.Triggers.WithLabelValues("self-heal", request.TriggerRateLimited)))
	// … and is after it.
	b.clock.Advance(24 * time.Hour)
	got := false
	for range 5 {
		got = unknown(d2) || got
	}
	require.True(t, got, "the next day the trigger may ask again")
}

func TestSelfHealOffAndShadow(t *testing.T) {
	t.Parallel()
	b := setup(t)
	off := b.triggers(t, func(c *request.TriggerConfig) { c.SelfHeal, c.Bootstrap = false, false })
	shadow := b.triggers(t, func(c *request.TriggerConfig) { c.Shadow = true; c.SelfHealThreshold = 1 })
	day := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	require.NoError(t, pgx.BeginFunc(ctx, b.pg.Pool, func(tx pgx.Tx) error {
		for _, tr := range []*request.Triggers{off, shadow} {
			fired, err := tr.UnknownFlightTx(ctx, tx, day, b.clock.Now())
			require.NoError(t, err)
			require.False(t, fired)
		}
		return nil
	}))
	fired, err := off.Bootstrap(ctx, b.clock.Now())
	require.NoError(t, err)
	require.False(t, fired)
	fired, err = shadow.Bootstrap(ctx, b.clock.Now())
	require.NoError(t, err)
	require.False(t, fired)
	require.Zero(t, b.count(t, `SELECT count(*) FROM req_track`), "nothing is registered when off or in shadow mode")
	require.Equal(t, 2.0, testutil.ToFloat64(b.metrics.Triggers.WithLabelValues("self-heal", request.TriggerShadow))+
		testutil.ToFloat64(b.metrics.Triggers.WithLabelValues("bootstrap", request.TriggerShadow)))
}

func TestBootstrapOnEmptyFlightTable(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tr := b.triggers(t, func(c *request.TriggerConfig) { c.BootstrapDays = 2 })
	fired, err := tr.Bootstrap(ctx, b.clock.Now())
	require.NoError(t, err)
	require.True(t, fired)
	open, err := b.store.ListOpen(ctx)
	require.NoError(t, err)
	require.Len(t, open, 1)
	require.Equal(t, "2026-12-02..2026-12-04", open[0].Scope, "today..+2 in the airport calendar")
	require.Equal(t, request.Bootstrap, open[0].Origin)

	fired, err = tr.Bootstrap(ctx, b.clock.Now().Add(time.Minute))
	require.NoError(t, err)
	require.False(t, fired, "a restart soon after does not ask again (the open request covers the days)")

	_, err = b.pg.Pool.Exec(ctx, `INSERT INTO flight (flid, operation_day, state, state_version, created_at, updated_at)
		VALUES (1, '2026-12-02', 'ACTIVE', 1, $1, $1)`, b.clock.Now())
	require.NoError(t, err)
	fired, err = tr.Bootstrap(ctx, b.clock.Now().Add(48*time.Hour))
	require.NoError(t, err)
	require.False(t, fired, "a flight table with flights is not bootstrapped")
}
