package dispatch

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/rs/zerolog"

	"github.com/msgx/msgx/pkg/clip"
	"github.com/msgx/msgx/pkg/clock"
	"github.com/msgx/msgx/pkg/event"
	"github.com/msgx/msgx/pkg/kafka"
	"github.com/msgx/msgx/pkg/leader"
	"github.com/msgx/msgx/pkg/outbox"
)

// Periods of the report of the sends: the reporter looks at the link every reportTick and
// writes when the report changed (blocked or not, why, since when), and every reportEvery
// otherwise, so the operators' status can tell a silent dispatcher from a healthy one.
const (
	reportTick  = time.Second
	reportEvery = 5 * time.Second
)

// reportLoop names the report loop (liveness ticks).
const reportLoop = "send-report"

// maxReportedError bounds the error text of a report.
const maxReportedError = 500

// Reporter writes the leader's report of its sends to PostgreSQL (dispatch_send,
// outbox.Store.ReportSends), per target: whether the link judges the target's sends blocked
// (Link.Blocked, the judgement behind readiness), why and since when, the brokers concerned
// (the bootstrap brokers that do not answer a metadata request, asked once the sends are
// blocked), and the last send the broker acknowledged. It runs beside the term (Beside), also
// while the term dials again, so a frozen broker is reported while nothing can be sent.
type Reporter struct {
	link   *Link
	disp   *Dispatcher
	topics [][2]string // target, topic
	log    zerolog.Logger
	// Tick and Every are reportTick and reportEvery (tests shorten them).
	Tick, Every time.Duration
}

// NewReporter reports the sends of disp through link (KAFKA:msg to its changes topic, KAFKA:schd
// to its state topic) in disp's store: blocked when the link says so (Link.Blocked), or while
// the term has not read the topics' tail (Dispatcher.TailBlocked).
func NewReporter(link *Link, disp *Dispatcher, log zerolog.Logger) *Reporter {
	return &Reporter{link: link, disp: disp, log: log, Tick: reportTick, Every: reportEvery,
		topics: [][2]string{{event.TargetMsg, disp.cfg.TopicChanges}, {event.TargetSchd, disp.cfg.TopicState}}}
}

// Beside runs work while the reporter writes reports under lease; the reports end with work.
func (r *Reporter) Beside(ctx context.Context, lease leader.Lease, work func(context.Context) error) error {
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.run(rctx, lease)
	}()
	err := work(ctx)
	cancel()
	<-done
	return err
}

// run writes a report at once, then as the periods say, until ctx ends or lease is fenced.
func (r *Reporter) run(ctx context.Context, lease leader.Lease) {
	defer lease.Stopped(reportLoop)
	var last []outbox.SendState
	var wrote time.Time
	for {
		lease.Tick(reportLoop)
		now := r.link.Clock.Now()
		due := now.Sub(wrote) >= r.Every
		states := r.states(now, last, due)
		if due || !sameReport(states, last) {
			err := r.write(ctx, lease, states, now)
			switch {
			case ctx.Err() != nil:
				return
			case errors.Is(err, leader.ErrFenced):
				r.log.Warn().Err(err).Msg("dispatcher: send report stops")
				return
			case err != nil:
				r.log.Warn().Err(err).Msg("dispatcher: send report not written")
			default:
				last, wrote = states, now
			}
		}
		if !clock.WallSleep(ctx, r.Tick) {
			return
		}
	}
}

// write writes states, waiting at most a report period: a database that does not answer delays
// the next report, it does not hang the loop (the report goes stale, and says so).
func (r *Reporter) write(ctx context.Context, lease leader.Lease, states []outbox.SendState, now time.Time) error {
	wctx, cancel := context.WithTimeout(ctx, r.Every)
	defer cancel()
	return r.disp.store.ReportSends(wctx, lease, states, now)
}

// states is the report at now; last is the previous one written, whose brokers a report that
// stays blocked the same way keeps unless a refresh is due.
func (r *Reporter) states(now time.Time, last []outbox.SendState, refresh bool) []outbox.SendState {
	out := make([]outbox.SendState, len(r.topics))
	for i, tt := range r.topics {
		st := outbox.SendState{Target: tt[0], Topic: tt[1], Brokers: r.link.cfg.Brokers,
			LastSentAt: r.link.LastSent(tt[1]), StallAfter: r.link.StallAfter, ReportEvery: r.Every}
		b := r.link.Blocked(tt[1], now)
		if b == nil {
			b = r.disp.TailBlocked()
		}
		if b != nil {
			st.BlockedSince, st.Class = b.Since, b.Class
			st.Error = clip.String(b.Err.Error(), maxReportedError)
		}
		out[i] = st
	}
	if refresh {
		last = nil
	}
	r.nameBrokers(out, last)
	return out
}

// nameBrokers names the bootstrap brokers that do not answer for the blocked states: kept from
// last while it was blocked the same way, else asked (once for every target).
func (r *Reporter) nameBrokers(states, last []outbox.SendState) {
	var silent []string
	asked := false
	for i := range states {
		st := &states[i]
		if st.BlockedSince.IsZero() {
			continue
		}
		if i < len(last) && sameState(*st, last[i]) {
			st.Brokers, st.BrokersSilent = last[i].Brokers, last[i].BrokersSilent
			continue
		}
		if !asked {
			var err error
			if silent, err = kafka.Silent(r.link.cfg, r.link.cfg.CheckTimeout); err != nil {
				r.log.Warn().Err(err).Msg("dispatcher: brokers not asked")
			}
			asked = true
		}
		if len(silent) > 0 {
			st.Brokers, st.BrokersSilent = silent, true
		}
	}
}

// sameState reports whether a and b say the same of a target's sends (the error text and the
// times of the last sends aside).
func sameState(a, b outbox.SendState) bool {
	return a.Target == b.Target && a.BlockedSince.Equal(b.BlockedSince) && a.Class == b.Class
}

// sameReport reports whether a and b say the same of every target (sameState).
func sameReport(a, b []outbox.SendState) bool {
	return slices.EqualFunc(a, b, sameState)
}
