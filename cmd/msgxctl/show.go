package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/msgx/msgx/pkg/config"
	"github.com/msgx/msgx/pkg/procstate"
	"github.com/msgx/msgx/pkg/status"
)

func init() {
	register("show", command{summary: "one message: state, attempts, errors, identity, marker, the flights it changed (show <msg_id> [--raw] [--json])", run: showCmd})
}

// showFirst are the fields the human form shows first, in this order; the others follow by name.
var showFirst = []string{"status", "error_class", "reason", "attempts", "next_attempt_at", "msg_type", "msg_styp",
	"identity_key", "content_differs", "received_at", "enqueued_at", "processing_started_at", "finished_at"}

func showCmd(ctx context.Context, cfg config.Config, args []string, out io.Writer) error {
	fs, asJSON := flags("show", "<msg_id> [--raw] [--json]",
		"Shows one message (live or archived): its processing state, identity, mailbox marker, the flights it changed (FLID and the version it gave each; msgxctl flight FLID shows one) and the audit rows naming it. --raw prints the message's XML text itself, nothing else. Times are RFC 3339 in the airport's time zone (MSGX_AIRPORT_TZ).", out)
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
		return fs.Usagef("msg_id %q is not a number", pos[0])
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
	loc := cfg.Location()
	if *raw {
		return showRaw(out, st.Message, *asJSON)
	}
	changed, err := status.FlightsChanged(ctx, pool, id)
	if err != nil {
		return err
	}
	doc := showDoc(st.Message, loc)
	doc["audit"] = st.Audit
	doc["attempt_history"] = st.Attempts // "attempts" is proc_state's count
	doc["flights"] = changed
	if *asJSON {
		return writeJSON(out, loc, doc)
	}
	return showText(out, loc, id, doc, st)
}

// showRaw prints a message's text as it arrived: the mailbox bytes themselves where the text
// copy is not them (a GB charset's bytes, or bytes PostgreSQL text cannot hold); in JSON those
// bytes are base64 (raw_bytes), beside the text copy when there is one.
func showRaw(out io.Writer, m status.Message, asJSON bool) error {
	if m.Raw == nil && m.RawBytes == nil {
		return fmt.Errorf("message %d: its text was cleared (MSGX_RAW_RETENTION)", m.MsgID)
	}
	if asJSON {
		doc := map[string]any{"msg_id": m.MsgID, "raw": m.Raw}
		if m.RawBytes != nil {
			doc["raw_bytes"] = m.RawBytes // encoding/json writes []byte as base64
		}
		return writeJSON(out, time.UTC, doc)
	}
	if m.RawBytes != nil {
		_, err := out.Write(m.RawBytes)
		return err
	}
	_, err := io.WriteString(out, *m.Raw)
	return err
}

// showDoc is a message's row under its column names, without its text (raw_length says how
// long it is); empty text as null. received_at, the mailbox's wall clock, is read in the
// airport's time zone (loc), so that it prints with its offset as every other time.
func showDoc(m status.Message, loc *time.Location) map[string]any {
	doc := map[string]any{
		"msg_id": m.MsgID, "status": m.Status, "error_class": orNull(m.Class), "reason": orNull(m.Reason),
		"attempts": m.Attempts, "next_attempt_at": m.NextAttemptAt, "identity_key": orNull(m.IdentityKey),
		"content_differs": m.ContentDiffers, "msg_type": orNull(m.Type), "msg_styp": orNull(m.Styp),
		"received_at": airportWall(loc, m.ReceivedAt), "enqueued_at": m.EnqueuedAt, "late": m.Late,
		"processing_started_at": m.StartedAt, "finished_at": m.FinishedAt,
		"backfill_next_at": m.BackfillNextAt, "backfill_attempts": m.BackfillAttempts,
		"backfill_error": orNull(m.BackfillError), "backfill_outcome": orNull(m.BackfillOutcome),
		"backfill_done_at": m.BackfillDoneAt, "backfill_abandoned_at": m.BackfillAbandonedAt, "marker_debt": m.MarkerDebt,
		"processing_through": m.ProcessingThrough, "crashes": m.Crashes, "deaths": m.Deaths,
		"raw_sha256": orNull(m.SHA256), "raw_length": nil,
	}
	if m.Raw != nil {
		doc["raw_length"] = utf8.RuneCountInString(*m.Raw)
	}
	if m.RawBytes != nil {
		doc["raw_bytes_length"] = len(m.RawBytes) // the mailbox bytes are kept apart (show --raw)
	}
	if m.Archived {
		doc["archived"] = true
		doc["archived_at"], doc["raw_cleared_at"] = m.ArchivedAt, m.RawClearedAt
	}
	return doc
}

func orNull(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// showValue is a field of showDoc as the human form prints it; "" for an unset one.
func showValue(loc *time.Location, v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case time.Time:
		return stamp(loc, x)
	case *time.Time:
		if x == nil {
			return ""
		}
		return stamp(loc, *x)
	case *int64:
		if x == nil {
			return ""
		}
		return strconv.FormatInt(*x, 10)
	}
	return fmt.Sprint(v)
}

// showText is show's human form: one "field  value" line per set field (the important ones
// first), then the flights it changed, the attempts and the audit rows.
func showText(out io.Writer, loc *time.Location, id int64, doc map[string]any, st status.MessageStory) error {
	title := fmt.Sprintf("message %d", id)
	if doc["archived"] == true {
		title += " (archived)"
	}
	fmt.Fprintln(out, title)
	w := tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
	done := map[string]bool{"msg_id": true, "archived": true, "audit": true, "attempt_history": true, "flights": true}
	line := func(k string) {
		if v := showValue(loc, doc[k]); !done[k] && v != "" {
			fmt.Fprintf(w, "  %s\t%s\n", k, v)
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
	showFlights(out, doc["flights"].([]status.FlightVersion))
	showHistory(out, loc, st.Attempts, st.Audit)
	return nil
}

// showFlights prints the flights a message changed.
func showFlights(out io.Writer, changed []status.FlightVersion) {
	if len(changed) == 0 {
		fmt.Fprintln(out, "flights changed: none (or their events are past the outbox's retention)")
		return
	}
	parts := make([]string, len(changed))
	for i, f := range changed {
		parts[i] = fmt.Sprintf("%d (version %d)", f.FLID, f.StateVersion)
	}
	fmt.Fprintf(out, "flights changed: %s\n", strings.Join(parts, ", "))
}

// showHistory prints a message's attempts and the audit rows naming it.
func showHistory(out io.Writer, loc *time.Location, attempts []procstate.Attempt, audits []status.Audit) {
	if len(attempts) == 0 {
		fmt.Fprintln(out, "attempt history: none")
	} else {
		fmt.Fprintln(out, "attempt history:")
		for _, a := range attempts {
			fmt.Fprintf(out, "  #%d %s epoch %d %s %s %s\n", a.Attempt, stamp(loc, a.At), a.Epoch, a.Outcome, a.Class, a.Reason)
		}
	}
	if len(audits) == 0 {
		fmt.Fprintln(out, "audit: none")
		return
	}
	fmt.Fprintln(out, "audit:")
	for _, a := range audits {
		fmt.Fprintf(out, "  %s %s by %s: %s\n", stamp(loc, a.At), a.Action, a.Actor, a.Reason)
	}
}
