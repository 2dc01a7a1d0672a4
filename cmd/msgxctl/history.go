package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/msgx/msgx/pkg/config"
	"github.com/msgx/msgx/pkg/jobs"
)

func init() {
	register("history", command{summary: "history sweep now (asks the jobs leader; --wait for the result)", run: historyCmd})
}

func historyCmd(ctx context.Context, cfg config.Config, args []string, out io.Writer) error {
	if len(args) == 0 || args[0] != "sweep" {
		return fmt.Errorf("usage: msgxctl history sweep [--wait] [--timeout 10m] [--actor who]")
	}
	fs := flag.NewFlagSet("history sweep", flag.ContinueOnError)
	wait := fs.Bool("wait", false, "wait until the jobs leader completed the sweep")
	timeout := fs.Duration("timeout", 10*time.Minute, "how long --wait waits")
	actor := fs.String("actor", defaultActor(), "who asked (recorded in job_state)")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	pool, err := openPool(ctx, cfg)
	if err != nil {
		return err
	}
	defer pool.Close()
	// The sweep runs in the jobs leader (fenced, under PIPELINE_LOCK); msgxctl only asks.
	if err := jobs.Request(ctx, pool, jobs.History, *actor, time.Now()); err != nil {
		return err
	}
	if !cfg.Jobs.HistoryEnabled {
		fmt.Fprintln(out, "note: MSGX_HISTORY_ENABLED=false here; if the jobs leader has it off too, the sweep deletes nothing")
	}
	if !*wait {
		fmt.Fprintln(out, "history sweep requested; the jobs leader runs it at its next tick (msgxctl history sweep --wait to follow)")
		return nil
	}
	deadline := time.Now().Add(*timeout)
	for {
		st, err := jobs.State(ctx, pool, jobs.History)
		if err != nil {
			return err
		}
		if !st.Pending {
			if *asJSON {
				return writeJSON(out, st)
			}
			if st.LastError != "" {
				return fmt.Errorf("history sweep: %s", st.LastError)
			}
			fmt.Fprintf(out, "history sweep complete; its last run selected %d flight(s)\n", st.LastSelected)
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("history sweep still pending after %s: is a jobs leader running? (msgxctl status)", *timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}
