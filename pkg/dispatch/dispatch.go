package dispatch

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/msgx/msgx/pkg/clock"
	"github.com/msgx/msgx/pkg/event"
	"github.com/msgx/msgx/pkg/kafka"
	"github.com/msgx/msgx/pkg/leader"
	"github.com/msgx/msgx/pkg/outbox"
	"github.com/msgx/msgx/pkg/setting"
)

// Sender produces records: kafka.Producer in production.
type Sender interface {
	// Send produces recs and answers each (nil: acknowledged by the broker under D3).
	Send(ctx context.Context, recs []kafka.Record) []error
	// Ping fails when no broker answers.
	Ping(ctx context.Context) error
}

var _ Sender = (*kafka.Producer)(nil)

// Config tunes the dispatcher. The tagged fields are the stage's settings (variable, default:
// pkg/setting, docs/configuration.md); the topics are the Kafka adapter's and ErrorWait the
// process's MSGX_BACKOFF_MAX, set by the binary. Zero tuning values take their default.
type Config struct {
	Batch        int           `env:"MSGX_DISPATCH_BATCH" default:"500" desc:"dispatcher: KAFKA:msg events sent per batch"`
	FlushPeriod  time.Duration `env:"MSGX_SCHD_FLUSH_PERIOD" default:"3s" desc:"dispatcher: KAFKA:schd aggregation period"`
	FlushLimit   int           `env:"MSGX_SCHD_FLUSH_LIMIT" default:"500" desc:"dispatcher: FLIDs per KAFKA:schd flush"`
	TopicChanges string        // topic of KAFKA:msg
	TopicState   string        // topic of KAFKA:schd
	// Idle is the KAFKA:msg loop's wait after a batch that was not full.
	Idle time.Duration `default:"100ms"`
	// StatsPeriod is how often the backlog gauges are refreshed.
	StatsPeriod time.Duration `default:"5s"`
	// ErrorWait caps the wait after a database error or a Kafka outage.
	ErrorWait time.Duration `default:"30s"`
}

// Validate reports every bad value of the stage's settings, one line each.
func (c Config) Validate() error {
	var p setting.Problems
	p.Between("MSGX_DISPATCH_BATCH", int64(c.Batch), 1, 10000)
	p.Positive("MSGX_SCHD_FLUSH_PERIOD", c.FlushPeriod)
	p.Between("MSGX_SCHD_FLUSH_LIMIT", int64(c.FlushLimit), 1, 10000)
	return p.Err()
}

func (c *Config) defaults() error {
	for _, d := range []*time.Duration{&c.Idle, &c.StatsPeriod, &c.ErrorWait} {
		*d = max(*d, 0)
	}
	setting.FillZero(c)
	switch {
	case c.Batch < 1:
		return fmt.Errorf("dispatch: batch must be positive, got %d", c.Batch)
	case c.FlushLimit < 1:
		return fmt.Errorf("dispatch: flush limit must be positive, got %d", c.FlushLimit)
	case c.FlushPeriod <= 0:
		return fmt.Errorf("dispatch: flush period must be positive, got %s", c.FlushPeriod)
	case c.TopicChanges == "" || c.TopicState == "":
		return errors.New("dispatch: both topics must be set")
	}
	return nil
}

// Dispatcher drains the outbox to Kafka.
type Dispatcher struct {
	cfg    Config
	store  *outbox.Store
	sender Sender
	clock  clock.Clock
	log    zerolog.Logger
	m      *metrics
}

// New returns a dispatcher. Its metrics are registered on reg.
func New(cfg Config, store *outbox.Store, sender Sender, clk clock.Clock, reg prometheus.Registerer, log zerolog.Logger) (*Dispatcher, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	m, err := newMetrics(reg)
	if err != nil {
		return nil, fmt.Errorf("dispatch metrics: %w", err)
	}
	return &Dispatcher{cfg: cfg, store: store, sender: sender, clock: clk, log: log, m: m}, nil
}

// Result is what one step did.
type Result struct {
	Claimed int // records produced (KAFKA:schd: FLIDs)
	Sent    int // events marked SENT (KAFKA:schd: every represented event)
	Retried int // events that will retry after backoff
	Dead    int // events that went DEAD
	Outage  bool
}

// StepMsg sends one batch of KAFKA:msg heads and records the outcome.
func (d *Dispatcher) StepMsg(ctx context.Context, lease leader.Lease) (Result, error) {
	claimed, err := d.store.ClaimHeads(ctx, d.clock.Now(), d.cfg.Batch)
	if err != nil || len(claimed) == 0 {
		return Result{}, err
	}
	return d.deliver(ctx, lease, event.TargetMsg, d.cfg.TopicChanges, claimed)
}

