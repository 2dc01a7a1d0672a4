package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/msgx/msgx/pkg/config"
	"github.com/msgx/msgx/pkg/jobs"
)

func init() {
	register("backfill", command{summary: "abandoned mailbox markers: list-abandoned, retry --ids … --reason …", run: backfillCmd})
}

const backfillAbout = `Mailbox markers the backfill sweep gave up on (abandoned after MSGX_OVERDUE_BACKFILL):
  msgxctl backfill list-abandoned [--limit N] [--json]
  msgxctl backfill retry --ids 1,2 --reason why [--actor A] [--json]   (due again; audited)`

func backfillCmd(ctx context.Context, cfg config.Config, args []string, out io.Writer) error {
	sub, args, err := subcommand("backfill", backfillAbout, []string{"list-abandoned", "retry"}, args, out)
	if err != nil {
		return err
	}
	if sub == "retry" {
		return backfillRetry(ctx, cfg, args, out)
	}
	return backfillList(ctx, cfg, args, out)
}

func backfillList(ctx context.Context, cfg config.Config, args []string, out io.Writer) error {
	fs, asJSON := flags("backfill list-abandoned", "[--limit N] [--json]", "Lists the abandoned mailbox markers.", out)
	limit := fs.Int("limit", 1000, "at most this many rows")
	if err := fs.NoArgs(args); err != nil {
		return err
	}
	pool, err := openPool(ctx, cfg)
	if err != nil {
		return err
	}
	defer pool.Close()
	loc := cfg.Location()
	list, err := jobs.ListAbandoned(ctx, pool, *limit)
	if err != nil {
		return err
	}
	for i := range list {
		list[i].ReceivedAt = airportWall(loc, list[i].ReceivedAt) // the mailbox's wall clock
	}
	if *asJSON {
		return writeJSON(out, loc, list)
	}
	if len(list) == 0 {
		fmt.Fprintln(out, "no abandoned markers")
		return nil
	}
	w := tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
	fmt.Fprintln(w, "MSG_ID\tSTATUS\tOUTCOME\tATTEMPTS\tENQUEUED\tABANDONED\tARCHIVED\tERROR")
	for _, a := range list {
		fmt.Fprintf(w, "%d\t%s\t%s\t%d\t%s\t%s\t%v\t%s\n", a.MsgID, a.Status, a.Outcome, a.Attempts,
			stamp(loc, a.EnqueuedAt), stamp(loc, a.AbandonedAt), a.Archived, a.Error)
	}
	return w.Flush()
}

func backfillRetry(ctx context.Context, cfg config.Config, args []string, out io.Writer) error {
	fs, asJSON := flags("backfill retry", "--ids 1,2 --reason why [--actor A] [--json]",
		"Makes abandoned markers due again; the backfill sweep retries them at its next run. Writes an audit row.", out)
	change := newChangeFlags(fs, "comma-separated msg_ids of abandoned markers (required)", "why (audit; required)")
	reason, actor := change.reason, change.actor
	ids, err := change.parse(args)
	if err != nil {
		return err
	}
	if len(ids) == 0 {
		return fs.Usagef("--ids is required")
	}
	if strings.TrimSpace(*reason) == "" {
		return fs.Usagef("--reason is required (audit)")
	}
	pool, err := openPool(ctx, cfg)
	if err != nil {
		return err
	}
	defer pool.Close()
	loc := cfg.Location()
	rep, err := jobs.RetryBackfill(ctx, pool, jobs.RetryRequest{IDs: ids, Actor: *actor, Reason: *reason, Now: time.Now()})
	if err != nil {
		return err
	}
	if *asJSON {
		return writeJSON(out, loc, rep)
	}
	fmt.Fprintf(out, "%d marker(s) due again; the backfill sweep retries them at its next run: %v\n", len(rep.Retried), rep.Retried)
	if len(rep.Refused) > 0 {
		fmt.Fprintf(out, "not abandoned markers (left alone): %v\n", rep.Refused)
	}
	return nil
}
