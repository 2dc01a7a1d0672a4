package procstate

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/msgx/msgx/pkg/flight"
	"github.com/msgx/msgx/pkg/flightstore"
	"github.com/msgx/msgx/pkg/identity"
	"github.com/msgx/msgx/pkg/sis"
)

// Prediction is what the processor would do with a message replayed now: its first attempt's
// outcome, from the message decoded as the engine decodes it, its identity bound as the engine
// binds it and, for a flight message, a trial of the flight rules on the stored flights
// (flight.Batch in the replay's transaction; nothing is written). Status "" is no prediction:
// the kinds whose handler decides more than the flight rules (reference data, a schedule
// snapshot or answer, which the request rules guard). The processor's MSGX_IGNORE_TYPES is its
// own setting, not read here.
type Prediction struct {
	Status Status `json:"status,omitempty"`
	Class  Class  `json:"class,omitempty"`
	Reason string `json:"reason,omitempty"`
	// Newer are the units of its flights that later-created messages set and it would write:
	// a replay leaves them as they are, a forced one overwrites them (INV-24b).
	Newer []NewerUnit `json:"newer,omitempty"`
}

// NewerUnit is a unit of a flight (a field, "state", a collection or "collection/key", as
// flight.Changes names it) and the later-created message that set it.
type NewerUnit struct {
	FLID  int64  `json:"flid"`
	Unit  string `json:"unit"`
	MsgID int64  `json:"msg_id"`
}

// predictor predicts the replays of one dry run: the identity rule is read once for the run,
// in the run's transaction.
type predictor struct {
	tx    pgx.Tx
	force bool
	rule  identity.Stored
	ruled bool // a rule is stored
}

// newPredictor reads the stored identity rule for a dry run in tx, forced or not.
func newPredictor(ctx context.Context, tx pgx.Tx, force bool) (*predictor, error) {
	rule, ok, err := identity.Load(ctx, tx)
	if err != nil {
		return nil, err
	}
	return &predictor{tx: tx, force: force, rule: rule, ruled: ok}, nil
}

// predict is the Prediction for message id replayed now: raw is its text (nil: the mailbox
// bytes only), m and derr what sis.DecodePartialString made of it.
func (pr *predictor) predict(ctx context.Context, id int64, raw *string, m *sis.Message, derr error) (Prediction, error) {
	if raw == nil {
		return Prediction{}, nil // the mailbox bytes only: left to the engine
	}
	if derr != nil {
		class, reason := ClassInfra, derr.Error()
		var se *sis.Error
		if errors.As(derr, &se) {
			class = Class(se.Class)
		}
		st := StatusFailed
		if class.Permanent() {
			st = StatusDead
		}
		return Prediction{Status: st, Class: class, Reason: reason}, nil
	}
	if dup, err := pr.duplicateOf(ctx, id, *raw, m); err != nil || dup != nil {
		return dup.orNone(), err
	}
	switch m.Kind {
	case sis.KindUnsupported:
		return Prediction{Status: StatusFailed, Class: ClassUnsupported, Reason: NoProcessor(m.Kind, m.Meta.TYPE, m.Meta.STYP)}, nil
	case sis.KindFlightUpdate, sis.KindFlightDelete, sis.KindScheduleAdd, sis.KindScheduleDelete:
	default:
		return Prediction{}, nil
	}
	inputs := flight.Inputs(m)
	r, states, err := trial(ctx, pr.tx, id, m, inputs, false)
	if err != nil {
		return Prediction{}, err
	}
	p := newer(r, states)
	if pr.force && len(p.Newer) > 0 {
		if r, _, err = trial(ctx, pr.tx, id, m, inputs, true); err != nil {
			return Prediction{}, err
		}
	}
	var v *flight.Violation
	if errors.As(r.err, &v) {
		p.Status, p.Class, p.Reason = StatusDead, ClassProtocol, v.Reason
		return p, nil
	}
	p.Status, p.Reason = FlightOutcome(r.Result)
	return p, nil
}

// duplicateOf is the prediction of a message whose identity is bound to another message within
// the stored identity rule's window (identity.Rule.Bind, as the engine binds): SKIPPED
// duplicate-of. Nil when it is not a duplicate, or no rule is stored yet.
func (pr *predictor) duplicateOf(ctx context.Context, id int64, raw string, m *sis.Message) (*Prediction, error) {
	if !pr.ruled {
		return nil, nil
	}
	key := pr.rule.Key(m.Meta)
	var b identity.Binding
	switch err := pr.tx.QueryRow(ctx, identityBindingSQL, key).Scan(&b.MsgID, &b.SHA256, &b.DTTM); {
	case errors.Is(err, pgx.ErrNoRows):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("read the identity of message %d: %w", id, err)
	}
	sum := sha256.Sum256([]byte(raw))
	v, _ := pr.rule.Bind(map[string]identity.Binding{key: b}, []identity.Claim{{Key: key, Binding: identity.Binding{MsgID: id, SHA256: sum[:], DTTM: m.Meta.DTTM}}})
	if v[0].Dup == nil {
		return nil, nil
	}
	return &Prediction{Status: StatusSkipped, Reason: Duplicate(v[0].Dup.MsgID, !bytes.Equal(v[0].Dup.SHA256, sum[:])).String()}, nil
}

// orNone is the prediction, or none (the zero Prediction) for nil.
func (p *Prediction) orNone() Prediction {
	if p == nil {
		return Prediction{}
	}
	return *p
}

// trialResult is a trial's result, or the violation that rejected the message.
type trialResult struct {
	flight.Result
	err error
}

// trial applies the inputs of message m (id) on the stored flights in memory, stamped as the
// processor stamps them; it returns the stored states it read.
func trial(ctx context.Context, tx pgx.Tx, id int64, m *sis.Message, inputs []flight.Input, force bool) (trialResult, map[int64]*flight.State, error) {
	at := flight.StampOf(id, m.Meta.DTTM)
	stamped := make([]flight.Input, len(inputs))
	for i, in := range inputs {
		in.At, in.Force = at, force
		stamped[i] = in
	}
	l := &keeping{Loader: flightstore.Loader{Tx: tx}, states: map[int64]*flight.State{}}
	r, err := flight.NewBatch(l).Apply(ctx, id, stamped)
	var v *flight.Violation
	switch {
	case errors.As(err, &v):
		return trialResult{err: err}, l.states, nil
	case err != nil:
		return trialResult{}, nil, fmt.Errorf("trial of message %d: %w", id, err)
	}
	return trialResult{Result: r}, l.states, nil
}

// newer names the units a trial found stale with the message that set each.
func newer(r trialResult, states map[int64]*flight.State) Prediction {
	var p Prediction
	for _, su := range r.StaleUnits {
		nu := NewerUnit{FLID: su.FLID, Unit: su.Unit}
		if st := states[su.FLID]; st != nil {
			nu.MsgID = st.P.Of(su.Unit).MsgID
		}
		p.Newer = append(p.Newer, nu)
	}
	return p
}

// keeping is a flight.Loader that keeps the states it loaded.
type keeping struct {
	flightstore.Loader
	states map[int64]*flight.State
}

func (k *keeping) Load(ctx context.Context, flids []int64) (flight.Stored, error) {
	s, err := k.Loader.Load(ctx, flids)
	for id, st := range s.States {
		k.states[id] = st
	}
	return s, err
}
