package replication_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/msgx/msgx/pkg/clock"
	"github.com/msgx/msgx/pkg/dev/privdb"
	"github.com/msgx/msgx/pkg/dev/testdb"
	"github.com/msgx/msgx/pkg/replication"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

var t0 = time.Date(2026, 12, 2, 8, 0, 0, 0, time.UTC)

// primaryWithStandby starts a private primary with an asynchronous streaming standby for one test
// (the test pauses its WAL senders) and returns the primary and a superuser pool on it.
func primaryWithStandby(t *testing.T) (*privdb.Postgres, *pgxpool.Pool) {
	t.Helper()
	ctx := context.Background()
	primary := testdb.PrimaryWithStandby(t)
	pool, err := pgxpool.New(ctx, primary.AdminURL())
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	_, err = pool.Exec(ctx, `CREATE TABLE work (n int)`)
	require.NoError(t, err)
	return primary, pool
}

// commit commits one row, asynchronously (as the test sessions of testdb do).
func commit(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	_, err := pool.Exec(context.Background(), `SET synchronous_commit = off; INSERT INTO work VALUES (1)`)
	require.NoError(t, err)
}

// metric is the one series of the metric called name in reg.
func metric(t *testing.T, reg *prometheus.Registry, name string) *dto.Metric {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0]
		}
	}
	t.Fatalf("%s not registered", name)
	return nil
}

// held is the count of markers held back for the standbys; waits, how many waits were timed.
func held(t *testing.T, reg *prometheus.Registry) float64 {
	return metric(t, reg, "msgx_markers_held_for_standbys_total").GetCounter().GetValue()
}

func waits(t *testing.T, reg *prometheus.Registry) uint64 {
	return metric(t, reg, "msgx_marker_standby_wait_seconds").GetHistogram().GetSampleCount()
}

// Await returns once the standby replayed a commit made before it; with the WAL senders paused
// it gives up when the wait has run out on the clock (nothing sleeps: the test moves the fake
// clock once the waiter polls), and the markers it held back are counted; resumed, the standby
// replays the commit and Await returns nil again.
func TestAwaitWaitsForTheStandby(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	primary, pool := primaryWithStandby(t)
	reg := prometheus.NewRegistry()
	m := replication.NewMetrics(reg)
	cfg := replication.Config{Standbys: 1, Wait: 5 * time.Second}

	live := replication.NewWaiter(replication.Config{Standbys: 1, Wait: time.Minute}, clock.System{}, m)
	commit(t, pool)
	require.NoError(t, live.Await(ctx, pool, 3, zerolog.Nop()), "the standby streams: it replays the commit")

	resume, err := primary.PauseWALSenders(ctx)
	require.NoError(t, err)
	t.Cleanup(resume)
	commit(t, pool)
	clk := clock.NewFake(t0)
	paused := replication.NewWaiter(cfg, clk, m)
	var logs bytes.Buffer
	done := make(chan error, 1)
	go func() { done <- paused.Await(ctx, pool, 7, zerolog.New(&logs)) }()
	require.Eventually(t, clk.Waiting, 10*time.Second, time.Millisecond, "the waiter polls and waits")
	clk.Advance(cfg.Wait)
	err = <-done
	require.ErrorIs(t, err, replication.ErrBehind)
	require.Contains(t, err.Error(), "0 of 1 standbys")
	require.Equal(t, 7.0, held(t, reg))
	require.Contains(t, logs.String(), "markers held back")

	resume()
	require.NoError(t, live.Await(ctx, pool, 7, zerolog.Nop()), "resumed, the standby replays the commit")
	require.Equal(t, 7.0, held(t, reg))
	require.Equal(t, uint64(3), waits(t, reg), "every wait is timed")
}

// failing is a Querier that must not be used.
type failing struct{ t *testing.T }

func (f failing) QueryRow(context.Context, string, ...any) pgx.Row {
	f.t.Fatal("the rule asks for no standby: nothing is read")
	return nil
}

// With MSGX_MARKER_STANDBYS 0 (or no waiter) Await reads nothing and returns at once.
func TestAwaitWithoutStandbysReadsNothing(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	w := replication.NewWaiter(replication.Config{Standbys: 0, Wait: time.Second}, clock.NewFake(t0), replication.NewMetrics(reg))
	require.NoError(t, w.Await(context.Background(), failing{t}, 5, zerolog.Nop()))
	var none *replication.Waiter
	require.NoError(t, none.Await(context.Background(), failing{t}, 5, zerolog.Nop()))
	require.Zero(t, waits(t, reg), "no wait observed")
}

// A role reads the standbys' replay positions only with pg_read_all_stats: without it Check
// says so and a wait runs out; granted, the wait ends when the standby has replayed. And Check
// warns when standbys stream but the rule waits for none.
func TestTheRoleNeedsPgReadAllStats(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	primary, pool := primaryWithStandby(t)
	role := "t_" + testdb.RandomSuffix()
	_, err := pool.Exec(ctx, `CREATE ROLE `+role+` LOGIN`)
	require.NoError(t, err)
	rolePool, err := pgxpool.New(ctx, primary.URL(role, "", "postgres"))
	require.NoError(t, err)
	t.Cleanup(rolePool.Close)

	var logs bytes.Buffer
	log := zerolog.New(&logs)
	clk := clock.NewFake(t0)
	cfg := replication.Config{Standbys: 1, Wait: time.Second}
	w := replication.NewWaiter(cfg, clk, nil)
	w.Check(ctx, rolePool, log)
	require.Contains(t, logs.String(), "cannot read the standbys' replay positions")
	commit(t, pool)
	done := make(chan error, 1)
	go func() { done <- w.Await(ctx, rolePool, 1, zerolog.Nop()) }()
	require.Eventually(t, clk.Waiting, 10*time.Second, time.Millisecond)
	clk.Advance(cfg.Wait)
	require.ErrorIs(t, <-done, replication.ErrBehind, "a role without pg_read_all_stats sees no standby")

	_, err = pool.Exec(ctx, `GRANT pg_read_all_stats TO `+role)
	require.NoError(t, err)
	granted := replication.NewWaiter(replication.Config{Standbys: 1, Wait: time.Minute}, clock.System{}, nil)
	require.NoError(t, granted.Await(ctx, rolePool, 1, zerolog.Nop()))

	logs.Reset()
	unset := replication.NewWaiter(replication.Config{Standbys: 0, Wait: time.Second}, clk, nil)
	unset.Check(ctx, rolePool, log)
	require.Contains(t, logs.String(), "PostgreSQL has standbys but MSGX_MARKER_STANDBYS is 0")
	logs.Reset()
	unset.Check(ctx, rolePool, log)
	require.Empty(t, logs.String(), "once per process")
}
