package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/msgx/msgx/pkg/config"
	"github.com/msgx/msgx/pkg/processor"
	"github.com/msgx/msgx/pkg/status"
)

func init() {
	register("show", command{summary: "one message: state, attempts, errors, identity, marker (show <msg_id> [--raw] [--json])", run: showCmd})
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
	st, err := status.ReadMessage(ctx, pool, id)
	if errors.Is(err, status.ErrNoMessage) {
		return fmt.Errorf("message %d not found", id)
	}
	if err != nil {
		return err
	}
	if *raw {
		return showRaw(out, id, st.Message.Raw, *asJSON)
	}
	doc := showDoc(st.Message)
	doc["audit"] = st.Audit
	doc["attempt_history"] = st.Attempts // "attempts" is proc_state's count
	if *asJSON {
		return writeJSON(out, doc)
	}
	return showText(out, id, doc, st.Attempts, st.Audit)
}

// showRaw prints a message's text as it arrived.
func showRaw(out io.Writer, id int64, text *string, asJSON bool) error {
	if text == nil {
		return fmt.Errorf("message %d: its text was cleared (MSGX_RAW_RETENTION)", id)
	}
	if asJSON {
		return writeJSON(out, map[string]any{"msg_id": id, "raw": *text})
	}
	_, err := io.WriteString(out, *text)
	return err
}

// showDoc is a message's row under its column names, without its text (raw_length says how
// long it is); times read as PostgreSQL writes them in JSON, empty text as null.
func showDoc(m status.Message) map[string]any {
	doc := map[string]any{
		"msg_id": m.MsgID, "status": m.Status, "error_class": orNull(m.Class), "reason": orNull(m.Reason),
		"attempts": m.Attempts, "next_attempt_at": pgTime(m.NextAttemptAt), "identity_key": orNull(m.IdentityKey),
		"content_differs": m.ContentDiffers, "msg_type": orNull(m.Type), "msg_styp": orNull(m.Styp),
		"received_at": pgWall(m.ReceivedAt), "enqueued_at": pgTime(&m.EnqueuedAt), "late": m.Late,
		"processing_started_at": pgTime(m.StartedAt), "finished_at": pgTime(m.FinishedAt),
		"backfill_next_at": pgTime(m.BackfillNextAt), "backfill_attempts": m.BackfillAttempts,
		"backfill_error": orNull(m.BackfillError), "backfill_outcome": orNull(m.BackfillOutcome),
		"backfill_done_at": pgTime(m.BackfillDoneAt), "backfill_abandoned_at": pgTime(m.BackfillAbandonedAt),
		"processing_through": nil, "crashes": m.Crashes, "deaths": m.Deaths,
		"raw_sha256": orNull(m.SHA256), "raw_length": nil,
	}
	if m.ProcessingThrough != nil {
		doc["processing_through"] = *m.ProcessingThrough
	}
	if m.Raw != nil {
		doc["raw_length"] = utf8.RuneCountInString(*m.Raw)
	}
	if m.Archived {
		doc["archived"] = true
		doc["archived_at"], doc["raw_cleared_at"] = pgTime(m.ArchivedAt), pgTime(m.RawClearedAt)
	}
	return doc
}

func orNull(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// pgTime writes a timestamptz as PostgreSQL's JSON does; nil stays null.
func pgTime(t *time.Time) any {
	if t == nil {
		return nil
	}
	return t.Format("2006-01-02T15:04:05.999999-07:00")
}

// pgWall writes a timestamp without time zone as PostgreSQL's JSON does; nil stays null.
func pgWall(t *time.Time) any {
	if t == nil {
		return nil
	}
	return t.Format("2006-01-02T15:04:05.999999")
}

// showText is show's human form: one "field  value" line per set field (the important ones
// first), then the attempts and the audit rows.
func showText(out io.Writer, id int64, doc map[string]any, attempts []processor.Attempt, audits []status.Audit) error {
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
