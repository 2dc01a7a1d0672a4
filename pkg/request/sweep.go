package request

import (
	"context"
	"errors"
	"fmt"

	"github.com/rs/zerolog"

	"github.com/msgx/msgx/pkg/clock"
)

// Sweeper is the jobs stage's request work, one bounded pass per call: expire the requests past
// their timeout, send the REGISTERED ones (first sends of automatic triggers, and the sends a
// crash interrupted), move SENT to WAITING when the transport sent the outbound row, and refresh
// the gauges.
type Sweeper struct {
	store   *Store
	sender  *Sender // nil in shadow mode: nothing is sent
	out     Outbox  // nil in shadow mode
	clock   clock.Clock
	metrics *Metrics
	log     zerolog.Logger
	limit   int
}

// NewSweeper returns a sweeper; sender and out are nil in shadow mode.
func NewSweeper(store *Store, sender *Sender, out Outbox, clk clock.Clock, metrics *Metrics, log zerolog.Logger) *Sweeper {
	if metrics == nil {
		metrics = NewMetrics(nil)
	}
	return &Sweeper{store: store, sender: sender, out: out, clock: clk, metrics: metrics,
		log: log.With().Str("part", "requests").Logger(), limit: 100}
}

// SweepResult is what one pass did.
type SweepResult struct {
	Expired, Sent, Waiting int
}

// Sweep runs one pass. Errors of single requests are logged and joined; the pass goes on.
func (w *Sweeper) Sweep(ctx context.Context) (SweepResult, error) {
	var res SweepResult
	var errs []error
	now := w.clock.Now()
	expired, err := w.store.ExpireDue(ctx, now, w.limit)
	if err != nil {
		errs = append(errs, err)
	}
	for _, e := range expired {
		w.metrics.Outcomes.WithLabelValues(string(e.Kind), OutcomeExpired).Inc()
		w.log.Warn().Int64("req_id", e.ID).Str("kind", string(e.Kind)).Msg("requests: expired without response")
	}
	res.Expired = len(expired)

	if w.sender != nil {
		regs, err := w.store.ByStatus(ctx, Registered, w.limit)
		if err != nil {
			errs = append(errs, err)
		}
		for _, r := range regs {
			out, err := w.sender.Send(ctx, r.ID)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if out.Already {
				continue
			}
			res.Sent++
			w.metrics.Outcomes.WithLabelValues(string(r.Kind), OutcomeSent).Inc()
			w.log.Info().Int64("req_id", r.ID).Str("kind", string(r.Kind)).Str("scope", r.Scope).
				Int64("out_msg_id", out.Request.OutMsgID).Bool("found", out.Found).Msg("requests: sent")
		}
	}
	if w.out != nil {
		n, err := w.waiting(ctx)
		res.Waiting = n
		if err != nil {
			errs = append(errs, err)
		}
	}
	if err := w.refresh(ctx); err != nil {
		errs = append(errs, err)
	}
	return res, errors.Join(errs...)
}

// waiting moves SENT requests whose outbound row the transport sent to WAITING.
func (w *Sweeper) waiting(ctx context.Context) (int, error) {
	sent, err := w.store.ByStatus(ctx, Sent, w.limit)
	if err != nil || len(sent) == 0 {
		return 0, err
	}
	ids := make([]int64, len(sent))
	for i, r := range sent {
		ids[i] = r.OutMsgID
	}
	done, err := w.out.OutboundSent(ctx, ids)
	if err != nil {
		return 0, fmt.Errorf("requests waiting: %w", err)
	}
	n := 0
	for _, r := range sent {
		if _, ok := done[r.OutMsgID]; !ok {
			continue
		}
		moved, err := w.store.MarkWaiting(ctx, r.ID, w.clock.Now())
		if err != nil {
			return n, err
		}
		if moved {
			n++
		}
	}
	return n, nil
}

// refresh sets the gauges from req_track.
func (w *Sweeper) refresh(ctx context.Context) error {
	counts, err := w.store.Counts(ctx)
	if err != nil {
		return err
	}
	oldest, err := w.store.OldestOpen(ctx)
	if err != nil {
		return err
	}
	now := w.clock.Now()
	for _, k := range []Kind{Schedule, List} {
		c := counts[k]
		w.metrics.Open.WithLabelValues(string(k)).Set(float64(c[Registered] + c[Sent] + c[Waiting]))
		age := 0.0
		if at, ok := oldest[k]; ok {
			age = max(0, now.Sub(at).Seconds())
		}
		w.metrics.OldestOpen.WithLabelValues(string(k)).Set(age)
	}
	return nil
}
