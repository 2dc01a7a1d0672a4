package flightstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/msgx/msgx/pkg/event"
	"github.com/msgx/msgx/pkg/flight"
	"github.com/msgx/msgx/pkg/outbox"
	"github.com/msgx/msgx/pkg/processor"
	"github.com/msgx/msgx/pkg/sis"
)

// Processor applies every flight message: FLOP updates and deletes (KindFlightUpdate,
// KindFlightDelete) and schedules (KindScheduleSnapshot for DNLD/RESP, KindScheduleAdd for ADFT
// and other add/update subtypes, KindScheduleDelete for DEL). It is a processor.Batcher: a batch's
// flight messages share one Session (one load, one write).
type Processor struct{}

var (
	_ processor.Handler = Processor{}
	_ processor.Batcher = Processor{}
)

// Apply applies one message in its own session.
func (Processor) Apply(ctx context.Context, tx pgx.Tx, m processor.Message) (processor.Outcome, error) {
	s := NewSession(tx, m.Now)
	out, err := s.Apply(ctx, m)
	if err != nil {
		return out, err
	}
	return out, s.Flush(ctx)
}

// Begin starts the session of a batch and loads every flight its messages name.
func (Processor) Begin(ctx context.Context, tx pgx.Tx, msgs []processor.Message) (processor.Session, error) {
	if len(msgs) == 0 {
		return NewSession(tx, time.Time{}), nil
	}
	s := NewSession(tx, msgs[0].Now)
	var flids []int64
	for _, m := range msgs {
		switch {
		case m.Decoded.Flop != nil:
			flids = append(flids, m.Decoded.Flop.FLID)
		case m.Decoded.Schedule != nil:
			for i := range m.Decoded.Schedule.Records {
				if v, ok := m.Decoded.Schedule.Records[i].FLID.Get(); ok {
					flids = append(flids, v)
				}
			}
		}
	}
	return s, s.Preload(ctx, flids)
}

// FlightOps and Schedule are Processor under the names of the message families they serve.
type (
	FlightOps = Processor
	Schedule  = Processor
)

// Apply applies one flight message on top of the session's earlier ones. On error the session
// is unchanged.
func (s *Session) Apply(ctx context.Context, m processor.Message) (processor.Outcome, error) {
	switch m.Decoded.Kind {
	case sis.KindFlightUpdate, sis.KindFlightDelete:
		return s.flop(ctx, m)
	case sis.KindScheduleSnapshot, sis.KindScheduleAdd, sis.KindScheduleDelete:
		return s.schedule(ctx, m)
	}
	return processor.Outcome{}, processor.Errorf(processor.ClassUnsupported, "flight processor: kind %s", m.Decoded.Kind)
}

func (s *Session) flop(ctx context.Context, m processor.Message) (processor.Outcome, error) {
	op := m.Decoded.Flop
	if op == nil {
		return processor.Outcome{}, processor.Errorf(processor.ClassProtocol, "FLOP body missing")
	}
	r, err := s.apply(ctx, m, []flight.Input{{Op: op}}, nil)
	if err != nil {
		return processor.Outcome{}, err
	}
	return r.outcome(), nil
}

// schedule validates the whole package, then applies every record.
func (s *Session) schedule(ctx context.Context, m processor.Message) (processor.Outcome, error) {
	sch := m.Decoded.Schedule
	if sch == nil {
		return processor.Outcome{}, processor.Errorf(processor.ClassProtocol, "SCHD body missing")
	}
	snapshot := m.Decoded.Kind == sis.KindScheduleSnapshot
	del := m.Decoded.Kind == sis.KindScheduleDelete
	if snapshot {
		var done bool
		if err := s.tx.QueryRow(ctx, snapAppliedSQL, m.ID).Scan(&done); err != nil {
			return processor.Outcome{}, fmt.Errorf("check snapshot log: %w", err)
		}
		if done { // replay of a succeeded snapshot: audit only (SPEC §6)
			n := len(sch.Records)
			s.extras = append(s.extras, func(b *pgx.Batch) { b.Queue(snapLogSQL, m.ID, nil, nil, 0, 0, n, m.Now) })
			return processor.Outcome{Reason: "replay: snapshot already applied"}, nil
		}
	}
	scope, err := ValidateSchedule(sch, del)
	if err != nil {
		return processor.Outcome{}, err
	}
	inputs := make([]flight.Input, len(sch.Records))
	for i := range sch.Records {
		inputs[i] = flight.Input{Record: &sch.Records[i], Delete: del}
	}
	var extra func(*pgx.Batch, result)
	if snapshot {
		extra = func(b *pgx.Batch, r result) {
			b.Queue(snapLogSQL, m.ID, scope.start, scope.end, r.inserted, r.updated, r.unchanged, m.Now)
		}
	}
	r, err := s.apply(ctx, m, inputs, extra)
	if err != nil {
		return processor.Outcome{}, err
	}
	if del {
		return r.outcome(), nil
	}
	return processor.Outcome{Reason: r.notes()}, nil
}

