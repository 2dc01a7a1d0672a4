package dispatch

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/msgx/msgx/pkg/clock"
	"github.com/msgx/msgx/pkg/event"
	"github.com/msgx/msgx/pkg/kafka"
	"github.com/msgx/msgx/pkg/leader"
)

// heartbeatLoop names the heartbeat loop (liveness ticks, send warnings).
const heartbeatLoop = "heartbeat"

// beatMetrics are the heartbeat's: the records acknowledged and, for msgx's own operators'
// alert on the silence consumers would call a stall, its age and the period.
type beatMetrics struct {
	sent prometheus.Counter
	// since is when the silence the age gauge reports started: the last heartbeat the broker
	// acknowledged, or the start of this term's heartbeats (nil: this process sends none).
	since atomic.Pointer[time.Time]
}

// newBeatMetrics registers the heartbeat's metrics on reg: msgx_dispatch_heartbeats_total,
// msgx_dispatch_heartbeat_age_seconds (on clk) and msgx_dispatch_heartbeat_period_seconds
// (period when topic is set, else 0).
func newBeatMetrics(reg prometheus.Registerer, clk clock.Clock, topic string, period time.Duration) (*beatMetrics, error) {
	b := &beatMetrics{sent: prometheus.NewCounter(prometheus.CounterOpts{
		Name: "msgx_dispatch_heartbeats_total", Help: "Heartbeat records the broker acknowledged (docs/events.md, \"Heartbeat\").",
	})}
	age := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "msgx_dispatch_heartbeat_age_seconds",
		Help: "Seconds since the last heartbeat the broker acknowledged, or since this leader's heartbeats started when none was yet; 0 when this process sends none (not the leader, or no heartbeat topic).",
	}, func() float64 {
		if since := b.since.Load(); since != nil {
			return clk.Now().Sub(*since).Seconds()
		}
		return 0
	})
	if topic == "" {
		period = 0
	}
	per := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "msgx_dispatch_heartbeat_period_seconds", Help: "MSGX_HEARTBEAT_PERIOD; 0 when MSGX_KAFKA_TOPIC_HEARTBEAT is empty (no heartbeat).",
	})
	per.Set(period.Seconds())
	for _, c := range []prometheus.Collector{b.sent, age, per} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// silentSince starts the silence the age gauge reports at t (nil: none, this process sends no
// heartbeat).
func (b *beatMetrics) silentSince(t *time.Time) { b.since.Store(t) }

// Leading runs work, a leadership term's (its dials and topic checks included), with the
// heartbeat's silence counted from its start: the age gauge grows until the term's first
// heartbeat is acknowledged, and through every re-dial after one, so a leader that cannot reach
// Kafka shows its silence; once work returned (not leading) it reads 0. Without a heartbeat
// topic it only runs work.
func (d *Dispatcher) Leading(ctx context.Context, work func(context.Context) error) error {
	if d.cfg.TopicHeartbeat == "" {
		return work(ctx)
	}
	start := d.clock.Now()
	d.beats.silentSince(&start)
	defer d.beats.silentSince(nil)
	return work(ctx)
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
	d.beats.sent.Inc()
	now := d.clock.Now()
	d.beats.silentSince(&now)
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