// FlushStates sends the newest state of up to flush-limit FLIDs and records the outcome.
func (d *Dispatcher) FlushStates(ctx context.Context, lease leader.Lease) (Result, error) {
	claimed, err := d.store.ClaimStates(ctx, d.clock.Now(), d.cfg.FlushLimit)
	if err != nil || len(claimed) == 0 {
		return Result{}, err
	}
	return d.deliver(ctx, lease, event.TargetSchd, d.cfg.TopicState, claimed)
}

// record turns a claimed event into its Kafka record.
func record(topic string, epoch int64, c outbox.Claimed) kafka.Record {
	h := []kafka.Header{
		{Key: "event_id", Value: strconv.FormatInt(c.EventID, 10)},
		{Key: "flid", Value: c.FLID},
		{Key: "state_version", Value: strconv.FormatInt(c.StateVersion, 10)},
		{Key: "epoch", Value: strconv.FormatInt(epoch, 10)},
		{Key: "event_type", Value: c.Type},
	}
	if c.MsgID != 0 {
		h = append(h, kafka.Header{Key: "msg_id", Value: strconv.FormatInt(c.MsgID, 10)})
	}
	var value []byte
	if c.Payload != nil && (c.Type == event.Upsert || c.Target == event.TargetMsg) {
		value = c.Payload
	}
	return kafka.Record{Topic: topic, Key: c.FLID, Value: value, Headers: h}
}

func (d *Dispatcher) deliver(ctx context.Context, lease leader.Lease, target, topic string, claimed []outbox.Claimed) (Result, error) {
	recs := make([]kafka.Record, len(claimed))
	for i, c := range claimed {
		recs[i] = record(topic, lease.Epoch, c)
	}
	start := time.Now()
	errs := d.sender.Send(ctx, recs)
	d.m.latency.WithLabelValues(target).Observe(time.Since(start).Seconds())
	d.m.batchSize.WithLabelValues(target).Observe(float64(len(recs)))

	// Several non-retryable rejections in one batch may be one poisoned record failing its whole
	// partition batch: send each again alone before declaring any DEAD.
	var fatal []int
	for i, err := range errs {
		if kafka.NonRetryable(err) {
			fatal = append(fatal, i)
		}
	}
	if len(fatal) > 1 {
		for _, i := range fatal {
			errs[i] = d.sender.Send(ctx, recs[i:i+1])[0]
		}
	}

	res := Result{Claimed: len(claimed)}
	var sent []int64
	var failures []outbox.Failure
	for i, err := range errs {
		if err == nil {
			sent = append(sent, claimed[i].Represents...)
			continue
		}
		failures = append(failures, outbox.Failure{IDs: claimed[i].Represents, Err: err.Error(), Fatal: kafka.NonRetryable(err)})
	}

	if len(sent) == 0 && len(failures) > 0 && !failures[0].Fatal && allRetryable(failures) {
		if perr := d.sender.Ping(ctx); perr != nil {
			d.m.outages.Inc()
			d.log.Warn().Str("target", target).Int("records", len(recs)).Str("error", failures[0].Err).
				AnErr("ping", perr).Msg("kafka unreachable: batch not counted against its events")
			return Result{Claimed: len(claimed), Outage: true}, nil
		}
	}

	now := d.clock.Now()
	if len(sent) > 0 {
		if _, err := d.store.MarkSent(ctx, lease, sent, now); err != nil {
			return res, err
		}
		res.Sent = len(sent)
		d.m.sent.WithLabelValues(target).Add(float64(len(sent)))
	}
	if len(failures) > 0 {
		outcomes, err := d.store.MarkFailed(ctx, lease, failures, now)
		if err != nil {
			return res, err
		}
		errByID := map[int64]string{}
		for _, f := range failures {
			for _, id := range f.IDs {
				errByID[id] = f.Err
			}
		}
		for _, o := range outcomes {
			ev := d.log.Warn()
			if o.Status == outbox.StatusDead {
				res.Dead++
				ev = d.log.Error()
			} else {
				res.Retried++
				ev = ev.Time("next_attempt_at", o.NextAttemptAt)
			}
			ev.Str("target", target).Int64("event_id", o.EventID).Int("attempts", o.Attempts).
				Str("status", o.Status).Str("error", errByID[o.EventID]).Msg("send failed")
		}
		d.m.retried.WithLabelValues(target).Add(float64(res.Retried))
		d.m.dead.WithLabelValues(target).Add(float64(res.Dead))
	}
	return res, nil
}

func allRetryable(fs []outbox.Failure) bool {
	for _, f := range fs {
		if f.Fatal {
			return false
		}
	}
	return true
}
