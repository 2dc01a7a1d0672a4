// Command dispatcher is msgx's dispatcher stage: while it leads the dispatcher role it drains the
// msg_event outbox to Kafka (pkg/dispatch). See docs/architecture.md and docs/events.md.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/msgx/msgx/pkg/clock"
	"github.com/msgx/msgx/pkg/cmdline"
	"github.com/msgx/msgx/pkg/daemon"
	"github.com/msgx/msgx/pkg/dispatch"
	"github.com/msgx/msgx/pkg/kafka"
	"github.com/msgx/msgx/pkg/leader"
	"github.com/msgx/msgx/pkg/obs"
	"github.com/msgx/msgx/pkg/outbox"
	"github.com/msgx/msgx/pkg/settings"
)

func main() {
	if code, start := cmdline.Service("dispatcher", "msgx's dispatcher stage: sends the flight events to Kafka while it leads the dispatcher role; serves /healthz /readyz /metrics (MSGX_HTTP_ADDR).", os.Args[1:], os.Stdout, os.Stderr); !start {
		os.Exit(code)
	}
	cfg, err := load()
	if err != nil {
		fmt.Fprintf(os.Stderr, "dispatcher: bad configuration: %v\n", err)
		os.Exit(2)
	}
	// Logs go to stderr through a bounded queue: a stuck log collector never blocks the work
	// (lines it cannot take are counted in msgx_log_lines_dropped_total).
	logs := obs.NewLogOutput(os.Stderr, obs.LogQueueLines)
	log := obs.NewLogger(logs, cfg.LogLevel, "dispatcher")
	daemon.LimitMemory()
	daemon.CollectLess()
	daemon.LogStart(log, &cfg)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	err = run(ctx, cfg, log, obs.NewRegistry(logs.Dropped()), nil)
	stop()
	if err != nil {
		log.Error().Err(err).Msg("dispatcher failed")
	}
	_ = logs.CloseWithin(obs.LogFlushTimeout) // os.Exit skips deferred calls: write the queued lines first
	switch {
	case errors.Is(err, dispatch.ErrRefused):
		fmt.Fprintf(os.Stderr, "dispatcher: %v\n", err)
		os.Exit(2)
	case err != nil:
		os.Exit(1)
	}
}

// run is the whole binary; tests call it. reg is the binary's registry (obs.NewRegistry, with
// the log output's counter). started, when set, is told the HTTP server.
func run(ctx context.Context, cfg Config, log zerolog.Logger, reg *prometheus.Registry, started func(*obs.Server)) error {
	// Producer rule D3b: refuse to start on any violation, before touching anything else.
	link, err := dispatch.NewLink(cfg.Kafka, cfg.Leader.Retry, log)
	if err != nil {
		return err
	}
	pool, err := daemon.OpenPool(ctx, cfg.Process, cfg.Leader, settings.RoleDispatcher, log)
	if err != nil {
		return err
	}
	defer pool.Close()
	store, err := outbox.New(pool, cfg.outboxPolicy())
	if err != nil {
		return err
	}
	reg.MustRegister(kafka.NewCollector(), link)
	disp, err := dispatch.New(cfg.dispatchConfig(), store, link, clock.System{}, reg, log)
	if err != nil {
		return err
	}
	// The report of the sends the operators' status reads (dispatch_send), for the whole term.
	report := dispatch.NewReporter(link, disp, log)
	return daemon.Run(ctx, daemon.Spec{
		Role:     settings.RoleDispatcher,
		Process:  cfg.Process,
		Leader:   cfg.Leader,
		Log:      log,
		Registry: reg,
		Pool:     pool,
		// A real request (metadata) answered within the check timeout (a hung broker that still
		// accepts connections fails it), and, while leading, a term that can produce.
		Checks: []obs.Check{{Name: "kafka", Fn: link.Ready}, {Name: "tail", Fn: disp.Ready}},
		Work: func(ctx context.Context, lease leader.Lease) error {
			return disp.Leading(ctx, func(ctx context.Context) error {
				return report.Beside(ctx, lease, func(ctx context.Context) error {
					return link.Term(ctx,
						func(ctx context.Context) error { return store.CheckLease(ctx, lease) },
						func(ctx context.Context) error { return disp.Run(ctx, lease) })
				})
			})
		},
		Started: started,
	})
}
