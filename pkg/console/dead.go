package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/msgx/msgx/pkg/event"
	"github.com/msgx/msgx/pkg/outbox"
	"github.com/msgx/msgx/pkg/procstate"
	"github.com/msgx/msgx/pkg/sis"
)

// deadPage is the dead letters' triage: the filtered messages by group with counts, one page of
// them, the DEAD Kafka events of a target, and the latest audited actions.
type deadPage struct {
	F          deadFilter
	Groups     []deadGroup
	Messages   []deadMessage
	Total      int64
	Acked      int64  // acknowledged messages of the filter (hidden unless F.ShowAcked)
	Page, Last int    // 1-based
	Query      string // the filter as a query string (for the pages' links)
	FormID     string // the one-time id of the page's form (a flight's schedule request)
	Target     string
	Events     []outbox.DeadEvent
	Audit      []auditFull
	AllClasses []string
}

// deadFilter is what the triage is narrowed to.
type deadFilter struct {
	Class, Type, Reason, FLID string
	From, To                  string // datetime-local values in airport time
	Group                     string
	ShowAcked                 bool // acknowledged messages too (hidden by default)
	from, to                  *time.Time
}

type deadGroup struct {
	Group, Class string
	Count        int64
	Latest       time.Time
}

type deadMessage struct {
	MsgID         int64
	Status, Class string
	Reason        string
	Attempts      int
	Type, Styp    string
	At            time.Time
	Group         string
	FLID          string
	Acked         bool
	Total         int64
	Notes         []note `db:"-"` // every note, oldest first
}

// Replayable reports whether replay may take the message (procstate.Replayable's rule).
func (m deadMessage) Replayable() bool {
	ok, _ := procstate.Replayable(procstate.Status(m.Status), procstate.Class(m.Class), m.Reason)
	return ok
}

type auditFull struct {
	Action, Actor, Reason, Selector string
	IDs                             []int64
	At                              time.Time
}

const (
	deadPageSize = 50
	deadEvents   = 200
)

// noMatchClass is the class the triage gives the SKIPPED no-match messages (deadFilteredSQL).
const noMatchClass = "NO-MATCH"

// allClasses are the error classes and NO-MATCH, the SKIPPED messages whose flight was unknown.
var allClasses = func() []string {
	out := make([]string, 0, len(procstate.Classes)+1)
	for _, c := range procstate.Classes {
		out = append(out, string(c))
	}
	return append(out, noMatchClass)
}()

// readDeadFilter reads the triage filter from a query or a form.
func (s *Server) readDeadFilter(v url.Values) (deadFilter, error) {
	f := deadFilter{
		Class: strings.ToUpper(strings.TrimSpace(v.Get("class"))), Type: strings.ToUpper(strings.TrimSpace(v.Get("type"))),
		Reason: strings.TrimSpace(v.Get("reason_text")), FLID: strings.TrimSpace(v.Get("flid")),
		From: strings.TrimSpace(v.Get("from")), To: strings.TrimSpace(v.Get("to")), Group: v.Get("group"),
		ShowAcked: v.Get("acked") != "",
	}
	if f.Class != "" && !slices.Contains(allClasses, f.Class) {
		return f, userError{"Unknown class."}
	}
	if f.FLID != "" {
		if _, err := strconv.ParseInt(f.FLID, 10, 64); err != nil {
			return f, userError{"A FLID is a number."}
		}
	}
	var err error
	if f.from, err = s.localTime(f.From); err != nil {
		return f, err
	}
	f.to, err = s.localTime(f.To)
	return f, err
}

// localTime reads a datetime-local value in airport time (nil when empty).
func (s *Server) localTime(v string) (*time.Time, error) {
	if v == "" {
		return nil, nil
	}
	t, err := time.ParseInLocation("2006-01-02T15:04", v, s.d.Location)
	if err != nil {
		return nil, userError{"A time is YYYY-MM-DDThh:mm (airport time)."}
	}
	return &t, nil
}

func (f deadFilter) args() []any {
	return []any{f.Class, f.Type, f.Reason, f.FLID, f.from, f.to, f.Group, f.ShowAcked, sis.ValuePattern}
}

