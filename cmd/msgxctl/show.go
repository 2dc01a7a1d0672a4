package main

import (
	"context"
	"errors"
	"fmt"
	"github.com/msgx/msgx/pkg/processor"
	"io"
	"sort"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/msgx/msgx/pkg/config"
)

func init() {
	register("show", command{summary: "one message: state, attempts, errors, identity, marker (show <msg_id> [--raw] [--json])", run: showCmd})
}

// showAudit is one audit row naming the message.
type showAudit struct {
	Action string    `json:"action"`
	Actor  string    `json:"actor"`
	Reason string    `json:"reason"`
	At     time.Time `json:"at"`
}

// showFirst are the fields the human form shows first, in this order; the others follow by name.
var showFirst = []string{"status", "error_class", "reason", "attempts", "next_attempt_at", "msg_type", "msg_styp",
	"identity_key", "content_differs", "received_at", "enqueued_at", "processing_started_at", "finished_at"}

func showCmd(ctx context.Context, cfg config.Config, args []string, out io.Writer) error {
	fs, asJSON := flags("show", "<msg_id> [--raw] [--json]",
		"Shows one message (live or archived): its processing state, identity, mailbox marker and the audit rows naming it. --raw prints the message's XML text itself, nothing else.", out)
	raw := fs.Bool("raw", false, "print the message's XML text as it arrived (nothing else)")
	pos, err := fs.Parse(args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return fs.Usagef("want one <msg_id>, got %d argument(s)", len(pos))
	}
	id, err := strconv.ParseInt(pos[0], 10, 64)
	if err != nil || id <= 0 {
		return fs.Refusef("msg_id %q is not a number", pos[0])
	}
	pool, err := openPool(ctx, cfg)
	if err != nil {
		return err
	}
	defer pool.Close()
	if *raw {
		var text *string
		if err := pool.QueryRow(ctx, showRawSQL, id).Scan(&text); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return fmt.Errorf("message %d not found", id)
			}
			return fmt.Errorf("read message text: %w", err)
		}
		if text == nil {
			return fmt.Errorf("message %d: its text was cleared (MSGX_RAW_RETENTION)", id)
		}
		if *asJSON {
			return writeJSON(out, map[string]any{"msg_id": id, "raw": *text})
		}
		_, err := io.WriteString(out, *text)
		return err
	}
	var doc map[string]any
	if err := pool.QueryRow(ctx, showSQL, id).Scan(&doc); err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("message %d not found", id)
		}
		return fmt.Errorf("read message: %w", err)
	}
	rows, err := pool.Query(ctx, showAuditSQL, id)
	if err != nil {
		return fmt.Errorf("read audit: %w", err)
	}
	audits, err := pgx.CollectRows(rows, pgx.RowToStructByPos[showAudit])
	if err != nil {
		return fmt.Errorf("read audit: %w", err)
	}
	if audits == nil {
		audits = []showAudit{}
	}
	doc["audit"] = audits
	attempts, err := processor.Attempts(ctx, pool, id)
	if err != nil {
		return err
	}
	doc["attempt_history"] = attempts // "attempts" is proc_state's count
	if *asJSON {
		return writeJSON(out, doc)
	}
	return showText(out, id, doc, attempts, audits)
}

// showText is show's human form: one "field  value" line per set field (the important ones
// first), then the audit rows.
func showText(out io.Writer, id int64, doc map[string]any, attempts []processor.Attempt, audits []showAudit) error {
	title := fmt.Sprintf("message %d", id)
	if doc["archived"] == true {
		title += " (archived)"
	}
	fmt.Fprintln(out, title)
	w := tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
	done := map[string]bool{"msg_id": true, "archived": true, "audit": true, "attempt_history": true}
	line := func(k string) {
		if v, ok := doc[k]; ok && !done[k] && v != nil && v != "" {
			fmt.Fprintf(w, "  %s\t%v\n", k, v)
		}
		done[k] = true
	}
	for _, k := range showFirst {
		line(k)
	}
	rest := make([]string, 0, len(doc))
	for k := range doc {
		rest = append(rest, k)
	}
	sort.Strings(rest)
	for _, k := range rest {
		line(k)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if len(attempts) == 0 {
		fmt.Fprintln(out, "attempt history: none")
	} else {
		fmt.Fprintln(out, "attempt history:")
		for _, a := range attempts {
			fmt.Fprintf(out, "  #%d %s epoch %d %s %s %s\n", a.Attempt, a.At.UTC().Format(time.RFC3339), a.Epoch, a.Outcome, a.Class, a.Reason)
		}
	}
	if len(audits) == 0 {
		fmt.Fprintln(out, "audit: none")
		return nil
	}
	fmt.Fprintln(out, "audit:")
	for _, a := range audits {
		fmt.Fprintf(out, "  %s %s by %s: %s\n", a.At.UTC().Format(time.RFC3339), a.Action, a.Actor, a.Reason)
	}
	return nil
}
