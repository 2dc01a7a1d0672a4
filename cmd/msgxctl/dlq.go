package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/msgx/msgx/pkg/config"
	"github.com/msgx/msgx/pkg/event"
	"github.com/msgx/msgx/pkg/outbox"
)

func init() {
	register("dlq", command{
		summary: "dead-lettered Kafka events: dlq list | dlq replay --ids|--flid | dlq skip --ids --reason",
		run:     dlqCmd,
	})
}

var dlqSynopsis = map[string]string{
	"list":   "[--target KAFKA:msg|KAFKA:schd] [--flid F] [--limit N] [--all] [--json]",
	"replay": "(--ids 1,2,… | --flid F [--target T]) [--reason R] [--actor A] [--dry-run] [--json]",
	"skip":   "--ids 1,2,… --reason R [--actor A] [--dry-run] [--json]",
}

const dlqUsage = `Dead-lettered Kafka events:
  msgxctl dlq list   [--target KAFKA:msg|KAFKA:schd] [--flid F] [--limit N] [--all] [--json]
  msgxctl dlq replay (--ids 1,2,… | --flid F [--target T]) [--reason R] [--actor A] [--dry-run] [--json]
  msgxctl dlq skip   --ids 1,2,… --reason R [--actor A] [--dry-run] [--json]

replay moves DEAD events back to PENDING with a fresh attempt budget: the dispatcher sends them
in their FLID's order before the later events they hold. skip gives up on DEAD events for good
(they become SKIPPED, never sent, and their FLID's later events flow); skipped events are kept
past the SENT retention and listed with list --all. Both write an audit row (replay_audit).`

func dlqCmd(ctx context.Context, cfg config.Config, args []string, out io.Writer) error {
	sub, args, err := subcommand("dlq", dlqUsage, []string{"list", "replay", "skip"}, args, out)
	if err != nil {
		return err
	}
	fs, asJSON := flags("dlq "+sub, dlqSynopsis[sub], dlqUsage, out)
	target := fs.String("target", "", "KAFKA:msg or KAFKA:schd (default: both)")
	flid := fs.String("flid", "", "select one FLID")
	change := newChangeFlags(fs, "comma-separated event ids", "why (written to the audit row)")
	reason, actor := change.reason, change.actor
	limit := fs.Int("limit", 100, "list at most this many")
	dryRun := fs.Bool("dry-run", false, "show what would change, change nothing")
	all := fs.Bool("all", false, "list: the SKIPPED events too")
	ids, err := change.parse(args)
	if err != nil {
		return err
	}
	if *target != "" && *target != event.TargetMsg && *target != event.TargetSchd {
		return fs.Usagef("--target must be %s or %s, got %q", event.TargetMsg, event.TargetSchd, *target)
	}
	switch {
	case sub == "replay" && (len(ids) == 0) == (*flid == ""):
		return fs.Usagef("give exactly one of --ids or --flid")
	case sub == "replay" && len(ids) > 0 && *target != "":
		return fs.Usagef("--target goes with --flid")
	case sub == "skip" && (len(ids) == 0 || *flid != ""):
		return fs.Usagef("give --ids (skipping is per event)")
	case sub == "skip" && strings.TrimSpace(*reason) == "":
		return fs.Usagef("--reason is required (audit)")
	}

	pool, err := openPool(ctx, cfg)
	if err != nil {
		return err
	}
	defer pool.Close()
	store, err := outbox.New(pool, cfg.OutboxPolicy())
	if err != nil {
		return err
	}
	who := outbox.Admin{Actor: *actor, Reason: *reason, DryRun: *dryRun}
	now, loc := time.Now(), cfg.Location()
	switch sub {
	case "list":
		return dlqList(ctx, store, outbox.DeadFilter{Target: *target, FLID: *flid, Limit: *limit, All: *all}, loc, *asJSON, out)
	case "replay":
		done, err := store.Replay(ctx, outbox.Selector{IDs: ids, FLID: *flid, Target: *target}, who, now)
		if err != nil {
			return err
		}
		return dlqReport(out, loc, "replayed", "back to PENDING", done, ids, who.DryRun, *asJSON)
	default: // skip
		done, err := store.Skip(ctx, ids, who, now)
		if err != nil {
			return err
		}
		return dlqReport(out, loc, "skipped", "never sent", done, ids, who.DryRun, *asJSON)
	}
}

// dlqList prints the dead (with --all also the skipped) events of the filter.
func dlqList(ctx context.Context, store *outbox.Store, f outbox.DeadFilter, loc *time.Location, asJSON bool, out io.Writer) error {
	dead, err := store.ListDead(ctx, f)
	if err != nil {
		return err
	}
	if asJSON {
		return writeJSON(out, loc, dead)
	}
	if len(dead) == 0 {
		fmt.Fprintln(out, "no dead letters")
		return nil
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "EVENT_ID\tSTATUS\tTARGET\tFLID\tTYPE\tVERSION\tMSG_ID\tATTEMPTS\tHOLDING\tCREATED\tLAST_ERROR")
	for _, d := range dead {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%s\t%s\n", d.EventID, d.Status, d.Target, d.FLID, d.Type, d.StateVersion,
			d.MsgID, d.Attempts, d.Holding, stamp(loc, d.CreatedAt), dlqOneLine(d.LastError, 80))
	}
	return tw.Flush()
}

func dlqReport(out io.Writer, loc *time.Location, verb, effect string, done, asked []int64, dryRun, asJSON bool) error {
	var notDead []int64
	got := map[int64]bool{}
	for _, id := range done {
		got[id] = true
	}
	for _, id := range asked {
		if !got[id] {
			notDead = append(notDead, id)
		}
	}
	var refused error
	if len(done) == 0 && len(asked) > 0 {
		refused = fmt.Errorf("dlq: none of the events asked for is DEAD: nothing %s", verb)
	}
	if asJSON {
		if err := writeJSON(out, loc, map[string]any{verb: done, "not_dead": notDead, "dry_run": dryRun}); err != nil {
			return err
		}
		return refused
	}
	prefix := ""
	if dryRun {
		prefix = "dry run, nothing changed: would have "
	}
	fmt.Fprintf(out, "%s%s %d event(s) (%s): %v\n", prefix, verb, len(done), effect, done)
	if len(notDead) > 0 {
		fmt.Fprintf(out, "not DEAD, left as they are: %v\n", notDead)
	}
	return refused
}

func dlqOneLine(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > n {
		return s[:n-1] + "…"
	}
	return s
}
