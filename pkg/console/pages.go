package console

import (
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/msgx/msgx/pkg/event"
	"github.com/msgx/msgx/pkg/outbox"
	"github.com/msgx/msgx/pkg/processor"
	"github.com/msgx/msgx/pkg/request"
	"github.com/msgx/msgx/pkg/status"
)

func (s *Server) funcs() template.FuncMap {
	return template.FuncMap{
		// t shows a time in the airport zone; wall is a wall-clock time already in airport time
		// (timestamp without time zone columns).
		"t": func(v any) string {
			switch x := v.(type) {
			case time.Time:
				if x.IsZero() {
					return "—"
				}
				return x.In(s.d.Location).Format("2006-01-02 15:04:05 MST")
			case *time.Time:
				if x == nil || x.IsZero() {
					return "—"
				}
				return x.In(s.d.Location).Format("2006-01-02 15:04:05 MST")
			}
			return fmt.Sprint(v)
		},
		"wall": func(v *time.Time) string {
			if v == nil {
				return "—"
			}
			return v.Format("2006-01-02 15:04:05") + " " + s.d.Now().In(s.d.Location).Format("MST")
		},
		"age": func(v any) string {
			var d time.Duration
			switch x := v.(type) {
			case time.Time:
				d = s.d.Now().Sub(x)
			case *time.Time:
				if x == nil {
					return "—"
				}
				d = s.d.Now().Sub(*x)
			case float64:
				d = time.Duration(x * float64(time.Second))
			case *float64:
				if x == nil {
					return "—"
				}
				d = time.Duration(*x * float64(time.Second))
			}
			return d.Round(time.Second).String()
		},
		"classes": func() []processor.Class { return processor.ReplayableClasses },
		"join":    func(ids []int64) string { return joinIDs(ids) },
	}
}

func joinIDs(ids []int64) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = strconv.FormatInt(id, 10)
	}
	return strings.Join(parts, ", ")
}

// leaderRow is a leader with its renewal age.
type leaderRow struct {
	Role       string
	Epoch      int64
	Holder     string
	AcquiredAt time.Time
	RenewedAt  time.Time
}

type pipelineData struct {
	Status   status.Snapshot
	Leaders  []leaderRow
	Open     []request.Request
	Statuses []kv
	Dead     []kv
}

type kv struct {
	K string
	V int64
}

func sortedKV(m map[string]int64) []kv {
	out := make([]kv, 0, len(m))
	for k, v := range m {
		out = append(out, kv{k, v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].K < out[j].K })
	return out
}

func (s *Server) pipeline(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	snap, err := status.ReadWith(ctx, s.d.Pool, s.d.Now(), status.Options{OpenOnly: true})
	if err != nil {
		return err
	}
	rows, err := s.d.Pool.Query(ctx, leadersSQL)
	if err != nil {
		return fmt.Errorf("read leaders: %w", err)
	}
	leaders, err := pgx.CollectRows(rows, pgx.RowToStructByPos[leaderRow])
	if err != nil {
		return fmt.Errorf("read leaders: %w", err)
	}
	open, err := s.d.Requests.ListOpen(ctx)
	if err != nil {
		return err
	}
	s.render(w, r, http.StatusOK, "pipeline", "Pipeline", pipelineData{
		Status: snap, Leaders: leaders, Open: open, Statuses: sortedKV(snap.ByStatus), Dead: sortedKV(snap.DeadByClass),
	})
	return nil
}

// flightHit is one search result.
type flightHit struct {
	FLID         int64
	ALCD, FLNO   string
	MVIN         string
	OperationDay *time.Time
	State        string
	Version      int64
	SODT         *time.Time
}

