// Command processor is msgx's processor stage. See docs/architecture.md.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/msgx/msgx/pkg/clock"
	"github.com/msgx/msgx/pkg/cmdline"
	"github.com/msgx/msgx/pkg/daemon"
	"github.com/msgx/msgx/pkg/flightstore"
	"github.com/msgx/msgx/pkg/identity"
	"github.com/msgx/msgx/pkg/leader"
	"github.com/msgx/msgx/pkg/mailbox"
	"github.com/msgx/msgx/pkg/migrate"
	"github.com/msgx/msgx/pkg/obs"
	"github.com/msgx/msgx/pkg/processor"
	"github.com/msgx/msgx/pkg/processor/plugins"
	"github.com/msgx/msgx/pkg/replication"
	"github.com/msgx/msgx/pkg/request"
	"github.com/msgx/msgx/pkg/settings"
)

func main() {
	if code, start := cmdline.Service("processor", "msgx's processor stage: processes the messages in mailbox order into flight state while it leads the processor role; serves /healthz /readyz /metrics (MSGX_HTTP_ADDR).", os.Args[1:], os.Stdout, os.Stderr); !start {
		os.Exit(code)
	}
	cfg, err := load()
	if err != nil {
		fmt.Fprintf(os.Stderr, "processor: bad configuration: %v\n", err)
		os.Exit(2)
	}
	// Logs go to stderr through a bounded queue: a stuck log collector never blocks the work
	// (lines it cannot take are counted in msgx_log_lines_dropped_total).
	logs := obs.NewLogOutput(os.Stderr, obs.LogQueueLines)
	log := obs.NewLogger(logs, cfg.LogLevel, "processor")
	daemon.LimitMemory()
	daemon.LogStart(log, &cfg)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	err = run(ctx, cfg, log, obs.NewRegistry(logs.Dropped()), nil)
	stop()
	if err != nil {
		log.Error().Err(err).Msg("processor failed")
	}
	_ = logs.CloseWithin(obs.LogFlushTimeout) // os.Exit skips deferred calls: write the queued lines first
	if err != nil {
		os.Exit(1)
	}
}

// run is the whole binary; tests call it. reg is the binary's registry (obs.NewRegistry, with
// the log output's counter). started, when set, is told the HTTP server.
func run(ctx context.Context, cfg Config, log zerolog.Logger, reg *prometheus.Registry, started func(*obs.Server)) error {
	pool, err := daemon.OpenPool(ctx, cfg.Process, cfg.Leader, settings.RoleProcessor, log)
	if err != nil {
		return err
	}
	defer pool.Close()
	// The identity rule is the database's (pkg/identity): a disagreeing configuration refuses
	// to start with one line naming the msgxctl command that changes the rule.
	clk := clock.System{}
	pc := cfg.pumpConfig()
	if err := ensureIdentity(ctx, pool, pc.Rule(), clk, cfg.Leader.Retry, log); err != nil {
		return err
	}
	if err := mailbox.UseCA(cfg.Mailbox.MySQLTLSCAFile); err != nil {
		return err
	}
	mb, err := mailbox.Open(cfg.Mailbox.MySQLDSN)
	if err != nil {
		return err
	}
	defer mb.Close()
	store, err := request.NewStore(pool, cfg.requestConfig())
	if err != nil {
		return err
	}
	hooks, err := request.NewHooks(store, cfg.triggerConfig(), request.NewProcessorMetrics(reg), log)
	if err != nil {
		return err
	}
	var cache *flightstore.Cache
	if pc.FlightCache > 0 {
		cache = flightstore.NewCache(pc.FlightCache)
	}
	pc.Standbys = replication.NewWaiter(cfg.Markers, clk, replication.NewMetrics(reg))
	p := processor.New(pc, pool, plugins.Handlers(hooks, cache), mb, clk, processor.NewMetrics(reg), log)
	return daemon.Run(ctx, daemon.Spec{
		Role:     settings.RoleProcessor,
		Process:  cfg.Process,
		Leader:   cfg.Leader,
		Log:      log,
		Registry: reg,
		Pool:     pool,
		Checks:   []obs.Check{{Name: "mailbox", Fn: mb.Ping}},
		Work:     work(p, hooks.Triggers(), clk, log),
		Started:  started,
	})
}

// ensureIdentity checks the configured identity rule against the database's (pkg/identity). A
// disagreeing configuration is refused: run returns and the binary exits with one line. A
// database that cannot answer yet (down, not created, not migrated) is retried every retry,
// logged with the fix at the first try and then once per obs.RepeatEvery, as the leader campaign
// is; it ends with ctx.
func ensureIdentity(ctx context.Context, pool *pgxpool.Pool, rule identity.Rule, clk clock.Clock, retry time.Duration, log zerolog.Logger) error {
	repeats := obs.Repeats{Every: obs.RepeatEvery}
	for {
		err := identity.Ensure(ctx, pool, rule, "processor", clk.Now())
		var mismatch *identity.MismatchError
		if err == nil || errors.As(err, &mismatch) || ctx.Err() != nil {
			return err
		}
		if n, due := repeats.Due(clk.Now()); due {
			ev := log.Warn().Err(err).Int("tries", n)
			if hint := migrate.Hint(err); hint != "" {
				ev = ev.Str("hint", hint)
			}
			ev.Msg("identity rule check failed; retrying")
		}
		if !clock.Sleep(ctx, clk, retry) {
			return ctx.Err()
		}
	}
}

// work is the leader's work: at the start of each term the bootstrap trigger (an empty flight
// table requests the schedule; off unless MSGX_REQUEST_BOOTSTRAP, rate-limited by its
// cooldown), then the engine. A bootstrap failure is logged, never fatal.
func work(p *processor.Engine, trig *request.Triggers, clk clock.Clock, log zerolog.Logger) func(context.Context, leader.Lease) error {
	return func(ctx context.Context, lease leader.Lease) error {
		if _, err := trig.Bootstrap(ctx, clk.Now()); err != nil && ctx.Err() == nil {
			log.Warn().Err(err).Msg("requests: bootstrap trigger failed")
		}
		return p.Run(ctx, lease)
	}
}
