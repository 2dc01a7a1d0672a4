package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/msgx/msgx/pkg/config"
	"github.com/msgx/msgx/pkg/flightstore"
)

func init() {
	register("flight", command{summary: "one flight: current state, purges, version history with the message behind each version (flight FLID [--json])", run: flightCmd})
	register("flights", command{summary: "the flights of an operation day, one line each (flights --day YYYY-MM-DD [--json])", run: flightsCmd})
}

const flightAbout = `Shows one flight: its current state as the read API serves it (GET /flights/{flid}; its
fields are the airport's wall clock, docs/api.md), what the history sweep kept when it purged it,
and its versions newest first, each with its event's target and status and the message behind it
(msgxctl show <msg_id> shows that one). The outbox keeps sent events for MSGX_EVENT_RETENTION
only: older versions are not listed. Other times are RFC 3339 in the airport's time zone.`

// flightDoc is flight's --json.
type flightDoc struct {
	FLID     int64                 `json:"flid"`
	State    json.RawMessage       `json:"state"` // as GET /flights/{flid} serves it; null when not stored
	Purges   []flightstore.Purge   `json:"purges"`
	Versions []flightstore.Version `json:"versions"`
}

func flightCmd(ctx context.Context, cfg config.Config, args []string, out io.Writer) error {
	fs, asJSON := flags("flight", "FLID [--versions N] [--json]", flightAbout, out)
	limit := fs.Int("versions", 200, "list at most this many versions (events), newest first")
	pos, err := fs.Parse(args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return fs.Usagef("want one FLID, got %d argument(s)", len(pos))
	}
	flid, err := strconv.ParseInt(pos[0], 10, 64)
	if err != nil || flid <= 0 {
		return fs.Usagef("FLID %q is not a number", pos[0])
	}
	if *limit < 1 {
		return fs.Usagef("--versions must be at least 1, got %d", *limit)
	}
	pool, err := openPool(ctx, cfg)
	if err != nil {
		return err
	}
	defer pool.Close()
	h, err := flightstore.ReadHistory(ctx, pool, flid, *limit)
	if err != nil {
		return err
	}
	if h.State == nil && len(h.Purges) == 0 && len(h.Versions) == 0 {
		return fmt.Errorf("flight %d not found (never seen, or past MSGX_FLIGHT_HISTORY_RETENTION)", flid)
	}
	doc := flightDoc{FLID: flid, State: json.RawMessage("null"), Purges: h.Purges, Versions: h.Versions}
	if h.State != nil {
		doc.State = h.State.AppendJSON(nil)
	}
	if *asJSON {
		return writeJSON(out, cfg.Location(), doc)
	}
	return flightText(out, cfg.Location(), doc)
}

// flightText is flight's human form: a title, the state's set fields by name, the purges, the
// versions.
func flightText(out io.Writer, loc *time.Location, d flightDoc) error {
	state, err := decodeObject(d.State)
	if err != nil {
		return fmt.Errorf("read flight %d: %w", d.FLID, err)
	}
	if state == nil && len(d.Purges) > 0 { // purged: what the sweep kept
		final, err := decodeObject(d.Purges[0].FinalState)
		if err != nil {
			return fmt.Errorf("read purged flight %d: %w", d.FLID, err)
		}
		if state, err = decodeObject(final["flight"]); err != nil {
			return fmt.Errorf("read purged flight %d: %w", d.FLID, err)
		}
	}
	fmt.Fprintf(out, "flight %d %s%s %s, version %s, operation day %s\n", d.FLID, text(state["alcd"]), text(state["flno"]),
		orDash(text(state["state"])), orDash(text(state["state_version"])), orDash(text(state["operation_day"])))
	w := tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
	keys := make([]string, 0, len(state))
	for k := range state {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if v := text(state[k]); v != "" && v != "[]" {
			fmt.Fprintf(w, "  %s\t%s\n", k, v)
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	for _, p := range d.Purges {
		fmt.Fprintf(out, "purged at version %d on %s (operation day %s): %s\n", p.StateVersion, stamp(loc, p.PurgedAt), p.OperationDay, p.Reason)
	}
	if len(d.Versions) == 0 {
		fmt.Fprintln(out, "versions: none in the outbox (past its retention)")
		return nil
	}
	fmt.Fprintln(out, "versions (newest first):")
	w = tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
	fmt.Fprintln(w, "  VERSION\tTARGET\tEVENT\tTYPE\tSTATUS\tCREATED\tSENT\tMESSAGE")
	for _, v := range d.Versions {
		msg := "-"
		if v.MsgID != nil {
			msg = fmt.Sprintf("%d %s %s", *v.MsgID, v.MsgType, v.MsgStyp)
		}
		fmt.Fprintf(w, "  %d\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", v.StateVersion, v.Target, v.EventID, v.EventType, v.Status,
			stamp(loc, v.CreatedAt), stampOf(loc, v.SentAt), msg)
	}
	return w.Flush()
}

func flightsCmd(ctx context.Context, cfg config.Config, args []string, out io.Writer) error {
	fs, asJSON := flags("flights", "--day YYYY-MM-DD [--json]",
		"Lists the stored flights (ACTIVE and DELETED) of one operation day (the airport's calendar day of SODT), one line each, by FLID: the flights GET /all/flights?day= serves. SODT is printed in RFC 3339 with the airport's offset.", out)
	dayS := fs.String("day", "", "the operation day, YYYY-MM-DD (required)")
	if err := fs.NoArgs(args); err != nil {
		return err
	}
	day, err := time.Parse(time.DateOnly, *dayS)
	if err != nil {
		return fs.Usagef("--day: want YYYY-MM-DD, got %q", *dayS)
	}
	pool, err := openPool(ctx, cfg)
	if err != nil {
		return err
	}
	defer pool.Close()
	list, err := flightstore.Day(ctx, pool, day)
	if err != nil {
		return err
	}
	loc := cfg.Location()
	for i := range list {
		list[i].SODT = airportWall(loc, list[i].SODT)
	}
	if *asJSON {
		return writeJSON(out, loc, list)
	}
	if len(list) == 0 {
		fmt.Fprintf(out, "no flights on %s\n", *dayS)
		return nil
	}
	w := tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
	fmt.Fprintln(w, "FLID\tFLIGHT\tMVIN\tSTATE\tVERSION\tSODT\tMAID")
	for _, f := range list {
		maid := "-"
		if f.MAID != nil {
			maid = strconv.FormatInt(*f.MAID, 10)
		}
		fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%d\t%s\t%s\n", f.FLID, orDash(f.ALCD+f.FLNO), orDash(f.MVIN), f.State, f.Version,
			stampOf(loc, f.SODT), maid)
	}
	return w.Flush()
}

// decodeObject decodes a JSON object into its members as written; nil for null or nothing.
func decodeObject(b []byte) (map[string]json.RawMessage, error) {
	if len(b) == 0 {
		return nil, nil
	}
	var doc map[string]json.RawMessage
	err := json.Unmarshal(b, &doc)
	return doc, err
}

// text shows a JSON value: a string as itself, null as "", anything else as written.
func text(v json.RawMessage) string {
	var s string
	if err := json.Unmarshal(v, &s); err == nil {
		return s
	}
	if string(v) == "null" {
		return ""
	}
	return string(v)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
