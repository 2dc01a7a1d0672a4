package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

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

const dlqUsage = `usage:
  msgxctl dlq list   [--target KAFKA:msg|KAFKA:schd] [--flid F] [--limit N] [--all] [--json]
  msgxctl dlq replay (--ids 1,2,… | --flid F [--target T]) [--reason R] [--actor A] [--dry-run] [--json]
  msgxctl dlq skip   --ids 1,2,… --reason R [--actor A] [--dry-run] [--json]

replay moves DEAD events back to PENDING with a fresh attempt budget: the dispatcher sends them
in their FLID's order before the later events they hold. skip gives up on DEAD events for good
(they become SKIPPED, never sent, and their FLID's later events flow); skipped events are kept
past the SENT retention and listed with list --all. Both write an audit row (replay_audit).`

func dlqCmd(ctx context.Context, cfg config.Config, args []string, out io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprintln(out, dlqUsage)
		if len(args) == 0 {
			return errors.New("dlq: no sub-command")
		}
		return nil
	}
	sub, args := args[0], args[1:]
	fs := flag.NewFlagSet("dlq "+sub, flag.ContinueOnError)
	fs.SetOutput(out)
	target := fs.String("target", "", "KAFKA:msg or KAFKA:schd (default: both)")
	flid := fs.String("flid", "", "select one FLID")
	idList := fs.String("ids", "", "comma-separated event ids")
	reason := fs.String("reason", "", "why (written to the audit row)")
	actor := fs.String("actor", defaultActor(), "who (written to the audit row)")
	limit := fs.Int("limit", 100, "list at most this many")
	dryRun := fs.Bool("dry-run", false, "show what would change, change nothing")
	asJSON := fs.Bool("json", false, "JSON output")
	all := fs.Bool("all", false, "list: the SKIPPED events too")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("dlq %s: unexpected arguments %v", sub, fs.Args())
	}
	if *target != "" && *target != event.TargetMsg && *target != event.TargetSchd {
		return fmt.Errorf("dlq: --target must be %s or %s", event.TargetMsg, event.TargetSchd)
	}
	ids, err := dlqParseIDs(*idList)
	if err != nil {
		return err
	}

	pool, err := pgxpool.New(ctx, cfg.PGURL)
	if err != nil {
		return fmt.Errorf("connect PostgreSQL: %w", err)
	}
	defer pool.Close()
	store, err := outbox.New(pool, cfg.OutboxPolicy())
	if err != nil {
		return err
	}
	who := outbox.Admin{Actor: *actor, Reason: *reason, DryRun: *dryRun}
	now := time.Now()

	switch sub {
	case "list":
		dead, err := store.ListDead(ctx, outbox.DeadFilter{Target: *target, FLID: *flid, Limit: *limit, All: *all})
		if err != nil {
			return err
		}
		if *asJSON {
			if dead == nil {
				dead = []outbox.DeadEvent{}
			}
			return json.NewEncoder(out).Encode(dead)
		}
		if len(dead) == 0 {
			fmt.Fprintln(out, "no dead letters")
			return nil
		}
		tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "EVENT_ID\tSTATUS\tTARGET\tFLID\tTYPE\tVERSION\tMSG_ID\tATTEMPTS\tHOLDING\tCREATED\tLAST_ERROR")
		for _, d := range dead {
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%s\t%s\n", d.EventID, d.Status, d.Target, d.FLID, d.Type, d.StateVersion,
				d.MsgID, d.Attempts, d.Holding, d.CreatedAt.UTC().Format(time.RFC3339), dlqOneLine(d.LastError, 80))
		}
		return tw.Flush()
	case "replay":
		if (len(ids) == 0) == (*flid == "") {
			return errors.New("dlq replay: give exactly one of --ids or --flid")
		}
		if len(ids) > 0 && *target != "" {
			return errors.New("dlq replay: --target goes with --flid")
		}
		done, err := store.Replay(ctx, outbox.Selector{IDs: ids, FLID: *flid, Target: *target}, who, now)
		if err != nil {
			return err
		}
		return dlqReport(out, "replayed", "back to PENDING", done, ids, who.DryRun, *asJSON)
	case "skip":
		if len(ids) == 0 || *flid != "" {
			return errors.New("dlq skip: give --ids (skipping is per event)")
		}
		if strings.TrimSpace(*reason) == "" {
			return errors.New("dlq skip: --reason is required")
		}
		done, err := store.Skip(ctx, ids, who, now)
		if err != nil {
			return err
		}
		return dlqReport(out, "skipped", "never sent", done, ids, who.DryRun, *asJSON)
	default:
		fmt.Fprintln(out, dlqUsage)
		return fmt.Errorf("dlq: unknown sub-command %q", sub)
	}
}

func dlqReport(out io.Writer, verb, effect string, done, asked []int64, dryRun, asJSON bool) error {
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
	if asJSON {
		return json.NewEncoder(out).Encode(map[string]any{verb: dlqNonNil(done), "not_dead": dlqNonNil(notDead), "dry_run": dryRun})
	}
	prefix := ""
	if dryRun {
		prefix = "dry run, nothing changed: would have "
	}
	fmt.Fprintf(out, "%s%s %d event(s) (%s): %v\n", prefix, verb, len(done), effect, done)
	if len(notDead) > 0 {
		fmt.Fprintf(out, "not DEAD, left as they are: %v\n", notDead)
	}
	return nil
}

func dlqNonNil(ids []int64) []int64 {
	if ids == nil {
		return []int64{}
	}
	return ids
}

func dlqParseIDs(s string) ([]int64, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var ids []int64
	for _, part := range strings.Split(s, ",") {
		id, err := strconv.ParseInt(strings.TrimSpace(part), 10, 64)
		if err != nil || id <= 0 {
			return nil, fmt.Errorf("dlq: bad event id %q in --ids", part)
		}
		ids = append(ids, id)
	}
	return ids, nil
}

func dlqOneLine(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > n {
		return s[:n-1] + "…"
	}
	return s
}
