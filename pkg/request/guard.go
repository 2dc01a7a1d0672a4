package request

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/rs/zerolog"

	"github.com/msgx/msgx/pkg/procstate"
	"github.com/msgx/msgx/pkg/sis"
)

// Guard is the RESP guard of the processor plug-ins (INV-25, docs/requests.md): a SCHD RESP or a
// list RESP is applied only when an open request within its timeout, sent no later than the
// response's DTTM, matches it, and closes that request DONE in the transaction that applied it.
type Guard struct {
	store   *Store
	metrics *Metrics
	log     zerolog.Logger
}

// NewGuard returns the guard.
func NewGuard(store *Store, metrics *Metrics, log zerolog.Logger) *Guard {
	if metrics == nil {
		metrics = NewMetrics(nil)
	}
	return &Guard{store: store, metrics: metrics, log: log.With().Str("part", "requests").Logger()}
}

// Verdict is the guard's answer for one response.
type Verdict struct {
	// Matched: apply the response, then call Close in the same transaction.
	Matched bool
	Match   Matched
	// Skip is the SKIPPED reason when not matched: no-open-request[:detail].
	Skip string
}

// ErrAwaitingSend is returned (wrapped) by Check when only a REGISTERED request would match the
// response: its outbound row may already be in coutmsgs (a send interrupted before its local
// commit) while the jobs sweep has not confirmed it yet. The processor retries the message (an
// INFRA failure), and it matches once the request is SENT.
var ErrAwaitingSend = errors.New("request: response waits for its request's send to be confirmed")

// Check locks the requests of the response's kind that may take an answer at now in tx and picks
// the one it answers (Match). An unmatched response must be SKIPPED with Verdict.Skip and change
// nothing.
func (g *Guard) Check(ctx context.Context, tx pgx.Tx, resp Response, now time.Time) (Verdict, error) {
	cands, err := g.store.CandidatesTx(ctx, tx, resp.Kind, now)
	if err != nil {
		return Verdict{}, fmt.Errorf("RESP guard: %w", err)
	}
	m, why, ok := Match(resp, cands)
	switch {
	case ok:
		return Verdict{Matched: true, Match: m}, nil
	case why == AwaitingSend:
		g.metrics.Responses.WithLabelValues(string(resp.Kind), string(AwaitingSend)).Inc()
		return Verdict{}, fmt.Errorf("%w: a REGISTERED %s request covers it", ErrAwaitingSend, resp.Kind)
	}
	g.metrics.Responses.WithLabelValues(string(resp.Kind), SkipNoOpenRequest).Inc()
	var refusal string
	if why != NoCandidate {
		refusal = string(why)
	}
	return Verdict{Skip: procstate.NoOpenRequest(refusal).String()}, nil
}

// Close records the answer msgID on the matched request inside the transaction that applied the
// response (so DONE never precedes the data). Every match today is a fallback match and is
// logged as one.
func (g *Guard) Close(ctx context.Context, tx pgx.Tx, v Verdict, msgID int64, now time.Time) error {
	r := v.Match.Request
	if err := g.store.CompleteTx(ctx, tx, v.Match, msgID, now, MatchFallback); err != nil {
		return err
	}
	g.metrics.Responses.WithLabelValues(string(r.Kind), "matched").Inc()
	g.metrics.Outcomes.WithLabelValues(string(r.Kind), OutcomeDone).Inc()
	g.log.Info().Int64("req_id", r.ID).Int64("msg_id", msgID).Str("kind", string(r.Kind)).
		Str("scope", r.Scope).Str("status", string(r.Status)).Str("match", MatchFallback).
		Msg("requests: answered (fallback match: an open request of the kind and scope, sent no later than DTTM)")
	return nil
}

// ScheduleResponse describes a decoded SCHD RESP for the guard: its DTTM and the operation days
// of its records (the local calendar day of SODT in loc).
func ScheduleResponse(m *sis.Message, loc *time.Location) Response {
	resp := Response{Kind: Schedule, DTTM: m.Meta.DTTM}
	seen := map[time.Time]bool{}
	if m.Schedule != nil {
		for _, rec := range m.Schedule.Records {
			sodt, ok := rec.SODT.Get()
			if !ok {
				continue
			}
			d := Day(sodt.In(loc))
			if !seen[d] {
				seen[d] = true
				resp.Days = append(resp.Days, d)
			}
		}
	}
	return resp
}

// ListResponse describes a decoded list RESP for the guard.
func ListResponse(m *sis.Message) Response {
	return Response{Kind: List, ListCode: m.Meta.TYPE, DTTM: m.Meta.DTTM}
}

// OperationDayFromFFID reads the operation day from a FLOP's FFID
// (<ALCD>-<FLNO>-<MVIN>-<DDMONYYHHMM>-<FLIN>, docs/sis.md §d); ok is false when it cannot.
func OperationDayFromFFID(ffid string, loc *time.Location) (time.Time, bool) {
	parts := strings.Split(ffid, "-")
	if len(parts) != 5 {
		return time.Time{}, false
	}
	t, ok := sis.ParseDateTime(parts[3], loc)
	if !ok {
		return time.Time{}, false
	}
	return Day(t), true
}
