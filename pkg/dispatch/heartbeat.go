package dispatch

import (
	"context"
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/msgx/msgx/pkg/clock"
	"github.com/msgx/msgx/pkg/event"
	"github.com/msgx/msgx/pkg/kafka"
	"github.com/msgx/msgx/pkg/leader"
)

// heartbeatLoop names the heartbeat loop (liveness ticks, send warnings).
const heartbeatLoop = "heartbeat"

// newBeatCounter registers msgx_dispatch_heartbeats_total on reg.
func newBeatCounter(reg prometheus.Registerer) (prometheus.Counter, error) {
	c := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "msgx_dispatch_heartbeats_total", Help: "Heartbeat records the broker acknowledged (docs/events.md, \"Heartbeat\").",
	})
	return c, reg.Register(c)
}

// Heartbeat sends one heartbeat record (docs/events.md, "Heartbeat"): the progress read under
// lease (a deposed leader reports nothing: leader.ErrFenced) and the highest event ids this term
// sent, on the heartbeat topic in a transaction of its own, by the term's producer (a newer
// leader's producer fences it as it fences the event topics').
func (d *Dispatcher) Heartbeat(ctx context.Context, lease leader.Lease) error {
	p, err := d.store.Progress(ctx, lease)
	if err != nil {
		return err
	}
	r := event.HeartbeatRecord(d.cfg.HeartbeatKey, event.Beat{
		Time: d.clock.Now(), Period: d.cfg.HeartbeatPeriod, Epoch: lease.Epoch, Watermark: p.Watermark,
		Changes: event.BeatTopic{Topic: d.cfg.TopicChanges, LastSent: d.lastSent[event.TargetMsg].Load(), OldestUnsent: p.OldestUnsent[event.TargetMsg]},
		State:   event.BeatTopic{Topic: d.cfg.TopicState, LastSent: d.lastSent[event.TargetSchd].Load(), OldestUnsent: p.OldestUnsent[event.TargetSchd]},
	})
	err = d.send(ctx, heartbeatLoop, []kafka.Record{kafkaRecord(d.cfg.TopicHeartbeat, r)})[0]
	if errors.Is(err, kafka.ErrFenced) {
		return fmt.Errorf("heartbeat: %w: %w", leader.ErrFenced, err)
	}
	if err != nil {
		return fmt.Errorf("heartbeat: %w", err)
	}
	d.m.beats.Inc()
	return nil
}

// heartbeats sends a heartbeat every HeartbeatPeriod on the dispatcher's clock, the first at
// once, until ctx ends (nil), the lease is fenced or the producer broke (their errors: the term
// ends, or dials again). A beat that fails otherwise is logged and the next comes at its time: a
// missing heartbeat is what consumers watch for.
func (d *Dispatcher) heartbeats(ctx context.Context, lease leader.Lease) error {
	next := d.clock.Now()
	for {
		lease.Tick(heartbeatLoop)
		err := d.Heartbeat(ctx, lease)
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, leader.ErrFenced), errors.Is(err, kafka.ErrBroken):
			d.log.Warn().Err(err).Msg("dispatcher: heartbeat stops")
			return err
		case err != nil:
			d.log.Error().Err(err).Msg("dispatcher: heartbeat not sent")
		}
		next = next.Add(d.cfg.HeartbeatPeriod)
		wait := next.Sub(d.clock.Now())
		if wait < 0 { // the beat took longer than a period: the next one now
			next, wait = d.clock.Now(), 0
		}
		if !clock.Sleep(ctx, d.clock, wait) {
			return nil
		}
	}
}
