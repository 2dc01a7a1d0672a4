package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/user"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/msgx/msgx/pkg/config"
	"github.com/msgx/msgx/pkg/processor"
	"github.com/msgx/msgx/pkg/status"
)

func init() {
	register("status", command{summary: "watermark, gaps, head, backlog, dead letters, markers, leaders, dispatcher lag", run: statusCmd})
	register("show", command{summary: "one message: state, attempts, errors, identity, marker (show <msg_id>)", run: showCmd})
	register("replay", command{summary: "requeue FAILED/DEAD messages by --class or --ids (--dry-run first)", run: replayCmd})
}

func openPool(ctx context.Context, cfg config.Config) (*pgxpool.Pool, error) {
	pool, err := pgxpool.New(ctx, cfg.PGURL)
	if err != nil {
		return nil, fmt.Errorf("connect PostgreSQL: %w", err)
	}
	return pool, nil
}

func writeJSON(out io.Writer, v any) error {
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func statusCmd(ctx context.Context, cfg config.Config, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("status", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print JSON")
	if err := fs.Parse(args); err != nil {
		return err
	}
	pool, err := openPool(ctx, cfg)
	if err != nil {
		return err
	}
	defer pool.Close()
	s, err := status.Read(ctx, pool, time.Now())
	if err != nil {
		return err
	}
	if *asJSON {
		return writeJSON(out, s)
	}
	w := tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
	fmt.Fprintf(w, "watermark\t%d\n", s.Watermark)
	if s.GapStart != nil {
		fmt.Fprintf(w, "open gap\tat %d, %.0fs old\n", *s.GapStart, *s.GapAge)
	} else {
		fmt.Fprintf(w, "open gap\tnone\n")
	}
	fmt.Fprintf(w, "skipped ids\t%d (late rows found later: %d)\n", s.SkippedIDs, s.LateFound)
	if s.Head != nil {
		fmt.Fprintf(w, "head\t%d %s, attempts %d, %.1fs old %s\n", s.Head.MsgID, s.Head.Status, s.Head.Attempts, s.Head.Age, s.Head.Reason)
	} else {
		fmt.Fprintf(w, "head\tnone (idle)\n")
	}
	fmt.Fprintf(w, "messages\t%s\n", status.Counts(s.ByStatus))
	fmt.Fprintf(w, "dead by class\t%s\n", status.Counts(s.DeadByClass))
	fmt.Fprintf(w, "markers owed\t%d (abandoned %d)\n", s.MarkersOwed, s.MarkersAbandoned)
	fmt.Fprintf(w, "flights\t%s\n", status.Counts(s.Flights))
	for _, t := range s.Outbox {
		age := "-"
		if t.Oldest != nil {
			age = fmt.Sprintf("%.1fs", *t.Oldest)
		}
		fmt.Fprintf(w, "outbox %s\tpending %d, dead %d, oldest pending %s\n", t.Target, t.Pending, t.Dead, age)
	}
	for _, l := range s.Leaders {
		stale := ""
		if l.Stale(cfg.Leader.SessionTimeout) {
			stale = fmt.Sprintf(" STALE (not renewed within the session timeout %s: holder gone or paused)", cfg.Leader.SessionTimeout)
		}
		fmt.Fprintf(w, "leader %s\tepoch %d, %s since %s, renewed %.1fs ago%s\n", l.Role, l.Epoch, l.Holder, l.AcquiredAt.Format(time.RFC3339), l.RenewalAge, stale)
	}
	return w.Flush()
}

const showSQL = `
SELECT to_jsonb(p) - 'raw' - 'raw_sha256' || jsonb_build_object('raw_sha256', encode(raw_sha256, 'hex'),
       'raw_length', length(raw)) FROM proc_state p WHERE msg_id = $1
UNION ALL
SELECT to_jsonb(h) - 'raw' - 'raw_sha256' || jsonb_build_object('raw_sha256', encode(raw_sha256, 'hex'),
       'raw_length', length(raw), 'archived', true) FROM proc_state_hst h WHERE msg_id = $1`

// showAuditSQL finds the audit rows naming a message (dlq-* rows name event ids instead).
const showAuditSQL = `SELECT action, actor, reason, at FROM replay_audit
 WHERE $1 = ANY(ids) AND action IN ('replay', 'backfill-retry', 'gap-skip') ORDER BY at`

func showCmd(ctx context.Context, cfg config.Config, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("show", flag.ContinueOnError)
	raw := fs.Bool("raw", false, "also print the raw message text")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("usage: msgxctl show [--raw] <msg_id>")
	}
	id, err := strconv.ParseInt(fs.Arg(0), 10, 64)
	if err != nil {
		return fmt.Errorf("msg_id %q: not a number", fs.Arg(0))
	}
	pool, err := openPool(ctx, cfg)
	if err != nil {
		return err
	}
	defer pool.Close()
	var doc map[string]any
	if err := pool.QueryRow(ctx, showSQL, id).Scan(&doc); err != nil {
		if err == pgx.ErrNoRows {
			return fmt.Errorf("message %d not found", id)
		}
		return fmt.Errorf("read message: %w", err)
	}
	rows, err := pool.Query(ctx, showAuditSQL, id)
	if err != nil {
		return fmt.Errorf("read audit: %w", err)
	}
	type audit struct {
		Action, Actor, Reason string
		At                    time.Time
	}
	audits, err := pgx.CollectRows(rows, pgx.RowToStructByPos[audit])
	if err != nil {
		return fmt.Errorf("read audit: %w", err)
	}
	doc["audit"] = audits
	if doc["attempts"], err = processor.Attempts(ctx, pool, id); err != nil {
		return err
	}
	if *raw {
		var text *string
		_ = pool.QueryRow(ctx, `SELECT raw FROM proc_state WHERE msg_id = $1 UNION ALL SELECT raw FROM proc_state_hst WHERE msg_id = $1`, id).Scan(&text)
		doc["raw"] = text
	}
	return writeJSON(out, doc)
}

func replayCmd(ctx context.Context, cfg config.Config, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	class := fs.String("class", "", "replay every FAILED/DEAD message of this class (CODEC_ERROR, UNSUPPORTED, INFRA, EXHAUSTED)")
	idList := fs.String("ids", "", "comma-separated msg_ids")
	dry := fs.Bool("dry-run", false, "only report what would be requeued and which later messages touched the same flights")
	reason := fs.String("reason", "", "why (audit)")
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
	pool, err := openPool(ctx, cfg)
	if err != nil {
		return err
	}
	defer pool.Close()
	rep, err := processor.Replay(ctx, pool, processor.ReplayRequest{
		Class: processor.Class(strings.ToUpper(*class)), IDs: ids, Actor: *actor, Reason: *reason, DryRun: *dry, Now: time.Now(),
	})
	if err != nil && !errors.Is(err, processor.ErrRefused) {
		return err
	}
	refused := err // processor.ErrRefused: the report (with the refusals) is printed, then the error
	if *asJSON {
		if err := writeJSON(out, rep); err != nil {
			return err
		}
		return refused
	}
	verb := "requeued"
	if rep.DryRun {
		verb = "would requeue"
	}
	fmt.Fprintf(out, "%s %d message(s)\n", verb, len(rep.Items))
	for _, it := range rep.Items {
		fmt.Fprintf(out, "  %d %s %s flights %v: %s\n", it.MsgID, it.Status, it.Class, it.FLIDs, it.Reason)
		if len(it.UnknownFLIDs) > 0 {
			fmt.Fprintf(out, "    flights not known yet: %v (it would end SKIPPED no-match again)\n", it.UnknownFLIDs)
		}
		if len(it.LaterTouches) > 0 {
			fmt.Fprintf(out, "    later messages already changed these flights: %v\n", it.LaterTouches)
		}
	}
	for _, r := range rep.Refused {
		fmt.Fprintf(out, "  refused %d: %s\n", r.MsgID, r.Why)
	}
	return refused
}

// defaultActor names who runs msgxctl in audit rows: user@host, or "unknown".
func defaultActor() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		h, _ := os.Hostname()
		return u.Username + "@" + h
	}
	return "unknown"
}
