// Command jobs is msgx's jobs stage: backfill sweep, history sweep, retention and archive
// (pkg/jobs), and the request sweep (pkg/request). See docs/jobs.md.
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
	"github.com/msgx/msgx/pkg/daemon"
	"github.com/msgx/msgx/pkg/jobs"
	"github.com/msgx/msgx/pkg/mailbox"
	"github.com/msgx/msgx/pkg/obs"
	"github.com/msgx/msgx/pkg/replication"
	"github.com/msgx/msgx/pkg/request"
	"github.com/msgx/msgx/pkg/settings"
)

func main() {
	if code, start := cmdline.Service("jobs", "msgx's jobs stage: backfill, history, retention and request sweeps while it leads the jobs role; serves /healthz /readyz /metrics (MSGX_HTTP_ADDR).", os.Args[1:], os.Stdout, os.Stderr); !start {
		os.Exit(code)
	}
	cfg, err := load()
	if err != nil {
		fmt.Fprintf(os.Stderr, "jobs: bad configuration: %v\n", err)
		os.Exit(2)
	}
	// Logs go to stderr through a bounded queue: a stuck log collector never blocks the work
	// (lines it cannot take are counted in msgx_log_lines_dropped_total).
	logs := obs.NewLogOutput(os.Stderr, obs.LogQueueLines)
	log := obs.NewLogger(logs, cfg.LogLevel, "jobs")
	daemon.LimitMemory()
	daemon.LogStart(log, &cfg)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	err = run(ctx, cfg, log, obs.NewRegistry(logs.Dropped()), nil)
	stop()
	if err != nil {
		log.Error().Err(err).Msg("jobs failed")
	}
	_ = logs.CloseWithin(obs.LogFlushTimeout) // os.Exit skips deferred calls: write the queued lines first
	if err != nil {
		os.Exit(1)
	}
}

// run is the whole binary; tests call it. reg is the binary's registry (obs.NewRegistry, with
// the log output's counter). started, when set, is told the HTTP server.
func run(ctx context.Context, cfg Config, log zerolog.Logger, reg *prometheus.Registry, started func(*obs.Server)) error {
	pool, err := daemon.OpenPool(ctx, cfg.Process, cfg.Leader, settings.RoleJobs, log)
	if err != nil {
		return err
	}
	defer pool.Close()
	if err := mailbox.UseCA(cfg.Mailbox.MySQLTLSCAFile); err != nil {
		return err
	}
	mb, err := mailbox.Open(cfg.Mailbox.MySQLDSN)
	if err != nil {
		return err
	}
	defer mb.Close()
	clk := clock.System{}
	var marker jobs.Marker = mb
	if cfg.Mailbox.Shadow {
		marker = nil // shadow mode: nothing is written to MySQL
	}
	jc := cfg.jobsConfig()
	jc.Standbys = replication.NewWaiter(cfg.Markers, clk, replication.NewMetrics(reg))
	j, err := jobs.New(jc, pool, marker, clk, jobs.NewMetrics(reg, clk), log)
	if err != nil {
		return err
	}
	// Requests to the AODB (docs/requests.md): the jobs stage is their only writer to coutmsgs.
	store, err := request.NewStore(pool, cfg.requestConfig())
	if err != nil {
		return err
	}
	var sender *request.Sender
	var outbox request.Outbox
	if !cfg.Mailbox.Shadow { // shadow mode: expire and count, send nothing
		if sender, err = request.NewSender(store, mb, clk, false); err != nil {
			return err
		}
		outbox = mb
	}
	j.WithRequests(request.NewSweeper(store, sender, outbox, clk, request.NewMetrics(reg), log), cfg.Requests.SweepInterval)
	return daemon.Run(ctx, daemon.Spec{
		Role:     settings.RoleJobs,
		Process:  cfg.Process,
		Leader:   cfg.Leader,
		Log:      log,
		Registry: reg,
		Pool:     pool,
		Checks:   []obs.Check{{Name: "mailbox", Fn: mb.Ping}},
		Work:     j.Run,
		Started:  started,
	})
}
