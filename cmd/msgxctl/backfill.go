package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/msgx/msgx/pkg/config"
	"github.com/msgx/msgx/pkg/jobs"
)

func init() {
	register("backfill", command{summary: "abandoned mailbox markers: list-abandoned, retry --ids … --reason …", run: backfillCmd})
}

func backfillCmd(ctx context.Context, cfg config.Config, args []string, out io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("usage: msgxctl backfill list-abandoned [--json] | retry --ids 1,2 --reason why")
	}
	switch args[0] {
	case "list-abandoned":
		return backfillList(ctx, cfg, args[1:], out)
	case "retry":
		return backfillRetry(ctx, cfg, args[1:], out)
	}
	return fmt.Errorf("backfill: unknown sub-command %q (list-abandoned, retry)", args[0])
}

func backfillList(ctx context.Context, cfg config.Config, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("backfill list-abandoned", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print JSON")
	limit := fs.Int("limit", 1000, "at most this many rows")
	if err := fs.Parse(args); err != nil {
		return err
	}
	pool, err := openPool(ctx, cfg)
	if err != nil {
		return err
	}
	defer pool.Close()
	list, err := jobs.ListAbandoned(ctx, pool, *limit)
	if err != nil {
		return err
	}
	if *asJSON {
		return writeJSON(out, list)
	}
	if len(list) == 0 {
		fmt.Fprintln(out, "no abandoned markers")
		return nil
	}
	w := tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
	fmt.Fprintln(w, "MSG_ID\tSTATUS\tOUTCOME\tATTEMPTS\tENQUEUED\tABANDONED\tARCHIVED\tERROR")
	for _, a := range list {
		fmt.Fprintf(w, "%d\t%s\t%s\t%d\t%s\t%s\t%v\t%s\n", a.MsgID, a.Status, a.Outcome, a.Attempts,
			a.EnqueuedAt.Format(time.RFC3339), a.AbandonedAt.Format(time.RFC3339), a.Archived, a.Error)
	}
	return w.Flush()
}

func backfillRetry(ctx context.Context, cfg config.Config, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("backfill retry", flag.ContinueOnError)
	idList := fs.String("ids", "", "comma-separated msg_ids of abandoned markers")
	reason := fs.String("reason", "", "why (audit; required)")
	actor := fs.String("actor", defaultActor(), "who (audit)")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var ids []int64
	for _, s := range strings.Split(*idList, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		id, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return fmt.Errorf("--ids: %q is not a msg_id", s)
		}
		ids = append(ids, id)
	}
	if len(ids) == 0 || *reason == "" {
		return fmt.Errorf("usage: msgxctl backfill retry --ids 1,2 --reason why")
	}
	pool, err := openPool(ctx, cfg)
	if err != nil {
		return err
	}
	defer pool.Close()
	rep, err := jobs.RetryBackfill(ctx, pool, jobs.RetryRequest{IDs: ids, Actor: *actor, Reason: *reason, Now: time.Now()})
	if err != nil {
		return err
	}
	if *asJSON {
		return writeJSON(out, rep)
	}
	fmt.Fprintf(out, "%d marker(s) due again; the backfill sweep retries them at its next run: %v\n", len(rep.Retried), rep.Retried)
	if len(rep.Refused) > 0 {
		fmt.Fprintf(out, "not abandoned markers (left alone): %v\n", rep.Refused)
	}
	return nil
}
