package dispatch

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/msgx/msgx/pkg/sendclass"

	"golang.org/x/sync/errgroup"

	"github.com/msgx/msgx/pkg/backoff"
	"github.com/msgx/msgx/pkg/clock"
	"github.com/msgx/msgx/pkg/event"
	"github.com/msgx/msgx/pkg/kafka"
	"github.com/msgx/msgx/pkg/leader"
	"github.com/msgx/msgx/pkg/obs"
	"github.com/msgx/msgx/pkg/wake"
)

// Run reads the topics' tail (until it succeeds: nothing is sent before), then runs the KAFKA:msg
// and KAFKA:schd loops, the heartbeat (when it has a topic) and the backlog gauges until ctx ends (nil), a newer leader fenced the
// lease (leader.ErrFenced), the Kafka producer broke (kafka.ErrBroken: the term's caller dials
// a new one, link.go) or PostgreSQL refused a privilege to the tail read or a loop's step
// (leader.ErrStepDown: another release's instance may have it).
func (d *Dispatcher) Run(ctx context.Context, lease leader.Lease) error {
	log := d.log.With().Int64("epoch", lease.Epoch).Logger()
	log.Info().Int("batch", d.cfg.Batch).Dur("flush_period", d.cfg.FlushPeriod).Int("flush_limit", d.cfg.FlushLimit).
		Msg("dispatcher: loops start")
	// A bound read in another term may come from another server (a failover).
	d.claimFrom, d.stateFrom = 0, 0
	for _, last := range d.lastSent {
		last.Store(0)
	}
	if done, err := d.readTailUntilDone(ctx, lease); !done {
		return err
	}
	g, gctx := errgroup.WithContext(ctx)
	// The processor's commits wake the KAFKA:msg loop at once; polling stays the fallback.
	outboxWake := wake.Listen(gctx, d.store.ConnConfig(), wake.Outbox, log)
	g.Go(func() error {
		defer lease.Stopped(event.TargetMsg)
		return d.loop(gctx, event.TargetMsg, d.cfg.Idle, d.cfg.Batch, outboxWake.Wait, func(ctx context.Context) (Result, error) {
			lease.Tick(event.TargetMsg)
			return d.StepMsg(ctx, lease)
		})
	})
	g.Go(func() error {
		defer lease.Stopped(event.TargetSchd)
		return d.loop(gctx, event.TargetSchd, d.cfg.FlushPeriod, d.cfg.FlushLimit, clock.WallSleep, func(ctx context.Context) (Result, error) {
			lease.Tick(event.TargetSchd)
			return d.FlushStates(ctx, lease)
		})
	})
	if d.cfg.TopicHeartbeat != "" {
		g.Go(func() error {
			defer lease.Stopped(heartbeatLoop)
			return d.heartbeats(gctx, lease)
		})
	}
	g.Go(func() error {
		defer lease.Stopped("stats")
		obs.RefreshGauges(gctx, d.cfg.StatsPeriod, func() { lease.Tick("stats") }, d.RefreshStats, func(err error) {
			log.Warn().Err(err).Msg("dispatcher: backlog gauges not refreshed")
		})
		return nil
	})
	err := g.Wait()
	if ctx.Err() != nil && !errors.Is(err, leader.ErrFenced) {
		return nil
	}
	return err
}

// errTailNotRead is the readiness answer of a term whose tail read has not finished yet.
var errTailNotRead = errors.New("the topics' tail is not read yet: nothing is sent until it is")

// readTailUntilDone runs ReadTail until it succeeds, backing off after each failure (Kafka or
// the database unavailable, a stray old primary, or a restore waiting for the operator's
// confirmation: nothing is sent meanwhile). It reports false when ctx ended first (nil) or the
// database refused a privilege (leader.ErrStepDown).
func (d *Dispatcher) readTailUntilDone(ctx context.Context, lease leader.Lease) (bool, error) {
	defer lease.Stopped("tail")
	defer d.tail.Store(nil)
	since := d.clock.Now()
	d.tail.Store(&Blocked{Class: sendclass.Tail, Err: errTailNotRead, Since: since})
	pause := time.Duration(0)
	for {
		lease.Tick("tail")
		err := d.ReadTail(ctx, lease)
		if err == nil {
			return true, nil
		}
		if ctx.Err() != nil {
			return false, nil
		}
		if leader.Refused(err) {
			d.log.Warn().Err(err).Msg("dispatcher: the database refuses the tail read a privilege; stepping down")
			return false, fmt.Errorf("%w: the topics' tail: %w", leader.ErrStepDown, err)
		}
		notRead := fmt.Errorf("the topics' tail not read, nothing is sent: %w", err)
		d.tail.Store(&Blocked{Class: sendclass.Tail, Err: notRead, Since: since})
		pause = backoff.Next(pause, time.Second, d.cfg.ErrorWait)
		d.log.Error().Err(err).Dur("retry_in", pause).Msg("dispatcher: the topics' tail not read; nothing is sent until it is")
		if !clock.WallSleep(ctx, pause) {
			return false, nil
		}
	}
}

// loop runs step again at once after a full batch (or one that says More), else after idle waits
// wait; after an error or an outage it backs off (doubling from wait up to ErrorWait). Fencing
// and a broken producer end it with their error, a privilege PostgreSQL refuses with
// leader.ErrStepDown, ctx's end with nil.
func (d *Dispatcher) loop(ctx context.Context, target string, wait time.Duration, full int,
	idle func(context.Context, time.Duration) bool, step func(context.Context) (Result, error)) error {
	pause := time.Duration(0)
	for {
		res, err := step(ctx)
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, leader.ErrFenced):
			d.log.Warn().Str("target", target).Err(err).Msg("dispatcher: fenced by a newer leader; stopping")
			return err
		case errors.Is(err, kafka.ErrBroken):
			d.log.Warn().Str("target", target).Err(err).Msg("dispatcher: kafka producer broken; the term dials a new one")
			return err
		case leader.Refused(err):
			d.log.Warn().Str("target", target).Err(err).Msg("dispatcher: the database refuses a privilege; stepping down")
			return fmt.Errorf("%w: %w", leader.ErrStepDown, err)
		case err != nil || res.Outage:
			pause = backoff.Next(pause, wait, d.cfg.ErrorWait)
			if err != nil {
				d.log.Error().Err(err).Str("target", target).Dur("retry_in", pause).Msg("dispatcher: step failed")
			}
			if !clock.WallSleep(ctx, pause) {
				return nil
			}
			continue
		}
		pause = 0
		if res.Claimed >= full || res.More {
			continue
		}
		if !idle(ctx, wait) {
			return nil
		}
	}
}

// RefreshStats updates the backlog gauges (pending, dead letters, oldest pending age).
func (d *Dispatcher) RefreshStats(ctx context.Context) error {
	stats, err := d.store.Stats(ctx)
	if err != nil {
		return err
	}
	now := d.clock.Now()
	for _, target := range event.Targets {
		d.m.pending.WithLabelValues(target).Set(0)
		d.m.deadNow.WithLabelValues(target).Set(0)
		d.m.oldest.WithLabelValues(target).Set(0)
	}
	for _, st := range stats {
		d.m.pending.WithLabelValues(st.Target).Set(float64(st.Pending))
		d.m.deadNow.WithLabelValues(st.Target).Set(float64(st.Dead))
		if !st.OldestPending.IsZero() {
			d.m.oldest.WithLabelValues(st.Target).Set(max(0, now.Sub(st.OldestPending).Seconds()))
		}
	}
	return nil
}
