package request

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/rs/zerolog"

	"github.com/msgx/msgx/pkg/sis"
)

// Guard is the RESP guard of the processor plug-ins (docs/requests.md): a SCHD RESP or a list
// RESP is applied only when an open request of its kind and scope matches it, and closes that
// request DONE in the transaction that applied it.
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
	return &Guard{store: store, metrics: metrics, log: log.With().Str("component", "requests").Logger()}
}

// Verdict is the guard's answer for one response.
type Verdict struct {
	// Matched: apply the response, then call Close with Request in the same transaction.
	Matched bool
	Request Request
	// Skip is the SKIPPED reason when not matched: no-open-request[:detail].
	Skip string
}

// Check locks the open requests of the response's kind in tx and picks the one it answers
// (Match). An unmatched response must be SKIPPED with Verdict.Skip and change nothing.
func (g *Guard) Check(ctx context.Context, tx pgx.Tx, resp Response) (Verdict, error) {
	open, err := g.store.OpenTx(ctx, tx, resp.Kind)
	if err != nil {
		return Verdict{}, fmt.Errorf("RESP guard: %w", err)
	}
	r, why, ok := Match(resp, open)
	if !ok {
		g.metrics.Responses.WithLabelValues(string(resp.Kind), SkipNoOpenRequest).Inc()
		skip := SkipNoOpenRequest
		if why != NoCandidate {
			skip += ":" + string(why)
		}
		return Verdict{Skip: skip}, nil
	}
	return Verdict{Matched: true, Request: r}, nil
}

// Close records the matched request DONE with the response msgID, inside the transaction that
// applied the response (so DONE never precedes the data). Every match today is a fallback match
// and is logged as one.
func (g *Guard) Close(ctx context.Context, tx pgx.Tx, v Verdict, msgID int64, now time.Time) error {
	if err := g.store.CompleteTx(ctx, tx, v.Request.ID, msgID, now, MatchFallback); err != nil {
		return err
	}
	g.metrics.Responses.WithLabelValues(string(v.Request.Kind), "matched").Inc()
	g.metrics.Outcomes.WithLabelValues(string(v.Request.Kind), OutcomeDone).Inc()
	g.log.Info().Int64("req_id", v.Request.ID).Int64("msg_id", msgID).Str("kind", string(v.Request.Kind)).
		Str("scope", v.Request.Scope).Str("match", MatchFallback).Msg("requests: answered (fallback match: open request of the kind and scope, DTTM at or after its send)")
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
