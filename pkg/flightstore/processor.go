package flightstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/msgx/msgx/pkg/flight"
	"github.com/msgx/msgx/pkg/pump"
	"github.com/msgx/msgx/pkg/sis"
)

// Event targets and types (docs/flight.md, the outbox contract).
const (
	TargetMsg  = "KAFKA:msg"
	TargetSchd = "KAFKA:schd"
	Upsert     = "UPSERT"
	Tombstone  = "TOMBSTONE"
)

// FlightOps applies FLOP messages (KindFlightUpdate and KindFlightDelete).
type FlightOps struct{}

var _ pump.Processor = FlightOps{}

// Apply applies one FLOP to its flight.
func (FlightOps) Apply(ctx context.Context, tx pgx.Tx, m pump.Message) (pump.Outcome, error) {
	op := m.Decoded.Flop
	if op == nil {
		return pump.Outcome{}, pump.Errorf(pump.ClassProtocol, "FLOP body missing")
	}
	r, err := applyInputs(ctx, tx, m, []flight.Input{{Op: op}}, nil)
	if err != nil {
		return pump.Outcome{}, err
	}
	return r.outcome(), nil
}

// Schedule applies SCHD messages: DNLD/RESP (KindScheduleSnapshot), ADFT and other add/update
// subtypes (KindScheduleAdd) and DEL (KindScheduleDelete).
type Schedule struct{}

var _ pump.Processor = Schedule{}

