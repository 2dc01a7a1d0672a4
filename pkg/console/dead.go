package console

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/msgx/msgx/pkg/event"
	"github.com/msgx/msgx/pkg/outbox"
	"github.com/msgx/msgx/pkg/processor"
)

// deadPage is the dead letters: DEAD and FAILED messages of a class, DEAD Kafka events of a
// target, and the latest audited actions.
type deadPage struct {
	Class, Target string
	Messages      []deadMessage
	Events        []outbox.DeadEvent
	Audit         []auditFull
	AllClasses    []string
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
	p := deadPage{
		Class:  strings.ToUpper(strings.TrimSpace(r.URL.Query().Get("class"))),
		Target: r.URL.Query().Get("target"), AllClasses: allClasses,
	}
	if p.Target != "" && p.Target != event.TargetMsg && p.Target != event.TargetSchd {
		return userError{"Unknown target."}
	}
	classes := allClasses
	if p.Class != "" {
		classes = []string{p.Class}
	}
	var err error
	if p.Messages, err = collect[deadMessage](s, r, deadMessagesSQL, classes, deadLimit); err != nil {
		return fmt.Errorf("list dead messages: %w", err)
	}
	if p.Events, err = s.d.Outbox.ListDead(r.Context(), outbox.DeadFilter{Target: p.Target, Limit: deadLimit}); err != nil {
		return err
	}
	if p.Audit, err = collect[auditFull](s, r, recentAuditSQL, 20); err != nil {
		return fmt.Errorf("read audit: %w", err)
	}
	s.render(w, r, http.StatusOK, "dead", "Dead letters", p)
	return nil
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
	Report processor.ReplayReport
	IDs    string
	Class  string
	Reason string
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
	s.render(w, r, http.StatusOK, "replayed", "Replay", replayedPage{Report: rep, IDs: joinIDs(ids), Class: string(class), Reason: reason})
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
