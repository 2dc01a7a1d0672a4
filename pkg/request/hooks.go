package request

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/rs/zerolog"
)

// Hooks are the request rules the processor plug-ins call inside the engine's transaction
// (docs/requests.md): the RESP guard (Answer) and the self-healing trigger (UnknownFlightTx).
// The flight handler (pkg/processor/flights) and the reference-data handler (pkg/refdata) hold
// one; cmd/processor builds it.
type Hooks struct {
	guard    *Guard
	triggers *Triggers
	loc      *time.Location
	log      zerolog.Logger
}

// NewHooks returns the hooks over store with the triggers' configuration.
func NewHooks(store *Store, tc TriggerConfig, metrics *Metrics, log zerolog.Logger) (*Hooks, error) {
	if metrics == nil {
		metrics = NewMetrics(nil)
	}
	trig, err := NewTriggers(store, tc, metrics, log)
	if err != nil {
		return nil, err
	}
	return &Hooks{guard: NewGuard(store, metrics, log), triggers: trig, loc: tc.Location,
		log: log.With().Str("part", "requests").Logger()}, nil
}

// Location is the airport zone the hooks read operation days in.
func (h *Hooks) Location() *time.Location { return h.loc }

// Triggers returns the automatic triggers (Bootstrap is called by cmd/processor).
func (h *Hooks) Triggers() *Triggers { return h.triggers }

// Answered is the guard's result for one response.
type Answered struct {
	// Skip is the SKIPPED reason (no-open-request[:detail]) when no request matched: the
	// response must change nothing.
	Skip string
	// Request is the request the response answered, as it was before it was closed DONE, when
	// Skip is empty.
	Request Request
}

// Note is the outcome reason of an applied response: which request it answered and how ("" when
// none: skipped, or no guard ran).
func (a Answered) Note() string {
	if a.Skip != "" || a.Request.ID == 0 {
		return ""
	}
	return fmt.Sprintf("answers request %d (%s, %s match)", a.Request.ID, a.Request.Scope, MatchFallback)
}

// Answer runs the RESP guard for resp (message msgID) in tx: without a matching request it
// returns Skip and does not call apply; otherwise it calls apply (the response's change) and then
// records the answer on the request in the same transaction. An error of apply is returned as is
// and the request stays as it was (the transaction rolls back). ErrAwaitingSend (wrapped) means
// the response must be retried later.
func (h *Hooks) Answer(ctx context.Context, tx pgx.Tx, resp Response, msgID int64, now time.Time, apply func() error) (Answered, error) {
	v, err := h.guard.Check(ctx, tx, resp, now)
	if err != nil {
		return Answered{}, err
	}
	if !v.Matched {
		h.log.Info().Int64("msg_id", msgID).Str("kind", string(resp.Kind)).Str("list", resp.ListCode).
			Str("reason", v.Skip).Msg("requests: response without a matching request skipped")
		return Answered{Skip: v.Skip}, nil
	}
	if err := apply(); err != nil {
		return Answered{}, err
	}
	if err := h.guard.Close(ctx, tx, v, msgID, now); err != nil {
		return Answered{}, err
	}
	return Answered{Request: v.Match.Request}, nil
}

// UnknownFlightTx feeds the self-healing trigger with a FLOP that ended SKIPPED no-match:FLID:
// its operation day is read from the FFID (a FLOP without a readable FFID counts for nothing).
// It reports whether a schedule request was registered.
func (h *Hooks) UnknownFlightTx(ctx context.Context, tx pgx.Tx, ffid string, now time.Time) (bool, error) {
	day, ok := OperationDayFromFFID(ffid, h.loc)
	if !ok {
		return false, nil
	}
	return h.triggers.UnknownFlightTx(ctx, tx, day, now)
}