// query is the filter as a query string.
func (f deadFilter) query() string {
	v := url.Values{}
	acked := ""
	if f.ShowAcked {
		acked = "1"
	}
	for k, x := range map[string]string{"class": f.Class, "type": f.Type, "reason_text": f.Reason, "flid": f.FLID, "from": f.From, "to": f.To,
		"group": f.Group, "acked": acked} {
		if x != "" {
			v.Set(k, x)
		}
	}
	return v.Encode()
}

// String is the filter as an audit row's selector names it.
func (f deadFilter) String() string {
	if q := f.query(); q != "" {
		return "dead letters: " + q
	}
	return "dead letters: all"
}

func (s *Server) dead(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	f, err := s.readDeadFilter(q)
	if err != nil {
		return err
	}
	p := deadPage{F: f, Query: f.query(), Target: q.Get("target"), AllClasses: allClasses, Page: 1, FormID: newFormID()}
	if p.Target != "" && p.Target != event.TargetMsg && p.Target != event.TargetSchd {
		return userError{"Unknown target."}
	}
	if n, err := strconv.Atoi(q.Get("page")); err == nil && n > 1 && n <= 100000 {
		p.Page = n
	}
	if p.Groups, err = collect[deadGroup](s, r, deadGroupsSQL, f.args()...); err != nil {
		return fmt.Errorf("group dead messages: %w", err)
	}
	args := append(f.args(), deadPageSize, (p.Page-1)*deadPageSize)
	if p.Messages, err = collect[deadMessage](s, r, deadPageSQL, args...); err != nil {
		return fmt.Errorf("list dead messages: %w", err)
	}
	if len(p.Messages) > 0 {
		p.Total = p.Messages[0].Total
	} else {
		p.Total = groupTotal(p.Groups, f.Group)
	}
	if err := s.withNotes(r.Context(), p.Messages); err != nil {
		return err
	}
	if err := s.d.Pool.QueryRow(r.Context(), deadAckedSQL, f.args()...).Scan(&p.Acked); err != nil {
		return fmt.Errorf("count acknowledged dead messages: %w", err)
	}
	p.Last = max(1, int((p.Total+deadPageSize-1)/deadPageSize))
	if p.Events, err = s.d.Outbox.ListDead(r.Context(), outbox.DeadFilter{Target: p.Target, Limit: deadEvents}); err != nil {
		return err
	}
	if p.Audit, err = collect[auditFull](s, r, recentAuditSQL, 20); err != nil {
		return fmt.Errorf("read audit: %w", err)
	}
	s.render(w, r, http.StatusOK, "dead", "Dead letters", p)
	return nil
}

// deadCSV exports every message of the dead letters' filter (at most maxExport) as CSV, with
// every note on each.
func (s *Server) deadCSV(w http.ResponseWriter, r *http.Request) error {
	f, err := s.readDeadFilter(r.URL.Query())
	if err != nil {
		return err
	}
	ms, err := collect[deadMessage](s, r, deadPageSQL, append(f.args(), maxExport, 0)...)
	if err != nil {
		return fmt.Errorf("list dead messages: %w", err)
	}
	if err := s.withNotes(r.Context(), ms); err != nil {
		return err
	}
	rows := make([][]string, len(ms))
	for i, m := range ms {
		notes := make([]string, len(m.Notes))
		for j, n := range m.Notes {
			notes[j] = fmt.Sprintf("%s (%s, %s%s)", n.Text, n.Actor, s.csvTime(n.At), map[bool]string{true: ", acknowledged"}[n.Acked])
		}
		rows[i] = []string{strconv.FormatInt(m.MsgID, 10), m.Status, m.Class, m.Type, m.Styp, m.FLID, strconv.Itoa(m.Attempts),
			s.csvTime(m.At), m.Reason, m.Group, strconv.FormatBool(m.Acked), strings.Join(notes, "; ")}
	}
	return writeCSV(w, "dead-letters", []string{"msg_id", "status", "class", "type", "subtype", "flid", "attempts", "at", "reason",
		"group", "acknowledged", "notes"}, rows)
}

