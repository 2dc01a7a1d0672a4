// Package flights is the flight plug-in of the processor stage: it applies FLOP updates and
// deletes (KindFlightUpdate, KindFlightDelete) and schedules (KindScheduleSnapshot for
// DNLD/RESP, KindScheduleAdd for ADFT and the other add/update subtypes, KindScheduleDelete for
// DEL). It only wires: the merge and batch rules are package flight's (Apply, Batch), storage is
// package flightstore's (Load, Save), the event payloads package event's, and the events are
// written by outbox.Enqueue, all in the engine's transaction.
//
// Handler is a processor.Batcher: a batch's flight messages share one Session, which loads every
// flight they name once, applies each message in memory on top of the previous ones, and at
// Flush writes each changed flight once with every event in message order.
//
// Every input is stamped with its message (msg_id, META DTTM): a message reaching the head out of
// mailbox order does not overwrite what a later-created message set (INV-24b), unless an operator
// forced its replay (INV-24b). Stale as a whole → SKIPPED "stale:late: <units>"; in part →
// SUCCEEDED, the reason naming the units not written.
package flights

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/msgx/msgx/pkg/event"
	"github.com/msgx/msgx/pkg/event/change"
	"github.com/msgx/msgx/pkg/flight"
	"github.com/msgx/msgx/pkg/flightstore"
	"github.com/msgx/msgx/pkg/outbox"
	"github.com/msgx/msgx/pkg/processor"
	"github.com/msgx/msgx/pkg/procstate"
	"github.com/msgx/msgx/pkg/request"
	"github.com/msgx/msgx/pkg/sis"
)

// Handler applies every flight message.
type Handler struct {
	// Requests, when set, is the request rules (docs/requests.md): a SCHD RESP is applied only
	// under a matching open RQFD, which it closes DONE; a FLOP for an unknown flight feeds the
	// self-healing trigger. cmd/processor always sets it; without it (tests of the merge rules)
	// a SCHD RESP is applied like a DNLD.
	Requests *request.Hooks
	// Cache, when set, keeps the flights read and written between batches; a batch merges onto
	// the states it hands out, so every entry is checked against its flight row's xmin in the
	// batch's transaction before use (flightstore.Cache).
	Cache *flightstore.Cache
}

var (
	_ processor.Handler = Handler{}
	_ processor.Batcher = Handler{}
)

// Apply applies one message in its own session.
func (h Handler) Apply(ctx context.Context, tx pgx.Tx, m processor.Message) (processor.Outcome, error) {
	s := h.session(tx, m)
	out, err := s.Apply(ctx, m)
	if err != nil {
		return out, err
	}
	return out, s.Flush(ctx)
}

// Begin starts the session of a batch and loads every flight its messages name.
func (h Handler) Begin(ctx context.Context, tx pgx.Tx, msgs []processor.Message) (processor.Session, error) {
	if len(msgs) == 0 {
		return h.session(tx, processor.Message{}), nil
	}
	s := h.session(tx, msgs[0])
	var flids []int64
	for _, m := range msgs {
		flids = append(flids, m.Decoded.FLIDs()...)
	}
	return s, s.batch.Preload(ctx, flids)
}

// session starts the session of a batch whose first message is m: its time and zone are the
// batch's.
func (h Handler) session(tx pgx.Tx, m processor.Message) *Session {
	s := newSession(flightstore.Loader{Tx: tx, Cache: h.Cache}, m.Now)
	s.requests = h.Requests
	s.events.Loc = m.Location
	return s
}

// Session is the flight messages of one engine batch: the batch rules' state (flight.Batch),
// the events and snapshot-log rows of the messages applied so far, written at Flush. A message
// that fails leaves no trace in the session.
type Session struct {
	tx     pgx.Tx
	store  flightstore.Loader
	now    time.Time
	batch  *flight.Batch
	events change.Log
	logs   []flightstore.SnapshotLog
	// requests: the RESP guard and the self-healing trigger (nil: none).
	requests *request.Hooks
}

// newSession starts an empty session in store's transaction.
func newSession(store flightstore.Loader, now time.Time) *Session {
	return &Session{tx: store.Tx, store: store, now: now, batch: flight.NewBatch(store)}
}

// Apply applies one flight message on top of the session's earlier ones.
func (s *Session) Apply(ctx context.Context, m processor.Message) (processor.Outcome, error) {
	switch m.Decoded.Kind {
	case sis.KindFlightUpdate, sis.KindFlightDelete:
		return s.flop(ctx, m)
	case sis.KindScheduleSnapshot, sis.KindScheduleAdd, sis.KindScheduleDelete:
		return s.schedule(ctx, m)
	}
	return processor.Outcome{}, processor.Errorf(procstate.ClassUnsupported, "flight processor: kind %s", m.Decoded.Kind)
}

func (s *Session) flop(ctx context.Context, m processor.Message) (processor.Outcome, error) {
	op := m.Decoded.Flop
	if op == nil {
		return processor.Outcome{}, processor.Errorf(procstate.ClassProtocol, "FLOP body missing")
	}
	r, err := s.apply(ctx, m, flight.Inputs(m.Decoded))
	if err != nil {
		return processor.Outcome{}, err
	}
	out := outcome(r)
	if out.Skipped && errors.Is(r.Skips[0].Err, flight.ErrNoFlight) && s.requests != nil {
		// A FLOP for an unknown flight counts for its operation day (self-healing trigger).
		if _, err := s.requests.UnknownFlightTx(ctx, s.tx, op.FFID, m.Now); err != nil {
			return processor.Outcome{}, err
		}
	}
	return out, nil
}