// Apply validates the whole package, then applies every record.
func (Schedule) Apply(ctx context.Context, tx pgx.Tx, m pump.Message) (pump.Outcome, error) {
	sch := m.Decoded.Schedule
	if sch == nil {
		return pump.Outcome{}, pump.Errorf(pump.ClassProtocol, "SCHD body missing")
	}
	snapshot := m.Decoded.Kind == sis.KindScheduleSnapshot
	del := m.Decoded.Kind == sis.KindScheduleDelete
	if snapshot {
		var done bool
		if err := tx.QueryRow(ctx, snapAppliedSQL, m.ID).Scan(&done); err != nil {
			return pump.Outcome{}, fmt.Errorf("check snapshot log: %w", err)
		}
		if done { // replay of a succeeded snapshot: audit only (SPEC §6)
			if _, err := tx.Exec(ctx, snapLogSQL, m.ID, nil, nil, 0, 0, len(sch.Records), m.Now); err != nil {
				return pump.Outcome{}, fmt.Errorf("write snapshot log: %w", err)
			}
			return pump.Outcome{Reason: "replay: snapshot already applied"}, nil
		}
	}
	scope, err := ValidateSchedule(sch, del)
	if err != nil {
		return pump.Outcome{}, err
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
	r, err := applyInputs(ctx, tx, m, inputs, extra)
	if err != nil {
		return pump.Outcome{}, err
	}
	if del {
		return r.outcome(), nil
	}
	return pump.Outcome{Reason: r.notes()}, nil
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
		return sc, pump.Errorf(pump.ClassProtocol, "SCHD RECS %d does not match the %d FLTR records", sch.DeclaredRecs, len(sch.Records))
	}
	days := make(map[int64]string, len(sch.Records))
	for i := range sch.Records {
		r := &sch.Records[i]
		at := "SCHD FLTR[" + strconv.Itoa(i+1) + "]"
		if !r.FLID.HasValue() {
			return sc, pump.Errorf(pump.ClassProtocol, "%s: FLID required", at)
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
				return sc, pump.Errorf(pump.ClassProtocol, "%s (FLID %d): %s required", at, r.FLID.Value, f.name)
			}
		}
		day := flight.OperationDay(r.SODT.Value)
		if d, ok := days[r.FLID.Value]; ok && d != day {
			return sc, pump.Errorf(pump.ClassProtocol, "FLID %d occurs with operation days %s and %s in one package", r.FLID.Value, d, day)
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

func (r result) outcome() pump.Outcome {
	if r.applied == 0 && len(r.skipReasons) > 0 {
		return pump.Outcome{Skipped: true, Reason: r.skipReasons[0]}
	}
	return pump.Outcome{Reason: r.notes()}
}

func (r result) notes() string { return strings.Join(r.notesList, "; ") }

// applyInputs is the engine shared by every flight message: load the flights, apply each input
// in order (package flight), derive MAFL for every master whose child set may have changed,
// bump each changed flight once, save and write its two events.
func applyInputs(ctx context.Context, tx pgx.Tx, m pump.Message, inputs []flight.Input, extra func(*pgx.Batch, result)) (result, error) {
	var r result
	flids := make([]int64, 0, len(inputs))
	for _, in := range inputs {
		flids = append(flids, in.FLID())
	}
	slices.Sort(flids)
	flids = slices.Compact(flids)
	loaded, err := Load(ctx, tx, flids)
	if err != nil {
		return r, err
	}
	work := make(map[int64]*flight.State, len(flids))
	for id, s := range loaded.States {
		c := s.Clone()
		work[id] = &c
	}
	for _, in := range inputs {
		id := in.FLID()
		next, ch, err := flight.Apply(work[id], in)
		var v *flight.Violation
		switch {
		case errors.As(err, &v):
			return r, pump.Errorf(pump.ClassProtocol, "%s", v.Reason)
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

	// Flights the message changed, before MAFL.
	overlay := map[int64]*flight.State{}
	for _, id := range flids {
		if w := work[id]; w != nil && flight.Changed(loaded.States[id], w) {
			overlay[id] = w
		}
	}
	// Masters whose projection may change (INV-22), and the message's own flights (a created
	// or re-activated master derives its MAFL from the stored children).
	candidates := map[int64]bool{}
	for id, w := range overlay {
		for _, mid := range flight.Masters(loaded.States[id], w) {
			candidates[mid] = true
		}
		candidates[id] = true
	}
	var missing []int64
	for id := range candidates {
		if work[id] == nil {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		more, err := Load(ctx, tx, missing)
		if err != nil {
			return r, err
		}
		for id, s := range more.States {
			loaded.States[id] = s
			c := s.Clone()
			work[id] = &c
		}
		for id, c := range more.Children {
			loaded.Children[id] = c
		}
	}
	for id := range candidates {
		w := work[id]
		if w == nil || w.Status != flight.Active { // dangling reference or DELETED master
			continue
		}
		w.MAFL = flight.Project(id, loaded.Children[id], overlay)
	}

	// Bump every changed flight once and build its events.
	var changes []Change
	ev := &events{}
	ids := make([]int64, 0, len(work))
	for id := range work {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		old, next := loaded.States[id], work[id]
		if !flight.Changed(old, next) {
			if old.Exists() && slices.Contains(flids, id) {
				r.unchanged++
			}
			continue
		}
		if old.Exists() {
			next.Version = old.Version + 1
			r.updated++
		} else {
			next.Version = 1
			r.inserted++
		}
		next.LastMsgID = m.ID
		changes = append(changes, Change{Old: old, Next: next})
		ev.add(m, old, next)
	}
	err = Save(ctx, tx, changes, m.Now, func(b *pgx.Batch) {
		if len(ev.targets) > 0 {
			b.Queue(insertEventsSQL, ev.targets, ev.keys, ev.types, ev.versions, m.ID, m.Now, ev.payloads)
		}
		if extra != nil {
			extra(b, r)
		}
	})
	return r, err
}

// events collects the outbox rows of one message, in order.
type events struct {
	targets, keys, types []string
	versions             []int64
	payloads             []*string
}

// add appends the two events of one changed flight: KAFKA:msg with the changed fields and
// KAFKA:schd with the full state (NULL payload for a TOMBSTONE).
func (e *events) add(m pump.Message, old, next *flight.State) {
	typ := Upsert
	if next.Status == flight.Deleted {
		typ = Tombstone
	}
	key := strconv.FormatInt(next.FLID, 10)
	ch := flight.Diff(old, next)
	b := make([]byte, 0, 512)
	b = append(b, `{"flid":`...)
	b = strconv.AppendInt(b, next.FLID, 10)
	b = append(b, `,"msg_id":`...)
	b = strconv.AppendInt(b, m.ID, 10)
	b = append(b, `,"type":`...)
	b = appendJSONString(b, m.Decoded.Meta.TYPE)
	b = append(b, `,"styp":`...)
	b = appendJSONString(b, m.Decoded.Meta.STYP)
	b = append(b, `,"state_version":`...)
	b = strconv.AppendInt(b, next.Version, 10)
	b = append(b, `,"event":"`...)
	b = append(b, typ...)
	b = append(b, `","changed":`...)
	b = ch.AppendJSON(b)
	b = append(b, '}')
	msg := string(b)
	var schd *string
	if typ == Upsert {
		s := string(next.AppendJSON(make([]byte, 0, 4096)))
		schd = &s
	}
	e.targets = append(e.targets, TargetMsg, TargetSchd)
	e.keys = append(e.keys, key, key)
	e.types = append(e.types, typ, typ)
	e.versions = append(e.versions, next.Version, next.Version)
	e.payloads = append(e.payloads, &msg, schd)
}

func appendJSONString(b []byte, s string) []byte {
	q, _ := json.Marshal(s) // a string always marshals
	return append(b, q...)
}