func (s *Server) flightSearch(w http.ResponseWriter, r *http.Request) error {
	q := strings.TrimSpace(r.URL.Query().Get("q"))
	dayS := strings.TrimSpace(r.URL.Query().Get("day"))
	data := map[string]any{"Q": q, "Day": dayS}
	if q == "" {
		s.render(w, r, http.StatusOK, "flights", "Flights", data)
		return nil
	}
	if flid, err := strconv.ParseInt(q, 10, 64); err == nil && dayS == "" {
		http.Redirect(w, r, "/flights/"+strconv.FormatInt(flid, 10), http.StatusSeeOther)
		return nil
	}
	var day *time.Time
	if dayS != "" {
		d, err := time.Parse(time.DateOnly, dayS)
		if err != nil {
			return userError{"The day must be YYYY-MM-DD."}
		}
		day = &d
	}
	rows, err := s.d.Pool.Query(r.Context(), flightSearchSQL, q, day)
	if err != nil {
		return fmt.Errorf("search flights: %w", err)
	}
	hits, err := pgx.CollectRows(rows, pgx.RowToStructByPos[flightHit])
	if err != nil {
		return fmt.Errorf("search flights: %w", err)
	}
	if len(hits) == 1 {
		http.Redirect(w, r, "/flights/"+strconv.FormatInt(hits[0].FLID, 10), http.StatusSeeOther)
		return nil
	}
	data["Hits"] = hits
	s.render(w, r, http.StatusOK, "flights", "Flights", data)
	return nil
}

// field is one column of a flight's state.
type field struct {
	Name  string
	Value string
}

// version is one event of a flight: the version it published, the message that caused it, the
// fields that changed from the previous version of the same target, and Kafka's answer.
type version struct {
	EventID   int64
	Target    string
	Type      string
	Version   int64
	MsgID     *int64
	Payload   []byte
	Status    string
	Attempts  int
	CreatedAt time.Time
	SentAt    *time.Time
	LastError string
	MsgType   string
	MsgStyp   string
	Changes   []change `db:"-"`
}

type change struct{ Field, From, To string }

type mafl struct {
	FLID int64
	FLNO string
}

const historyLimit = 200

func (s *Server) flight(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	flid, err := strconv.ParseInt(r.PathValue("flid"), 10, 64)
	if err != nil {
		return errNotFound
	}
	data := map[string]any{"FLID": flid}
	var doc map[string]any
	switch err := s.d.Pool.QueryRow(ctx, flightSQL, flid).Scan(&doc); {
	case errors.Is(err, pgx.ErrNoRows):
		var reason string
		var at time.Time
		if err := s.d.Pool.QueryRow(ctx, flightPurgedSQL, flid).Scan(&doc, &reason, &at); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return errNotFound
			}
			return fmt.Errorf("read purged flight: %w", err)
		}
		data["Purged"] = map[string]any{"Reason": reason, "At": at}
	case err != nil:
		return fmt.Errorf("read flight: %w", err)
	}
	data["Fields"] = fields(doc)
	data["Title"] = fmt.Sprintf("%v%v", str(doc["alcd"]), str(doc["flno"]))
	data["State"], data["Version"], data["Day"] = str(doc["state"]), str(doc["state_version"]), str(doc["operation_day"])
	if m, ok := doc["maid"].(float64); ok && m != 0 {
		data["Master"] = int64(m)
	}
	rows, err := s.d.Pool.Query(ctx, maflSQL, flid)
	if err != nil {
		return fmt.Errorf("derive MAFL: %w", err)
	}
	if data["MAFL"], err = pgx.CollectRows(rows, pgx.RowToStructByPos[mafl]); err != nil {
		return fmt.Errorf("derive MAFL: %w", err)
	}
	rows, err = s.d.Pool.Query(ctx, flightEventsSQL, strconv.FormatInt(flid, 10), historyLimit)
	if err != nil {
		return fmt.Errorf("read flight events: %w", err)
	}
	versions, err := pgx.CollectRows(rows, pgx.RowToStructByPos[version])
	if err != nil {
		return fmt.Errorf("read flight events: %w", err)
	}
	diffVersions(versions)
	data["Versions"] = versions
	s.render(w, r, http.StatusOK, "flight", fmt.Sprintf("Flight %d", flid), data)
	return nil
}

func str(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	default:
		b, _ := json.Marshal(x)
		return string(b)
	}
}

