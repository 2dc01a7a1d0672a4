// Command ingest is msgx's ingest stage. See docs/architecture.md.
package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/msgx/msgx/pkg/clock"
	"github.com/msgx/msgx/pkg/cmdline"
	"github.com/msgx/msgx/pkg/daemon"
	"github.com/msgx/msgx/pkg/httpauth"
	"github.com/msgx/msgx/pkg/ingest"
	"github.com/msgx/msgx/pkg/leader"
	"github.com/msgx/msgx/pkg/mailbox"
	"github.com/msgx/msgx/pkg/obs"
	"github.com/msgx/msgx/pkg/readapi"
	"github.com/msgx/msgx/pkg/settings"
)

func main() {
	if code, start := cmdline.Service("ingest", "msgx's ingest stage: polls the legacy mailbox into PostgreSQL while it leads the ingest role; serves the compat entry and the read API (MSGX_API_ADDR) and /healthz /readyz /metrics (MSGX_HTTP_ADDR).", os.Args[1:], os.Stdout, os.Stderr); !start {
		os.Exit(code)
	}
	cfg, err := load()
	if err != nil {
		fmt.Fprintf(os.Stderr, "ingest: bad configuration: %v\n", err)
		os.Exit(2)
	}
	// Logs go to stderr through a bounded queue: a stuck log collector never blocks the work
	// (lines it cannot take are counted in msgx_log_lines_dropped_total).
	logs := obs.NewLogOutput(os.Stderr, obs.LogQueueLines)
	log := obs.NewLogger(logs, cfg.LogLevel, "ingest")
	daemon.LimitMemory()
	daemon.CollectLess()
	daemon.LogStart(log, &cfg)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	err = run(ctx, cfg, log, obs.NewRegistry(logs.Dropped()), nil)
	stop()
	if err != nil {
		log.Error().Err(err).Msg("ingest failed")
	}
	_ = logs.CloseWithin(obs.LogFlushTimeout) // os.Exit skips deferred calls: write the queued lines first
	if err != nil {
		os.Exit(1)
	}
}

// run is the whole binary; tests call it. reg is the binary's registry (obs.NewRegistry, with
// the log output's counter). started, when set, is told the ops server and the API
// server once both listen.
func run(ctx context.Context, cfg Config, log zerolog.Logger, reg *prometheus.Registry, started func(ops, api *obs.Server)) error {
	pool, err := daemon.OpenPool(ctx, cfg.Process, cfg.Leader, settings.RoleIngest, log)
	if err != nil {
		return err
	}
	defer pool.Close()
	apiPool, err := daemon.OpenAPIPool(ctx, cfg.Process, cfg.Leader, cfg.API.PGMaxConns, cfg.API.StatementTimeout, log)
	if err != nil {
		return err
	}
	defer apiPool.Close()
	if err := mailbox.UseCA(cfg.Mailbox.MySQLTLSCAFile); err != nil {
		return err
	}
	mb, err := mailbox.Open(cfg.Mailbox.MySQLDSN)
	if err != nil {
		return err
	}
	defer mb.Close()

	clk := clock.System{}
	if err := obs.RegisterPool(reg, "ingest-api", apiPool); err != nil {
		return err
	}
	metrics := ingest.NewMetrics(reg, clk)
	compat := ingest.NewCompat(cfg.compatConfig(), mb, apiPool, clk, metrics, log)
	// The read API only reads PostgreSQL: it serves on every replica, leader or standby, and
	// while the mailbox is down.
	read := readapi.New(readapi.Config{DBTimeout: cfg.DBTimeout, Location: cfg.Location()}, apiPool, log)
	if cfg.Mailbox.Shadow {
		log.Warn().Msg("shadow mode: the compat entry answers 503 and nothing is written to the mailbox")
	}
	gate := httpauth.NewGate(cfg.API.Access, clk.Now)
	gate.Refused = metrics.APIRefused
	gate.Revoked = httpauth.NewRevokedSet(apiPool, httpauth.RevokedRefresh, clk.Now)
	gate.Revoked.Failed = func(err error) { log.Warn().Err(err).Msg("api: revoked tokens not read; the last set read stays") }
	if len(cfg.API.Access.Tokens) == 0 {
		log.Warn().Msg("api: no MSGX_API_TOKENS: every API request is refused (401)")
	}
	mux := http.NewServeMux()
	timed := obs.NewHTTPMetrics(reg)
	if cfg.Compat.Enabled {
		mux.Handle(ingest.CompatPattern, timed.Wrap(ingest.CompatPattern, gate.RequireBody(httpauth.ScopeSend, cfg.Compat.MaxBody, compat)))
	}
	for _, p := range readapi.Patterns {
		mux.Handle(p, timed.Wrap(p, gate.Require(httpauth.ScopeRead, read)))
	}
	apiSrv := obs.NewHandlerServer(cfg.API.Addr, mux, cfg.HTTPReadTimeout, log)

	return daemon.Run(ctx, daemon.Spec{
		Role:     settings.RoleIngest,
		Process:  cfg.Process,
		Leader:   cfg.Leader,
		Log:      log,
		Registry: reg,
		Pool:     pool,
		// The mailbox does not decide readiness: the read API needs only PostgreSQL, and the
		// compat entry answers 503 by itself while the mailbox is down.
		Checks: []obs.Check{{Name: "mailbox", Fn: mb.Ping, Informational: true}},
		API:    apiSrv,
		Work: func(ctx context.Context, lease leader.Lease) error {
			ing, err := ingest.New(cfg.pollConfig(), ingest.Deps{
				DB: pool, Mailbox: mb, Transactions: mb, Fence: lease, Beat: lease.Tick, Clock: clk, Metrics: metrics,
				Log: log.With().Int64("epoch", lease.Epoch).Logger(),
			})
			if err != nil {
				return err
			}
			return ing.Run(ctx)
		},
		Started: func(ops *obs.Server) {
			if started != nil {
				started(ops, apiSrv)
			}
		},
	})
}
