// Command jobs is msgx's jobs stage: backfill sweep, history sweep, retention and archive
// (pkg/jobs). See docs/jobs.md.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/rs/zerolog"

	"github.com/msgx/msgx/pkg/clock"
	"github.com/msgx/msgx/pkg/config"
	"github.com/msgx/msgx/pkg/daemon"
	"github.com/msgx/msgx/pkg/jobs"
	"github.com/msgx/msgx/pkg/mailbox"
	"github.com/msgx/msgx/pkg/obs"
)

func main() {
	cfg, err := config.Load(config.RoleJobs)
	if err != nil {
		fmt.Fprintf(os.Stderr, "jobs: bad configuration: %v\n", err)
		os.Exit(2)
	}
	log := obs.NewLogger(os.Stderr, cfg.LogLevel, "jobs")
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := run(ctx, cfg, log, nil); err != nil {
		log.Error().Err(err).Msg("jobs failed")
		os.Exit(1)
	}
}

// jobsConfig maps the binary's settings to the jobs stage's.
func jobsConfig(cfg config.Config) (jobs.Config, error) {
	at, err := jobs.ParseTimeOfDay(cfg.HistorySweepAt)
	if err != nil {
		return jobs.Config{}, fmt.Errorf("MSGX_HISTORY_SWEEP_AT: %w", err)
	}
	jc := jobs.Defaults()
	jc.BackfillInterval = cfg.BackfillInterval
	jc.BackoffBase, jc.BackoffMax = cfg.BackfillBackoffBase, cfg.BackfillBackoffMax
	jc.Overdue = cfg.OverdueBackfill
	jc.Shadow, jc.ProcessedValue = cfg.Shadow, cfg.MailboxProcessedAs
	// A mailbox call runs while the claimed rows' transaction waits: keep it well inside the
	// PostgreSQL idle-in-transaction timeout the pool sets (the leader session timeout).
	jc.MarkTimeout = min(cfg.DBTimeout, cfg.LeaderSessionTimeout/2)
	jc.HistoryEnabled, jc.HistorySweepAt = cfg.HistoryEnabled, at
	jc.HistoryRetention, jc.HistoryQuiet = cfg.HistoryRetention, cfg.HistoryQuiet
	jc.HistoryBatch = min(cfg.JobBatch, jc.HistoryBatch)
	jc.EventRetention, jc.ProcStateRetention, jc.RawRetention = cfg.EventRetention, cfg.ProcStateRetention, cfg.RawRetention
	jc.SnapLogRetention, jc.ReqTrackRetention = cfg.SnapLogRetention, cfg.ReqTrackRetention
	jc.FlightHistoryRetention = cfg.FlightHistoryRetention
	jc.Batch = cfg.JobBatch
	jc.Location = cfg.Location()
	return jc, jc.Validate()
}

// run is the whole binary; tests call it. started, when set, is told the HTTP server.
func run(ctx context.Context, cfg config.Config, log zerolog.Logger, started func(*obs.Server)) error {
	jc, err := jobsConfig(cfg)
	if err != nil {
		return err
	}
	pool, err := daemon.OpenPool(ctx, cfg, config.RoleJobs)
	if err != nil {
		return err
	}
	defer pool.Close()
	mb, err := mailbox.Open(cfg.MySQLDSN)
	if err != nil {
		return err
	}
	defer mb.Close()
	reg := obs.NewRegistry()
	clk := clock.System{}
	var marker jobs.Marker = mb
	if cfg.Shadow {
		marker = nil // shadow mode: nothing is written to MySQL
	}
	j, err := jobs.New(jc, pool, marker, clk, jobs.NewMetrics(reg, clk), log)
	if err != nil {
		return err
	}
	return daemon.Run(ctx, daemon.Spec{
		Role:     config.RoleJobs,
		Config:   cfg,
		Log:      log,
		Registry: reg,
		Pool:     pool,
		Checks:   []obs.Check{{Name: "mailbox", Fn: mb.Ping}},
		Work:     j.Run,
		Started:  started,
	})
}