// withNotes gives each message every note on it.
func (s *Server) withNotes(ctx context.Context, ms []deadMessage) error {
	if len(ms) == 0 {
		return nil
	}
	ids := make([]int64, len(ms))
	at := make(map[int64]int, len(ms))
	for i, m := range ms {
		ids[i], at[m.MsgID] = m.MsgID, i
	}
	rows, err := s.d.Pool.Query(ctx, notesOfSQL, ids)
	if err != nil {
		return fmt.Errorf("read notes: %w", err)
	}
	var id int64
	var n note
	_, err = pgx.ForEachRow(rows, []any{&id, &n.Text, &n.Actor, &n.Acked, &n.At}, func() error {
		ms[at[id]].Notes = append(ms[at[id]].Notes, n)
		return nil
	})
	if err != nil {
		return fmt.Errorf("read notes: %w", err)
	}
	return nil
}

// AnyReplayable reports whether replay may take some message of the filter (of its group):
// a group of a replayable class.
func (p deadPage) AnyReplayable() bool {
	for _, g := range p.Groups {
		if (p.F.Group == "" || g.Group == p.F.Group) && replayableClass(g.Class) {
			return true
		}
	}
	return false
}

// replayableClass reports whether replay may take a message of the class (NO-MATCH: by id, once
// the flight exists).
func replayableClass(c string) bool {
	return c == noMatchClass || slices.Contains(procstate.ReplayableClasses, procstate.Class(c))
}

// groupTotal is the number of messages of the groups (of one group when group is set).
func groupTotal(gs []deadGroup, group string) int64 {
	var n int64
	for _, g := range gs {
		if group == "" || g.Group == group {
			n += g.Count
		}
	}
	return n
}

// selectedIDs are an action's messages: the ticked ids, or (none ticked) every message of the
// form's filter and group (a group's action, or scope=filtered: the whole filtered set), at
// most maxIDs; whole says it was a group or the filter, which f names.
func (s *Server) selectedIDs(r *http.Request) (ids []int64, whole bool, f deadFilter, err error) {
	ids, err = formIDs(r, "id")
	if err != nil || len(ids) > 0 || !wholeAsked(r) {
		return ids, false, f, err
	}
	if f, err = s.readDeadFilter(r.PostForm); err != nil {
		return nil, false, f, err
	}
	rows, err := s.d.Pool.Query(r.Context(), deadIDsSQL, append(f.args(), maxIDs+1)...)
	if err != nil {
		return nil, false, f, fmt.Errorf("select group: %w", err)
	}
	if ids, err = pgx.CollectRows(rows, pgx.RowTo[int64]); err != nil {
		return nil, false, f, fmt.Errorf("select group: %w", err)
	}
	if len(ids) > maxIDs {
		return nil, false, f, userError{fmt.Sprintf("More than %d messages: narrow the filter (a time range), or use msgxctl replay.", maxIDs)}
	}
	return ids, true, f, nil
}

// wholeAsked is whether a form acts on a whole group or the filtered set.
func wholeAsked(r *http.Request) bool {
	return r.PostFormValue("group") != "" || r.PostFormValue("scope") == "filtered"
}

// noteTargets is selectedIDs for a note, and whether it is a confirmed one: a confirmed note on
// a whole group or filter acts on the messages its confirmation counted (confirm_ids), not on
// those the filter selects now, so the filter is read for the audit but not queried again.
func (s *Server) noteTargets(r *http.Request) (ids []int64, whole, confirmed bool, f deadFilter, err error) {
	if r.PostFormValue("confirm") == "" || len(r.PostForm["id"]) > 0 || !wholeAsked(r) {
		ids, whole, f, err = s.selectedIDs(r)
		return ids, whole, false, f, err
	}
	if f, err = s.readDeadFilter(r.PostForm); err != nil {
		return nil, false, false, f, err
	}
	if ids, err = formIDs(r, "confirm_ids"); err != nil || len(ids) == 0 {
		return nil, false, false, f, userError{"This confirmation names no message: start again from the dead letters."}
	}
	return ids, true, true, f, nil
}

// maxIDs is the most ids one action takes: a page of a group; larger sets are msgxctl's.
const maxIDs = 1000

// formIDs reads the ticked ids of a form (at most maxIDs).
func formIDs(r *http.Request, name string) ([]int64, error) {
	var ids []int64
	for _, v := range r.PostForm[name] {
		for _, part := range strings.Split(v, ",") {
			if part = strings.TrimSpace(part); part == "" {
				continue
			}
			if len(ids) == maxIDs {
				return nil, userError{fmt.Sprintf("At most %d ids per action: narrow the selection, or use msgxctl replay for more.", maxIDs)}
			}
			id, err := strconv.ParseInt(part, 10, 64)
			if err != nil || id <= 0 {
				return nil, userError{fmt.Sprintf("%q is not an id.", part)}
			}
			ids = append(ids, id)
		}
	}
	return ids, nil
}

