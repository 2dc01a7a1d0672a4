// Command console is msgx's operator web console (pkg/console): the pipeline, a flight's story,
// a message's history, dead letters and replay, requests to the AODB. PostgreSQL only; it elects
// no leader (any number of replicas serve). See docs/console.md.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/msgx/msgx/pkg/clock"
	"github.com/msgx/msgx/pkg/cmdline"
	"github.com/msgx/msgx/pkg/console"
	"github.com/msgx/msgx/pkg/daemon"
	"github.com/msgx/msgx/pkg/obs"
	"github.com/msgx/msgx/pkg/outbox"
	"github.com/msgx/msgx/pkg/request"
	"github.com/msgx/msgx/pkg/settings"
)

func main() {
	if code, start := cmdline.Service("console", "msgx's operator web console: pages on MSGX_CONSOLE_ADDR, /healthz /readyz /metrics on MSGX_HTTP_ADDR.", os.Args[1:], os.Stdout, os.Stderr); !start {
		os.Exit(code)
	}
	cfg, err := load()
	if err != nil {
		fmt.Fprintf(os.Stderr, "console: bad configuration: %v\n", err)
		os.Exit(2)
	}
	// Logs go to stderr through a bounded queue: a stuck log collector never blocks the work
	// (lines it cannot take are counted in msgx_log_lines_dropped_total).
	logs := obs.NewLogOutput(os.Stderr, obs.LogQueueLines)
	log := obs.NewLogger(logs, cfg.LogLevel, "console")
	daemon.LimitMemory()
	daemon.LogStart(log, &cfg)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	err = run(ctx, cfg, log, obs.NewRegistry(logs.Dropped()), nil)
	stop()
	if err != nil {
		log.Error().Err(err).Msg("console failed")
	}
	_ = logs.CloseWithin(obs.LogFlushTimeout) // os.Exit skips deferred calls: write the queued lines first
	if err != nil {
		os.Exit(1)
	}
}

// run is the whole binary; tests call it. reg is the binary's registry (obs.NewRegistry, with
// the log output's counter). started, when set, is told the ops server
// (MSGX_HTTP_ADDR: /healthz, /readyz, /metrics) and the pages' server (MSGX_CONSOLE_ADDR) once
// both listen.
func run(ctx context.Context, cfg Config, log zerolog.Logger, reg *prometheus.Registry, started func(ops, pages *obs.Server)) error {
	pool, err := daemon.OpenPool(ctx, cfg.Process, cfg.Leader, settings.RoleConsole, log)
	if err != nil {
		return err
	}
	defer pool.Close()
	ob, err := outbox.New(pool, cfg.outboxPolicy())
	if err != nil {
		return err
	}
	reqs, err := request.NewStore(pool, cfg.requestConfig())
	if err != nil {
		return err
	}
	if err := obs.RegisterPool(reg, string(settings.RoleConsole), pool); err != nil {
		return err
	}
	c, err := console.New(console.Deps{
		Pool: pool, Config: cfg.Console, Location: cfg.Location(), Outbox: ob, Requests: reqs,
		Shadow: cfg.Shadow, Log: log, Metrics: console.NewMetrics(reg), LeaseTimeout: cfg.Leader.SessionTimeout,
	})
	if err != nil {
		return err
	}
	ops := obs.NewServer(cfg.HTTPAddr, reg, []obs.Check{{Name: "postgres", Fn: pool.Ping}},
		func() (bool, int64) { return false, 0 }, cfg.HTTPReadTimeout, log)
	ops.SetRole("console") // it elects no leader: every replica serves
	pages := obs.NewHandlerServer(cfg.Console.Addr, c.Handler(), cfg.HTTPReadTimeout, log)
	for _, srv := range []*obs.Server{ops, pages} {
		if err := srv.Listen(); err != nil {
			return err
		}
	}
	if started != nil {
		started(ops, pages)
	}
	// The line every binary logs once it serves (addr: ops; api_addr: the pages), which the
	// local stack waits for.
	log.Info().Str("addr", ops.Addr()).Str("api_addr", pages.Addr()).Msg("http: serving /healthz /readyz /metrics; the console's pages on api_addr")
	return daemon.Serve(ctx, cfg.Process, clock.System{}, log, []*obs.Server{ops, pages}, nil)
}
