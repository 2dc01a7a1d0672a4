package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/msgx/msgx/pkg/config"
	"github.com/msgx/msgx/pkg/jobs"
	"github.com/msgx/msgx/pkg/settings"
	"github.com/msgx/msgx/pkg/status"
)

func init() {
	register("history", command{summary: "history sweep now (asks the jobs leader; --wait for the result)", run: historyCmd})
}

const historyAbout = `history sweep asks the jobs leader to run the history sweep now (flights past
MSGX_HISTORY_RETENTION move to flight_history). msgxctl only records the request in job_state;
the jobs leader runs it at its next scheduler tick, fenced and under PIPELINE_LOCK.`

func historyCmd(ctx context.Context, cfg config.Config, args []string, out io.Writer) error {
	_, args, err := subcommand("history", historyAbout, []string{"sweep"}, args, out)
	if err != nil {
		return err
	}
	return historySweep(ctx, cfg, args, out)
}

// historyRequest is what history sweep --json prints.
type historyRequest struct {
	Requested     bool           `json:"requested"`
	JobsLeader    *status.Leader `json:"jobs_leader"` // nil: no jobs leader, or a stale one
	Note          string         `json:"note"`
	Result        *jobs.RunState `json:"result,omitempty"` // with --wait
	HistoryOffCLI bool           `json:"history_disabled_here"`
}

func historySweep(ctx context.Context, cfg config.Config, args []string, out io.Writer) error {
	fs, asJSON := flags("history sweep", "[--wait] [--timeout 10m] [--actor who] [--json]", historyAbout, out)
	wait := fs.Bool("wait", false, "wait until the jobs leader completed the sweep")
	timeout := fs.Duration("timeout", 10*time.Minute, "how long --wait waits")
	actor := fs.String("actor", defaultActor(), "who asked (recorded in job_state)")
	if err := fs.NoArgs(args); err != nil {
		return err
	}
	pool, err := openPool(ctx, cfg)
	if err != nil {
		return err
	}
	defer pool.Close()
	// The sweep runs in the jobs leader (fenced, under PIPELINE_LOCK); msgxctl only asks.
	now := time.Now()
	if err := jobs.Request(ctx, pool, jobs.History, *actor, now); err != nil {
		return err
	}
	rep := historyRequest{Requested: true, HistoryOffCLI: !cfg.Jobs.HistoryEnabled}
	leaders, err := status.Leaders(ctx, pool, now)
	if err != nil {
		return err
	}
	for _, l := range leaders {
		if l.Role == string(settings.RoleJobs) && !l.Stale(cfg.Leader.SessionTimeout) {
			rep.JobsLeader = &l
		}
	}
	if rep.JobsLeader != nil {
		rep.Note = fmt.Sprintf("history sweep requested; the jobs leader %s runs it at its next tick", rep.JobsLeader.Holder)
	} else {
		rep.Note = "history sweep requested, but no jobs leader is running (none in leader_lease, or its renewal is older than MSGX_LEADER_SESSION_TIMEOUT): the request waits in job_state and runs when a jobs binary starts and takes the lead"
	}
	if *wait {
		st, err := historyWait(ctx, pool, *timeout)
		if err != nil {
			return err
		}
		rep.Result = &st
	}
	var failed error
	if rep.Result != nil && rep.Result.LastError != "" {
		failed = fmt.Errorf("history sweep: %s", rep.Result.LastError)
	}
	if *asJSON {
		if err := writeJSON(out, cfg.Location(), rep); err != nil {
			return err
		}
		return failed
	}
	if rep.HistoryOffCLI {
		fmt.Fprintln(out, "note: MSGX_HISTORY_ENABLED=false here; if the jobs leader has it off too, the sweep deletes nothing")
	}
	if rep.Result == nil {
		fmt.Fprintf(out, "%s (msgxctl history sweep --wait to follow)\n", rep.Note)
		return nil
	}
	if failed != nil {
		return failed
	}
	fmt.Fprintf(out, "history sweep complete; its last run selected %d flight(s)\n", rep.Result.LastSelected)
	return nil
}

// historyWait polls job_state until the request is no longer pending or timeout passed.
func historyWait(ctx context.Context, pool *pgxpool.Pool, timeout time.Duration) (jobs.RunState, error) {
	deadline := time.Now().Add(timeout)
	for {
		st, err := jobs.State(ctx, pool, jobs.History)
		if err != nil || !st.Pending {
			return st, err
		}
		if time.Now().After(deadline) {
			return st, fmt.Errorf("history sweep still pending after %s: is a jobs leader running? (msgxctl status)", timeout)
		}
		select {
		case <-ctx.Done():
			return st, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}