// replayedPage is the outcome of a replay or its dry run.
type replayedPage struct {
	Report  procstate.ReplayReport
	NoMatch []noMatchCheck
	IDs     string
	Class   string
	Reason  string
	Force   bool // forced (INV-24b): later-created values are overwritten
}

// replay is procstate.Replay (msgxctl replay): dry run, or for real with a reason (audited).
func (s *Server) replay(w http.ResponseWriter, r *http.Request) error {
	ids, _, _, err := s.selectedIDs(r)
	if err != nil {
		return err
	}
	class := procstate.Class(strings.ToUpper(r.PostFormValue("class")))
	if len(ids) > 0 {
		class = ""
	}
	dry := r.PostFormValue("mode") != "replay"
	force := r.PostFormValue("force") != ""
	reason := strings.TrimSpace(r.PostFormValue("reason"))
	if !dry && reason == "" {
		return userError{"A replay needs a reason (it is written to the audit)."}
	}
	if len(ids) == 0 && class == "" {
		return userError{"Tick messages or choose a class."}
	}
	rep, err := procstate.Replay(r.Context(), s.d.Pool, procstate.ReplayRequest{
		Class: class, IDs: ids, Actor: actor(r), Reason: reason, DryRun: dry, Force: force, Now: s.d.Now(), Location: s.d.Location,
	})
	if err != nil && !(dry && errors.Is(err, procstate.ErrRefused)) {
		return userError{err.Error()} // a refused replay requeues nothing
	}
	s.d.Log.Info().Str("user", sessionOf(r).User).Bool("dry_run", dry).Bool("forced", force).Int64("requeued", rep.Requeued).Str("reason", reason).Msg("console replay")
	p := replayedPage{Report: rep, NoMatch: noMatchFlights(rep.Items), IDs: joinIDs(ids), Class: string(class), Reason: reason, Force: force}
	s.render(w, r, http.StatusOK, "replayed", "Replay", p)
	return nil
}

// noMatchCheck is whether the flight of a SKIPPED no-match message exists now (replaying it
// before the flight exists skips it again), and what its replay would end as.
type noMatchCheck struct {
	MsgID, FLID int64
	Exists      bool
	Predicted   *procstate.Prediction
}

// noMatchFlights checks the flights the no-match messages of a replay name (in their text: the
// reason does not carry the FLID), as the replay read them (ReplayItem.UnknownFLIDs).
func noMatchFlights(items []procstate.ReplayItem) []noMatchCheck {
	var out []noMatchCheck
	for _, it := range items {
		if procstate.Status(it.Status) != procstate.StatusSkipped || !procstate.IsNoMatch(it.Reason) {
			continue
		}
		for _, flid := range it.FLIDs {
			out = append(out, noMatchCheck{MsgID: it.MsgID, FLID: flid, Exists: !slices.Contains(it.UnknownFLIDs, flid), Predicted: it.Predicted})
		}
	}
	return out
}

// confirmPage asks to confirm an action on a whole group or filter: what, on how many, and the
// form to post again with confirm=1.
type confirmPage struct {
	Action, Note string
	Ack          bool
	Count        int
	IDs          string // the messages counted: the confirmation acts on these
	F            deadFilter
	Scope, Back  string
}

