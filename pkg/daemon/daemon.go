// Package daemon is the one lifecycle shared by the four binaries: open PostgreSQL, serve
// /healthz /readyz /metrics, campaign for the role's leadership and run the stage loop only while
// leader, and shut down cleanly on SIGTERM.
//
// Liveness: /healthz fails when a stage loop of the leader has not ticked for
// MSGX_LIVENESS_STALL (Liveness). Shutdown on SIGTERM: /readyz answers 503 at once and the stage
// loop stops (the leader lock is released, a standby takes over); the HTTP servers keep serving
// for MSGX_SHUTDOWN_DRAIN, so that Services stop routing to the pod before its listeners close,
// then shut down gracefully within MSGX_SHUTDOWN_TIMEOUT.
package daemon

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"golang.org/x/sync/errgroup"

	"github.com/msgx/msgx/pkg/buildinfo"
	"github.com/msgx/msgx/pkg/clock"
	"github.com/msgx/msgx/pkg/leader"
	"github.com/msgx/msgx/pkg/migrate"
	"github.com/msgx/msgx/pkg/obs"
	"github.com/msgx/msgx/pkg/settings"
)

// Spec is what a binary adds to the shared lifecycle.
type Spec struct {
	Role     settings.Role
	Process  settings.Process
	Leader   leader.Config
	Log      zerolog.Logger
	Registry *prometheus.Registry
	Pool     *pgxpool.Pool
	Checks   []obs.Check // readiness checks besides PostgreSQL
	// API, when set, is a second listener (ingest's authenticated API), served and shut down
	// with the ops listener.
	API  *obs.Server
	Work func(ctx context.Context, lease leader.Lease) error // the stage loop, leader only
	// Started, when set, receives the HTTP server once it listens (tests learn its address).
	Started func(s *obs.Server)
	// Clock times the liveness heartbeat and the shutdown drain (nil: the system clock).
	Clock clock.Clock
}

// OpenPool opens the binary's PostgreSQL pool. Transactions left idle (a paused process) are
// ended by the server, so they cannot hold locks that a new leader waits for.
// The leader's session timeout bounds an idle transaction too. MSGX_PG_URL may name several hosts
// (with target_session_attrs=read-write) or a service; a pool on a server that turns read-only
// reconnects (ReadOnlyGuard).
func OpenPool(ctx context.Context, p settings.Process, lc leader.Config, role settings.Role, log zerolog.Logger) (*pgxpool.Pool, error) {
	pc, err := pgxpool.ParseConfig(p.PGURL)
	if err != nil {
		return nil, fmt.Errorf("parse MSGX_PG_URL: %w", err)
	}
	pc.MaxConns = p.PGMaxConns
	pc.ConnConfig.RuntimeParams["application_name"] = "msgx-" + string(role)
	pc.ConnConfig.RuntimeParams["idle_in_transaction_session_timeout"] = fmt.Sprint(lc.SessionTimeout.Milliseconds())
	guard := GuardReadOnly(pc, log)
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("open PostgreSQL pool: %w", err)
	}
	guard.Attach(pool)
	return pool, nil
}

// OpenAPIPool opens ingest's API pool: small (MSGX_API_PG_MAX_CONNS) and with a statement
// timeout (MSGX_API_STATEMENT_TIMEOUT), so that a flood of API requests waits for its own
// connections and never for those of the poll loop.
func OpenAPIPool(ctx context.Context, p settings.Process, lc leader.Config, maxConns int32, statementTimeout time.Duration, log zerolog.Logger) (*pgxpool.Pool, error) {
	pc, err := pgxpool.ParseConfig(p.PGURL)
	if err != nil {
		return nil, fmt.Errorf("parse MSGX_PG_URL: %w", err)
	}
	pc.MaxConns = maxConns
	pc.ConnConfig.RuntimeParams["application_name"] = "msgx-ingest-api"
	pc.ConnConfig.RuntimeParams["statement_timeout"] = fmt.Sprint(statementTimeout.Milliseconds())
	pc.ConnConfig.RuntimeParams["idle_in_transaction_session_timeout"] = fmt.Sprint(lc.SessionTimeout.Milliseconds())
	guard := GuardReadOnly(pc, log)
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("open the API's PostgreSQL pool: %w", err)
	}
	guard.Attach(pool)
	return pool, nil
}

// Holder names this instance in leader_lease: the pod name in Kubernetes, else host:pid.
func Holder() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s:%d", host, os.Getpid())
}