// fields lists a state's non-empty fields in name order.
func fields(doc map[string]any) []field {
	var out []field
	for k, v := range doc {
		if v == nil || v == "" {
			continue
		}
		out = append(out, field{k, str(v)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// diffVersions fills each version's changes against the previous version of its target
// (versions arrive newest first).
func diffVersions(vs []version) {
	for i := range vs {
		var prev map[string]any
		for j := i + 1; j < len(vs); j++ {
			if vs[j].Target == vs[i].Target {
				_ = json.Unmarshal(vs[j].Payload, &prev)
				break
			}
		}
		var cur map[string]any
		_ = json.Unmarshal(vs[i].Payload, &cur)
		vs[i].Changes = diff(flatten("", prev), flatten("", cur))
	}
}

func flatten(prefix string, v any) map[string]string {
	out := map[string]string{}
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			for fk, fv := range flatten(prefix+k+".", e) {
				out[fk] = fv
			}
		}
	case nil:
		if prefix != "" {
			out[strings.TrimSuffix(prefix, ".")] = ""
		}
	default:
		out[strings.TrimSuffix(prefix, ".")] = str(x)
	}
	return out
}

func diff(a, b map[string]string) []change {
	var out []change
	for k, v := range b {
		if a[k] != v {
			out = append(out, change{k, a[k], v})
		}
	}
	for k, v := range a {
		if _, ok := b[k]; !ok && v != "" {
			out = append(out, change{k, v, ""})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Field < out[j].Field })
	return out
}

func (s *Server) messageLookup(w http.ResponseWriter, r *http.Request) error {
	id, err := strconv.ParseInt(strings.TrimSpace(r.URL.Query().Get("id")), 10, 64)
	if err != nil {
		return userError{"A message id is a number."}
	}
	http.Redirect(w, r, "/messages/"+strconv.FormatInt(id, 10), http.StatusSeeOther)
	return nil
}

// message is one proc_state row.
type message struct {
	MsgID                                 int64
	Raw, SHA256, Status, Class, Reason    string
	Attempts                              int
	NextAttemptAt                         *time.Time
	IdentityKey                           string
	ContentDiffers                        bool
	Type, Styp                            string
	ReceivedAt                            *time.Time
	EnqueuedAt                            time.Time
	Late                                  bool
	StartedAt, FinishedAt, BackfillNextAt *time.Time
	BackfillAttempts                      int
	BackfillError, BackfillOutcome        string
	BackfillDoneAt, BackfillAbandonedAt   *time.Time
	Archived                              bool
}

type duplicate struct {
	MsgID          int64
	Status         string
	ContentDiffers bool
}

type msgEvent struct {
	EventID   int64
	Target    string
	FLID      string
	Type      string
	Version   int64
	Status    string
	SentAt    *time.Time
	LastError string
}

type auditRow struct {
	Action, Actor, Reason string
	At                    time.Time
}

func (s *Server) message(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil {
		return errNotFound
	}
	rows, err := s.d.Pool.Query(ctx, messageSQL, id)
	if err != nil {
		return fmt.Errorf("read message: %w", err)
	}
	m, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByPos[message])
	if errors.Is(err, pgx.ErrNoRows) {
		return errNotFound
	}
	if err != nil {
		return fmt.Errorf("read message: %w", err)
	}
	data := map[string]any{"M": m, "Pretty": prettyXML(m.Raw), "Decoded": decodedFields(m.Raw)}
	if data["Attempts"], err = processor.Attempts(ctx, s.d.Pool, id); err != nil {
		return err
	}
	if m.IdentityKey != "" {
		if data["Duplicates"], err = collect[duplicate](s, r, duplicatesSQL, m.IdentityKey, id); err != nil {
			return fmt.Errorf("read duplicates: %w", err)
		}
		var owner int64
		var bound time.Time
		switch err := s.d.Pool.QueryRow(ctx, identityOwnerSQL, m.IdentityKey).Scan(&owner, &bound); {
		case err == nil:
			data["Owner"], data["BoundAt"] = owner, bound
		case !errors.Is(err, pgx.ErrNoRows):
			return fmt.Errorf("read identity: %w", err)
		}
	}
	if data["Events"], err = collect[msgEvent](s, r, messageEventsSQL, id); err != nil {
		return fmt.Errorf("read events: %w", err)
	}
	if data["Audit"], err = collect[auditRow](s, r, messageAuditSQL, id); err != nil {
		return fmt.Errorf("read audit: %w", err)
	}
	ok, _ := processor.Replayable(processor.Status(m.Status), processor.Class(m.Class), m.Reason)
	data["Replayable"] = ok && !m.Archived // replay reads proc_state only
	s.render(w, r, http.StatusOK, "message", fmt.Sprintf("Message %d", id), data)
	return nil
}

func collect[T any](s *Server, r *http.Request, sql string, args ...any) ([]T, error) {
	rows, err := s.d.Pool.Query(r.Context(), sql, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowToStructByPos[T])
}

type deadMessage struct {
	MsgID         int64
	Status, Class string
	Reason        string
	Attempts      int
	Type, Styp    string
	At            time.Time
}

type auditFull struct {
	Action, Actor, Reason, Selector string
	IDs                             []int64
	At                              time.Time
}

const deadLimit = 200

// allClasses are the error classes (proc_state_error_class_check).
var allClasses = []string{"MALFORMED", "PROTOCOL", "CODEC_ERROR", "UNSUPPORTED", "INFRA", "EXHAUSTED"}

func (s *Server) dead(w http.ResponseWriter, r *http.Request) error {
	class := strings.ToUpper(strings.TrimSpace(r.URL.Query().Get("class")))
	target := r.URL.Query().Get("target")
	if target != "" && target != event.TargetMsg && target != event.TargetSchd {
		return userError{"Unknown target."}
	}
	data, err := s.deadData(r, class, target)
	if err != nil {
		return err
	}
	s.render(w, r, http.StatusOK, "dead", "Dead letters", data)
	return nil
}

func (s *Server) deadData(r *http.Request, class, target string) (map[string]any, error) {
	classes := allClasses
	if class != "" {
		classes = []string{class}
	}
	msgs, err := collect[deadMessage](s, r, deadMessagesSQL, classes, deadLimit)
	if err != nil {
		return nil, fmt.Errorf("list dead messages: %w", err)
	}
	events, err := s.d.Outbox.ListDead(r.Context(), outbox.DeadFilter{Target: target, Limit: deadLimit})
	if err != nil {
		return nil, err
	}
	audit, err := collect[auditFull](s, r, recentAuditSQL, 20)
	if err != nil {
		return nil, fmt.Errorf("read audit: %w", err)
	}
	return map[string]any{"Class": class, "Target": target, "Messages": msgs, "Events": events, "Audit": audit,
		"AllClasses": allClasses}, nil
}

// formIDs reads the ticked ids of a form.
func formIDs(r *http.Request, name string) ([]int64, error) {
	var ids []int64
	for _, v := range r.PostForm[name] {
		for _, part := range strings.Split(v, ",") {
			if part = strings.TrimSpace(part); part == "" {
				continue
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

// replay is processor.Replay (msgxctl replay): dry run, or for real with a reason (audited).
func (s *Server) replay(w http.ResponseWriter, r *http.Request) error {
	ids, err := formIDs(r, "id")
	if err != nil {
		return err
	}
	class := processor.Class(strings.ToUpper(r.PostFormValue("class")))
	if len(ids) > 0 {
		class = ""
	}
	dry := r.PostFormValue("mode") != "replay"
	reason := strings.TrimSpace(r.PostFormValue("reason"))
	if !dry && reason == "" {
		return userError{"A replay needs a reason (it is written to the audit)."}
	}
	if len(ids) == 0 && class == "" {
		return userError{"Tick messages or choose a class."}
	}
	rep, err := processor.Replay(r.Context(), s.d.Pool, processor.ReplayRequest{
		Class: class, IDs: ids, Actor: actor(r), Reason: reason, DryRun: dry, Now: s.d.Now(),
	})
	if err != nil && !(dry && errors.Is(err, processor.ErrRefused)) {
		return userError{err.Error()} // a refused replay requeues nothing
	}
	s.d.Log.Info().Str("user", sessionOf(r).User).Bool("dry_run", dry).Int64("requeued", rep.Requeued).Str("reason", reason).Msg("console replay")
	s.render(w, r, http.StatusOK, "replayed", "Replay", map[string]any{
		"Report": rep, "IDs": joinIDs(ids), "Class": string(class), "Reason": reason,
	})
	return nil
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
	mode := r.PostFormValue("mode")
	reason := strings.TrimSpace(r.PostFormValue("reason"))
	dry := r.PostFormValue("dry") != ""
	if !dry && reason == "" {
		return userError{"This needs a reason (it is written to the audit)."}
	}
	who := outbox.Admin{Actor: actor(r), Reason: reason, DryRun: dry}
	var done []int64
	switch mode {
	case "replay":
		done, err = s.d.Outbox.Replay(r.Context(), outbox.Selector{IDs: ids}, who, s.d.Now())
	case "skip":
		done, err = s.d.Outbox.Skip(r.Context(), ids, who, s.d.Now())
	default:
		return userError{"Choose replay or skip."}
	}
	if err != nil {
		return err
	}
	s.d.Log.Info().Str("user", sessionOf(r).User).Str("mode", mode).Bool("dry_run", dry).Ints64("events", done).Msg("console dead events")
	s.render(w, r, http.StatusOK, "events_done", "Dead events", map[string]any{
		"Mode": mode, "Dry": dry, "Done": done, "Asked": ids, "Reason": reason,
	})
	return nil
}

type closedRequest struct {
	ID                                 int64
	Kind, Scope, Status, Origin, Actor string
	Reason                             string
	RegisteredAt                       time.Time
	ClosedAt                           *time.Time
	CloseReason                        string
}

func (s *Server) requests(w http.ResponseWriter, r *http.Request) error {
	data, err := s.requestsData(r)
	if err != nil {
		return err
	}
	s.render(w, r, http.StatusOK, "requests", "Requests", data)
	return nil
}

func (s *Server) requestsData(r *http.Request) (map[string]any, error) {
	open, err := s.d.Requests.ListOpen(r.Context())
	if err != nil {
		return nil, err
	}
	closed, err := collect[closedRequest](s, r, closedRequestsSQL, 50)
	if err != nil {
		return nil, fmt.Errorf("list closed requests: %w", err)
	}
	return map[string]any{"Open": open, "Closed": closed, "Shadow": s.d.Shadow}, nil
}

// sendRequest registers an RQFD or RQRD (msgxctl request), or previews it (dry run).
func (s *Server) sendRequest(w http.ResponseWriter, r *http.Request) error {
	spec := request.Spec{Origin: request.Operator, Actor: actor(r), Reason: strings.TrimSpace(r.PostFormValue("reason"))}
	switch r.PostFormValue("kind") {
	case string(request.Schedule):
		spec.Kind = request.Schedule
		var err1, err2 error
		spec.From, err1 = time.Parse(time.DateOnly, r.PostFormValue("from"))
		spec.To, err2 = time.Parse(time.DateOnly, r.PostFormValue("to"))
		if err1 != nil || err2 != nil {
			return userError{"An RQFD needs its first and last operation day (YYYY-MM-DD)."}
		}
	case string(request.List):
		spec.Kind, spec.ListCode = request.List, strings.TrimSpace(r.PostFormValue("list"))
	default:
		return userError{"Choose RQFD or RQRD."}
	}
	dry := r.PostFormValue("mode") != "send"
	now := s.d.Now()
	data, err := s.requestsData(r)
	if err != nil {
		return err
	}
	if dry {
		prev, err := s.d.Requests.Preview(r.Context(), spec, now)
		if err != nil {
			return userError{err.Error()}
		}
		data["Preview"] = prev
	} else {
		if s.d.Shadow {
			return userError{"Shadow mode (MSGX_SHADOW=true): nothing is sent to the AODB."}
		}
		if spec.Reason == "" {
			return userError{"A request needs a reason (it is written to the audit)."}
		}
		reg, err := s.d.Requests.RegisterAudited(r.Context(), spec, spec.Actor, spec.Reason, now)
		if err != nil {
			return userError{err.Error()}
		}
		s.d.Log.Info().Str("user", sessionOf(r).User).Int64("request", reg.Request.ID).Msg("console request")
		data["Registered"] = reg
		if data, err = s.requestsDataWith(r, data); err != nil {
			return err
		}
	}
	data["Form"] = map[string]string{"Kind": string(spec.Kind), "From": r.PostFormValue("from"), "To": r.PostFormValue("to"),
		"List": spec.ListCode, "Reason": spec.Reason}
	s.render(w, r, http.StatusOK, "requests", "Requests", data)
	return nil
}

// requestsDataWith re-reads the lists after a registration, keeping the page's other values.
func (s *Server) requestsDataWith(r *http.Request, data map[string]any) (map[string]any, error) {
	fresh, err := s.requestsData(r)
	if err != nil {
		return nil, err
	}
	for k, v := range fresh {
		data[k] = v
	}
	return data, nil
}