// schedule validates the whole package, then applies every record.
func (s *Session) schedule(ctx context.Context, m processor.Message) (processor.Outcome, error) {
	sch := m.Decoded.Schedule
	if sch == nil {
		return processor.Outcome{}, processor.Errorf(procstate.ClassProtocol, "SCHD body missing")
	}
	snapshot := m.Decoded.Kind == sis.KindScheduleSnapshot
	del := m.Decoded.Kind == sis.KindScheduleDelete
	if snapshot {
		done, err := flightstore.SnapshotApplied(ctx, s.tx, m.ID)
		if err != nil {
			return processor.Outcome{}, err
		}
		if done { // replay of a succeeded snapshot: audit only (docs/spec.md §6)
			s.logs = append(s.logs, flightstore.SnapshotLog{MsgID: m.ID, Unchanged: len(sch.Records), At: m.Now})
			return processor.Outcome{Reason: "replay: snapshot already applied"}, nil
		}
	}
	var sc scope
	if !del {
		var err error
		if sc, err = validateSchedule(sch); err != nil {
			return processor.Outcome{}, err
		}
	}
	inputs := flight.Inputs(m.Decoded)
	var r flight.Result
	apply := func() error {
		var err error
		r, err = s.apply(ctx, m, inputs)
		return err
	}
	var answered request.Answered
	if snapshot && m.Decoded.Meta.STYP == "RESP" && s.requests != nil {
		// The RESP guard: applied only under a matching open RQFD, closed DONE here (the
		// flights are written at Flush, in the same transaction).
		var err error
		answered, err = s.requests.Answer(ctx, s.tx, request.ScheduleResponse(m.Decoded, s.requests.Location()), m.ID, m.Now, apply)
		if err != nil {
			return processor.Outcome{}, err
		}
		if answered.Skip != "" {
			return processor.Outcome{Skipped: true, Reason: answered.Skip}, nil
		}
	} else if err := apply(); err != nil {
		return processor.Outcome{}, err
	}
	if snapshot {
		s.logs = append(s.logs, flightstore.SnapshotLog{MsgID: m.ID, ScopeStart: sc.start, ScopeEnd: sc.end,
			Inserted: r.Inserted, Updated: r.Updated, Unchanged: r.Unchanged, At: m.Now})
	}
	if del || (r.Applied == 0 && len(r.Skips) > 0) { // nothing applied: every record stale
		return outcome(r), nil
	}
	return processor.Outcome{Reason: join(answered.Note(), procstate.FlightNotes(r))}, nil
}

// join joins the non-empty parts of an outcome reason.
func join(parts ...string) string {
	var out []string
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, "; ")
}

// scope is the operation-day range of a schedule package.
type scope struct{ start, end *string }

// validateSchedule checks a whole add/update package before anything is applied (INV-19): no
// FLID occurs twice with different operation days; it returns the package's operation-day
// range. The decoder (package sis) already rejected a RECS that differs from the record count
// and records without their required fields; the stored operation days are checked when the
// records are applied, before anything is written.
func validateSchedule(sch *sis.Schedule) (scope, error) {
	var sc scope
	days := make(map[int64]string, len(sch.Records))
	for i := range sch.Records {
		r := &sch.Records[i]
		day := flight.OperationDay(r.SODT.Value)
		if d, ok := days[r.FLID.Value]; ok && d != day {
			return sc, processor.Errorf(procstate.ClassProtocol, "FLID %d occurs with operation days %s and %s in one package", r.FLID.Value, d, day)
		}
		days[r.FLID.Value] = day
		if sc.start == nil || day < *sc.start {
			sc.start = &day
		}
		if sc.end == nil || day > *sc.end {
			sc.end = &day
		}
	}
	return sc, nil
}

// apply runs the batch rules for one message and keeps its events for Flush. A rule violation
// is DEAD PROTOCOL.
func (s *Session) apply(ctx context.Context, m processor.Message, inputs []flight.Input) (flight.Result, error) {
	at := flight.StampOf(m.ID, m.Decoded.Meta.DTTM) // INV-24b: what a later-created message set stays
	for i := range inputs {
		inputs[i].At, inputs[i].Force = at, m.Forced // unless an operator forced the replay (INV-24b)
	}
	r, err := s.batch.Apply(ctx, m.ID, inputs)
	var v *flight.Violation
	switch {
	case errors.As(err, &v):
		return r, processor.Errorf(procstate.ClassProtocol, "%s", v.Reason)
	case err != nil:
		return r, err
	}
	src := event.Source{MsgID: m.ID, Type: m.Decoded.Meta.TYPE, Styp: m.Decoded.Meta.STYP}
	for _, c := range r.Changed {
		s.events.Changed(src, c.Old, c.Next)
	}
	return r, nil
}

// outcome is the message's outcome as procstate.FlightOutcome decides it.
func outcome(r flight.Result) processor.Outcome {
	st, reason := procstate.FlightOutcome(r)
	return processor.Outcome{Skipped: st == procstate.StatusSkipped, Reason: reason}
}

// Flush writes every flight the session changed (once, from its stored to its final state), the
// snapshot-log rows and every event in message order.
func (s *Session) Flush(ctx context.Context) error {
	changes, events, logs := s.batch.Take(), s.events.Take(), s.logs
	// The session is spent either way: what it held is now stored (or rolled back with the tx).
	s.logs = nil
	if err := s.store.Save(ctx, changes, logs, s.now); err != nil {
		return err
	}
	return outbox.Enqueue(ctx, s.tx, s.now, events...)
}