// Run runs the binary until ctx ends or a fatal error.
func Run(ctx context.Context, spec Spec) error {
	cfg := spec.Process
	leaderGauge := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "msgx_leader", Help: "1 while this instance leads its role, else 0.",
	}, []string{"role"})
	epochGauge := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "msgx_leader_epoch", Help: "Epoch of this instance's current leadership term (0 when standby).",
	}, []string{"role"})
	spec.Registry.MustRegister(leaderGauge, epochGauge)
	if err := obs.RegisterPool(spec.Registry, string(spec.Role), spec.Pool); err != nil {
		return fmt.Errorf("pool metrics: %w", err)
	}
	leaderGauge.WithLabelValues(string(spec.Role)).Set(0)

	lc := spec.Leader
	lc.Role, lc.Holder = string(spec.Role), Holder()
	if lc.Hint == nil {
		lc.Hint = migrate.Hint
	}
	elector, err := leader.New(lc, spec.Pool.Config().ConnConfig, spec.Log)
	if err != nil {
		return err
	}
	elector.OnChange = func(isLeader bool, epoch int64) {
		v := 0.0
		if isLeader {
			v = 1
		}
		leaderGauge.WithLabelValues(string(spec.Role)).Set(v)
		epochGauge.WithLabelValues(string(spec.Role)).Set(float64(epoch))
	}

	clk := spec.Clock
	if clk == nil {
		clk = clock.System{}
	}
	live := NewLiveness(clk, cfg.LivenessStall)
	work := func(ctx context.Context, lease leader.Lease) error {
		live.begin()
		defer live.end()
		lease.Beat, lease.Quit = live.Beat, live.Quit
		return spec.Work(ctx, lease)
	}

	checks := append([]obs.Check{{Name: "postgres", Fn: spec.Pool.Ping}}, spec.Checks...)
	srv := obs.NewServer(cfg.HTTPAddr, spec.Registry, checks, elector.IsLeader, cfg.HTTPReadTimeout, spec.Log)
	srv.SetLiveness(live.Check)
	if cfg.Pprof {
		srv.ServeProfiles()
	}
	if err := srv.Listen(); err != nil {
		return err
	}
	ready := spec.Log.Info().Str("addr", srv.Addr())
	if spec.API != nil {
		if err := spec.API.Listen(); err != nil {
			return fmt.Errorf("api: %w", err)
		}
		ready = ready.Str("api_addr", spec.API.Addr())
	}
	ready.Msg("http: serving /healthz /readyz /metrics")
	if spec.Started != nil {
		spec.Started(srv)
	}

	start := time.Now()
	err = Serve(ctx, cfg, clk, spec.Log, []*obs.Server{srv, spec.API}, func(ctx context.Context) error {
		if err := elector.Run(ctx, work); err != nil {
			return fmt.Errorf("leader: %w", err)
		}
		// The elector ends only when ctx ends; returning an error would hide the real cause.
		return nil
	})
	spec.Log.Info().Float64("uptime_seconds", time.Since(start).Seconds()).Err(err).Msg("stopped")
	return err
}

// Serve runs the listening servers (nil entries skipped) and work (nil: none) until ctx ends or
// one of them fails. A failure stops everything at once. The end of ctx (SIGTERM) is the
// graceful shutdown: the servers' /readyz answer 503 and work's context ends at once; the
// servers keep serving for cfg.ShutdownDrain (timed on clk), then shut down within
// cfg.ShutdownTimeout.
func Serve(ctx context.Context, cfg settings.Process, clk clock.Clock, log zerolog.Logger, servers []*obs.Server, work func(ctx context.Context) error) error {
	g, gctx := errgroup.WithContext(context.WithoutCancel(ctx))
	serveCtx, stopServing := context.WithCancel(gctx)
	defer stopServing()
	workCtx, stopWork := context.WithCancel(gctx)
	defer stopWork()
	g.Go(func() error {
		select {
		case <-gctx.Done():
			return nil
		case <-ctx.Done():
		}
		for _, s := range servers {
			if s != nil {
				s.Drain()
			}
		}
		stopWork()
		log.Info().Stringer("drain", cfg.ShutdownDrain).Msg("shutdown: /readyz answers 503 and the work stops; serving until the drain ends")
		clock.Sleep(gctx, clk, cfg.ShutdownDrain)
		stopServing()
		return nil
	})
	for _, s := range servers {
		if s != nil {
			g.Go(func() error { return s.Run(serveCtx, cfg.ShutdownTimeout) })
		}
	}
	if work != nil {
		g.Go(func() error { return work(workCtx) })
	}
	return g.Wait()
}

// LogStart is every binary's first log line: its build and the configuration it runs with (cfg,
// its composition), secrets redacted (settings.Values).
func LogStart(log zerolog.Logger, cfg settings.Composition) {
	in := buildinfo.Read()
	log.Info().Str("version", in.Version).Str("revision", in.Revision).Bool("modified", in.Modified).
		Str("go_version", in.GoVersion).Int64("memory_limit", MemoryLimit()).Int64("gc_percent", gcPercent()).Interface("config", settings.Values(cfg)).Msg("starting")
}