// note records an operator's note or acknowledgement on messages (console_note: who, when). On
// a whole group or filter it first asks to confirm, and audits the action (replay_audit).
func (s *Server) note(w http.ResponseWriter, r *http.Request) error {
	ids, whole, confirmed, f, err := s.noteTargets(r)
	if err != nil {
		return err
	}
	text := strings.TrimSpace(r.PostFormValue("note"))
	ack := r.PostFormValue("ack") != ""
	if len(ids) == 0 {
		return userError{"Tick messages or choose a group."}
	}
	if text == "" && !ack {
		return userError{"Write a note or acknowledge."}
	}
	if len(text) > 2000 {
		return userError{"A note has at most 2000 characters."}
	}
	action := "note"
	if ack {
		action = "acknowledge"
	}
	back := safeNext(r.PostFormValue("back"))
	if whole && !confirmed {
		s.render(w, r, http.StatusOK, "confirm", "Confirm", confirmPage{Action: action, Note: text, Ack: ack, Count: len(ids), IDs: joinIDs(ids),
			F: f, Scope: r.PostFormValue("scope"), Back: back})
		return nil
	}
	err = pgx.BeginFunc(r.Context(), s.d.Pool, func(tx pgx.Tx) error {
		now := s.d.Now()
		if _, err := tx.Exec(r.Context(), noteInsertSQL, ids, actor(r), text, ack, now); err != nil {
			return fmt.Errorf("write note: %w", err)
		}
		if !whole {
			return nil
		}
		if _, err := tx.Exec(r.Context(), triageAuditSQL, action, actor(r), text, f.String(), ids, now); err != nil {
			return fmt.Errorf("audit the %s of %d messages: %w", action, len(ids), err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	s.d.Log.Info().Str("user", sessionOf(r).User).Bool("ack", ack).Bool("whole", whole).Ints64("messages", ids).Msg("console note")
	http.Redirect(w, r, back, http.StatusSeeOther)
	return nil
}

// eventsDonePage is the outcome of replaying or skipping dead events.
type eventsDonePage struct {
	Mode        string
	Dry         bool
	Done, Asked []int64
	Reason      string
}

// deadEvents is outbox replay or skip of DEAD Kafka events (msgxctl dlq).
func (s *Server) deadEvents(w http.ResponseWriter, r *http.Request) error {
	ids, err := formIDs(r, "event")
	if err != nil {
		return err
	}
	if len(ids) == 0 {
		return userError{"Tick events first."}
	}
	p := eventsDonePage{Mode: r.PostFormValue("mode"), Dry: r.PostFormValue("dry") != "", Asked: ids,
		Reason: strings.TrimSpace(r.PostFormValue("reason"))}
	if !p.Dry && p.Reason == "" {
		return userError{"This needs a reason (it is written to the audit)."}
	}
	who := outbox.Admin{Actor: actor(r), Reason: p.Reason, DryRun: p.Dry}
	switch p.Mode {
	case "replay":
		p.Done, err = s.d.Outbox.Replay(r.Context(), outbox.Selector{IDs: ids}, who, s.d.Now())
	case "skip":
		p.Done, err = s.d.Outbox.Skip(r.Context(), ids, who, s.d.Now())
	default:
		return userError{"Choose replay or skip."}
	}
	if err != nil {
		return err
	}
	s.d.Log.Info().Str("user", sessionOf(r).User).Str("mode", p.Mode).Bool("dry_run", p.Dry).Ints64("events", p.Done).Msg("console dead events")
	s.render(w, r, http.StatusOK, "events_done", "Dead events", p)
	return nil
}

// advice says in a sentence what a replay's predicted outcome means for the operator; forced:
// the replay overwrites what later-created messages set.
func advice(p *procstate.Prediction, forced bool) string {
	switch {
	case p == nil || p.Status == "":
		return "What it would do is not predicted here: its kind's handler decides (reference data, a schedule snapshot or answer)."
	case p.Status == procstate.StatusSucceeded && len(p.Newer) > 0 && forced:
		return "It would apply, overwriting what later-created messages set."
	case p.Status == procstate.StatusSucceeded && len(p.Newer) > 0:
		return "It would apply in part: what later-created messages set stays unless the replay is forced."
	case p.Status == procstate.StatusSucceeded:
		return "It would apply."
	case p.Status == procstate.StatusSkipped:
		return skipAdvice(p.Reason)
	case p.Class == procstate.ClassUnsupported:
		return "It would fail again: no processor serves its kind."
	}
	return "It would fail again (" + string(p.Class) + "): fix the cause first."
}

func skipAdvice(reason string) string {
	sk, err := procstate.ParseSkip(reason)
	switch {
	case err != nil:
		return "It would be skipped."
	case sk.Kind == procstate.SkipNoMatch && sk.Deleted:
		return "Its flight is DELETED: it would be skipped again."
	case sk.Kind == procstate.SkipNoMatch:
		return "Its flight is still not stored: it would be skipped again; ask the AODB for its day's schedule first."
	case sk.Kind == procstate.SkipStaleLate:
		return "Later-created messages set everything it carries: it would be skipped unless the replay is forced."
	}
	return "It would be skipped."
}