// scope is the operation-day range of a schedule package.
type scope struct{ start, end *string }

// ValidateSchedule checks a whole schedule package before anything is applied (INV-19): RECS
// equals the record count, every record has the required fields (FLID only for DEL), and no
// FLID occurs twice with different operation days. The stored operation days are checked when
// the records are applied, before anything is written.
func ValidateSchedule(sch *sis.Schedule, del bool) (scope, error) {
	var sc scope
	if sch.DeclaredRecs != len(sch.Records) {
		return sc, processor.Errorf(processor.ClassProtocol, "SCHD RECS %d does not match the %d FLTR records", sch.DeclaredRecs, len(sch.Records))
	}
	days := make(map[int64]string, len(sch.Records))
	for i := range sch.Records {
		r := &sch.Records[i]
		at := "SCHD FLTR[" + strconv.Itoa(i+1) + "]"
		if !r.FLID.HasValue() {
			return sc, processor.Errorf(processor.ClassProtocol, "%s: FLID required", at)
		}
		if del {
			continue
		}
		for _, f := range []struct {
			name string
			ok   bool
		}{
			{"ALCD", r.ALCD.HasValue()}, {"FLNO", r.FLNO.HasValue()}, {"MVIN", r.MVIN.HasValue()},
			{"SODT", r.SODT.HasValue()}, {"FLTY", r.FLTY.HasValue()}, {"FLIN", r.FLIN.HasValue()},
			{"ACFT", r.ACFT.HasValue()},
		} {
			if !f.ok {
				return sc, processor.Errorf(processor.ClassProtocol, "%s (FLID %d): %s required", at, r.FLID.Value, f.name)
			}
		}
		day := flight.OperationDay(r.SODT.Value)
		if d, ok := days[r.FLID.Value]; ok && d != day {
			return sc, processor.Errorf(processor.ClassProtocol, "FLID %d occurs with operation days %s and %s in one package", r.FLID.Value, d, day)
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

// result is what a message did.
type result struct {
	applied, skipped             int
	inserted, updated, unchanged int
	skipReasons                  []string
	notesList                    []string
}

func (r result) outcome() processor.Outcome {
	if r.applied == 0 && len(r.skipReasons) > 0 {
		return processor.Outcome{Skipped: true, Reason: r.skipReasons[0]}
	}
	return processor.Outcome{Reason: r.notes()}
}

func (r result) notes() string { return strings.Join(r.notesList, "; ") }

// Session applies the flight messages of one pump batch in memory and writes them together at
// Flush: the stored states of every flight the batch names are loaded once, each message is
// applied on top of the previous ones (its own version bump and events, exactly as if it had its
// own transaction), and Flush writes each changed flight once with every event in message order.
// A message that fails leaves no trace in the session.
type Session struct {
	tx       pgx.Tx
	now      time.Time
	stored   map[int64]*flight.State  // as stored before the session; a nil entry: known absent
	children map[int64][]flight.Child // stored MAFL elements per master FLID
	cur      map[int64]*flight.State  // after the messages applied so far
	touched  map[int64]bool           // changed by the session
	floor    map[int64]int64          // versions a re-used FLID must exceed (its purged history)
	events   []event.Event
	extras   []func(*pgx.Batch)
}

// NewSession starts an empty session in tx.
func NewSession(tx pgx.Tx, now time.Time) *Session {
	return &Session{tx: tx, now: now, stored: map[int64]*flight.State{}, children: map[int64][]flight.Child{},
		cur: map[int64]*flight.State{}, touched: map[int64]bool{}, floor: map[int64]int64{}}
}

// Preload loads the stored states of flids not loaded yet, in one statement.
func (s *Session) Preload(ctx context.Context, flids []int64) error {
	var missing []int64
	for _, id := range flids {
		if _, ok := s.stored[id]; !ok {
			missing = append(missing, id)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	slices.Sort(missing)
	missing = slices.Compact(missing)
	l, err := Load(ctx, s.tx, missing)
	if err != nil {
		return err
	}
	for _, id := range missing {
		st := l.States[id]
		s.stored[id] = st
		if st != nil {
			c := st.Clone()
			s.cur[id] = &c
		} else {
			s.cur[id] = nil
		}
	}
	for id, c := range l.Children {
		if _, ok := s.children[id]; !ok {
			s.children[id] = c
		}
	}
	var absent []int64
	for _, id := range missing {
		if l.States[id] == nil {
			absent = append(absent, id)
		}
	}
	if len(absent) > 0 {
		// A FLID that comes back after a purge continues above its history and purge TOMBSTONE,
		// so consumers deduplicating by (flid, state_version) never drop its events.
		rows, err := s.tx.Query(ctx, historyVersionSQL, absent)
		if err != nil {
			return fmt.Errorf("read purged versions: %w", err)
		}
		var id, v int64
		if _, err := pgx.ForEachRow(rows, []any{&id, &v}, func() error { s.floor[id] = v + 1; return nil }); err != nil {
			return fmt.Errorf("read purged versions: %w", err)
		}
	}
	return nil
}

// apply is the engine shared by every flight message: apply each input in order (package
// flight), derive MAFL for every master whose child set may have changed, bump each changed
// flight once, and keep the changes and events for Flush.
func (s *Session) apply(ctx context.Context, m processor.Message, inputs []flight.Input, extra func(*pgx.Batch, result)) (result, error) {
	var r result
	flids := make([]int64, 0, len(inputs))
	for _, in := range inputs {
		flids = append(flids, in.FLID())
	}
	slices.Sort(flids)
	flids = slices.Compact(flids)
	if err := s.Preload(ctx, flids); err != nil {
		return r, err
	}
	work := make(map[int64]*flight.State, len(flids))
	for _, id := range flids {
		if c := s.cur[id]; c != nil {
			cl := c.Clone()
			work[id] = &cl
		}
	}
	for _, in := range inputs {
		id := in.FLID()
		next, ch, err := flight.Apply(work[id], in)
		var v *flight.Violation
		switch {
		case errors.As(err, &v):
			return r, processor.Errorf(processor.ClassProtocol, "%s", v.Reason)
		case errors.Is(err, flight.ErrNoFlight), errors.Is(err, flight.ErrDeleted):
			r.skipped++
			r.skipReasons = append(r.skipReasons, err.Error())
			continue
		case err != nil:
			return r, err
		}
		r.applied++
		r.notesList = append(r.notesList, ch.Notes...)
		work[id] = &next
	}

	// Flights this message changed, before MAFL.
	overlay := map[int64]*flight.State{}
	for _, id := range flids {
		if w := work[id]; w != nil && flight.Changed(s.cur[id], w) {
			overlay[id] = w
		}
	}
	// Masters whose projection may change (INV-22), and the message's own flights (a created
	// or re-activated master derives its MAFL from the stored children).
	candidates := map[int64]bool{}
	for id, w := range overlay {
		for _, mid := range flight.Masters(s.cur[id], w) {
			candidates[mid] = true
		}
		candidates[id] = true
	}
	var missing []int64
	for id := range candidates {
		if _, ok := s.stored[id]; !ok {
			missing = append(missing, id)
		}
	}
	if err := s.Preload(ctx, missing); err != nil {
		return r, err
	}
	for id := range candidates {
		if _, ok := work[id]; !ok && s.cur[id] != nil {
			c := s.cur[id].Clone()
			work[id] = &c
		}
	}
	// The children overlay: every flight the session changed before, then this message's.
	all := make(map[int64]*flight.State, len(s.touched)+len(overlay))
	for id := range s.touched {
		all[id] = s.cur[id]
	}
	for id, w := range overlay {
		all[id] = w
	}
	for id := range candidates {
		w := work[id]
		if w == nil || w.Status != flight.Active { // dangling reference or DELETED master
			continue
		}
		w.MAFL = flight.Project(id, s.children[id], all)
	}

	// Bump every changed flight once and record its events.
	ids := make([]int64, 0, len(work))
	for id := range work {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	type bumped struct {
		id   int64
		next *flight.State
	}
	var changed []bumped
	for _, id := range ids {
		old, next := s.cur[id], work[id]
		if !flight.Changed(old, next) {
			if old.Exists() && slices.Contains(flids, id) {
				r.unchanged++
			}
			continue
		}
		if old.Exists() {
			next.Version = old.Version + 1
		} else {
			next.Version = s.floor[id] + 1
		}
		if old.Exists() {
			r.updated++
		} else {
			r.inserted++
		}
		next.LastMsgID = m.ID
		s.events = event.Changed(s.events, event.Source{MsgID: m.ID, Type: m.Decoded.Meta.TYPE, Styp: m.Decoded.Meta.STYP}, old, next)
		changed = append(changed, bumped{id, next})
	}
	for _, c := range changed {
		s.cur[c.id] = c.next
		s.touched[c.id] = true
	}
	if extra != nil {
		s.extras = append(s.extras, func(b *pgx.Batch) { extra(b, r) })
	}
	return r, nil
}

// Flush writes every flight the session changed (once, from its stored to its final state) and
// every event in message order, in one round trip.
func (s *Session) Flush(ctx context.Context) error {
	ids := make([]int64, 0, len(s.touched))
	for id := range s.touched {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	changes := make([]Change, 0, len(ids))
	for _, id := range ids {
		changes = append(changes, Change{Old: s.stored[id], Next: s.cur[id]})
	}
	err := Save(ctx, s.tx, changes, s.now, s.extras...)
	if err == nil {
		err = outbox.Enqueue(ctx, s.tx, s.now, s.events...)
	}
	// The session is spent either way: what it held is now stored (or rolled back with the tx).
	for _, id := range ids {
		s.stored[id] = s.cur[id]
	}
	s.touched, s.events, s.extras = map[int64]bool{}, nil, nil
	return err
}
