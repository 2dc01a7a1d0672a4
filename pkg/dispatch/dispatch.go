package dispatch

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/msgx/msgx/pkg/clock"
	"github.com/msgx/msgx/pkg/envconf"
	"github.com/msgx/msgx/pkg/event"
	"github.com/msgx/msgx/pkg/kafka"
	"github.com/msgx/msgx/pkg/leader"
	"github.com/msgx/msgx/pkg/outbox"
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
// pkg/envconf, docs/configuration.md); the topics are the Kafka adapter's and ErrorWait the
// process's MSGX_BACKOFF_MAX, set by the binary. Zero tuning values take their default.
type Config struct {
	Batch        int           `envconfig:"MSGX_DISPATCH_BATCH" default:"2000" desc:"dispatcher: KAFKA:msg events sent per batch"`
	FlushPeriod  time.Duration `envconfig:"MSGX_SCHD_FLUSH_PERIOD" default:"3s" desc:"dispatcher: KAFKA:schd aggregation period"`
	FlushLimit   int           `envconfig:"MSGX_SCHD_FLUSH_LIMIT" default:"500" desc:"dispatcher: FLIDs per KAFKA:schd flush"`
	TopicChanges string        // topic of KAFKA:msg
	TopicState   string        // topic of KAFKA:schd
	// Idle is the KAFKA:msg loop's wait after a batch that was not full.
	Idle time.Duration `default:"100ms"`
	// StatsPeriod is how often the backlog gauges are refreshed.
	StatsPeriod time.Duration `default:"5s"`
	// ErrorWait caps the wait after a database error or a Kafka outage.
	ErrorWait time.Duration `default:"30s"`
	// SendWarn is how long a send may stay unanswered before a warning is logged (and again
	// each time as long again passes).
	SendWarn time.Duration `envconfig:"MSGX_DISPATCH_SEND_WARN" default:"5s" desc:"dispatcher: log a warning when a send has been waiting for the broker this long"`
	// HoldFile is a test hook (the real-process zombie test): while this file exists, every
	// send waits after its batch was read and before it reaches Kafka. Empty (the default) it is
	// inert; MSGX_ENV=production refuses it.
	HoldFile string `envconfig:"MSGX_DEV_HOLD_SEND" desc:"tests only: while this file exists every send waits after its batch was read, before Kafka; production refuses it"`
}

// Validate reports every bad value of the stage's settings, one line each.
func (c Config) Validate() error {
	var p envconf.Problems
	p.Between("MSGX_DISPATCH_BATCH", int64(c.Batch), 1, 10000)
	p.Positive("MSGX_SCHD_FLUSH_PERIOD", c.FlushPeriod)
	p.Between("MSGX_SCHD_FLUSH_LIMIT", int64(c.FlushLimit), 1, 10000)
	p.Positive("MSGX_DISPATCH_SEND_WARN", c.SendWarn)
	return p.Err()
}

func (c *Config) defaults() error {
	for _, d := range []*time.Duration{&c.Idle, &c.StatsPeriod, &c.ErrorWait, &c.SendWarn} {
		*d = max(*d, 0)
	}
	envconf.FillZero(c)
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

	mu       sync.Mutex
	inflight map[int64]time.Time // start of every unanswered send
	nextSend int64

	stateCursor string // FLID after which the next state flush starts (only FlushStates uses it)
}

// New returns a dispatcher. Its metrics are registered on reg.
func New(cfg Config, store *outbox.Store, sender Sender, clk clock.Clock, reg prometheus.Registerer, log zerolog.Logger) (*Dispatcher, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	d := &Dispatcher{cfg: cfg, store: store, sender: sender, clock: clk, log: log, inflight: map[int64]time.Time{}}
	m, err := newMetrics(reg, d.oldestUnacked)
	if err != nil {
		return nil, fmt.Errorf("dispatch metrics: %w", err)
	}
	d.m = m
	return d, nil
}

// oldestUnacked is the age of the oldest send still waiting for the broker (0: none).
func (d *Dispatcher) oldestUnacked() float64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	var oldest time.Time
	for _, t := range d.inflight {
		if oldest.IsZero() || t.Before(oldest) {
			oldest = t
		}
	}
	if oldest.IsZero() {
		return 0
	}
	return max(0, d.clock.Now().Sub(oldest).Seconds())
}

// send sends recs, tracking the send for the unacknowledged-age gauge and warning each
// SendWarn while it waits.
func (d *Dispatcher) send(ctx context.Context, target string, recs []kafka.Record) []error {
	held := d.hold(ctx, target, len(recs))
	if held {
		// The held batch goes out even if the lease loss was noticed meanwhile: the hook stands
		// for a send already on its way when the process was paused, the case Kafka must fence.
		ctx = context.WithoutCancel(ctx)
	}
	d.mu.Lock()
	d.nextSend++
	id := d.nextSend
	d.inflight[id] = d.clock.Now()
	d.mu.Unlock()
	defer func() {
		d.mu.Lock()
		delete(d.inflight, id)
		d.mu.Unlock()
	}()
	start := time.Now()
	var warn *time.Timer
	var wmu sync.Mutex
	var arm func()
	arm = func() {
		wmu.Lock()
		defer wmu.Unlock()
		warn = time.AfterFunc(d.cfg.SendWarn, func() {
			d.log.Warn().Str("target", target).Int("records", len(recs)).Dur("waiting", time.Since(start).Round(time.Millisecond)).
				Msg("kafka send blocked: the broker has not answered")
			arm()
		})
	}
	arm()
	errs := d.sender.Send(ctx, recs)
	if held {
		ev := d.log.Warn().Str("target", target).Int("records", len(recs))
		for _, err := range errs {
			if err != nil {
				ev = ev.AnErr("answer", err)
				break
			}
		}
		ev.Msg("dev hold: the held send was answered")
	}
	wmu.Lock()
	warn.Stop()
	wmu.Unlock()
	return errs
}

// holdPoll is how often a held send looks at its hold file.
const holdPoll = 20 * time.Millisecond

// hold is the HoldFile test hook: while the file exists it waits (ctx ending releases it too),
// then the send goes on whatever the reason, as a paused process that resumes would. It reports
// whether it held.
func (d *Dispatcher) hold(ctx context.Context, target string, records int) bool {
	if d.cfg.HoldFile == "" {
		return false
	}
	if _, err := os.Stat(d.cfg.HoldFile); err != nil {
		return false
	}
	d.log.Warn().Str("target", target).Int("records", records).Str("hold_file", d.cfg.HoldFile).Msg("dev hold: send held")
	t := time.NewTicker(holdPoll)
	defer t.Stop()
	reason := "hold file removed"
	for {
		if _, err := os.Stat(d.cfg.HoldFile); err != nil {
			break
		}
		select {
		case <-ctx.Done():
			reason = "context ended"
		case <-t.C:
			continue
		}
		break
	}
	d.log.Warn().Str("target", target).Int("records", records).Str("reason", reason).Msg("dev hold: released; sending")
	return true
}

// Result is what one step did.
type Result struct {
	Claimed int // records produced (KAFKA:schd: FLIDs)
	Sent    int // events marked SENT (KAFKA:schd: every settled event)
	Retried int // events that will retry after backoff
	Dead    int // events that went DEAD
	Outage  bool
	More    bool // KAFKA:schd: the flush stopped at its limit; more FLIDs follow the cursor
}

// StepMsg sends one batch of KAFKA:msg heads and records the outcome.
func (d *Dispatcher) StepMsg(ctx context.Context, lease leader.Lease) (Result, error) {
	claimed, err := d.store.ClaimHeads(ctx, d.clock.Now(), d.cfg.Batch)
	if err != nil || len(claimed) == 0 {
		return Result{}, err
	}
	return d.deliver(ctx, lease, event.TargetMsg, d.cfg.TopicChanges, claimed)
}

// FlushStates visits up to flush-limit FLIDs with unsent KAFKA:schd events (after the previous
// flush's cursor), sends the newest state of each due one that is newer than what the state
// topic holds, settles the stale ones without sending, and records the outcome.
func (d *Dispatcher) FlushStates(ctx context.Context, lease leader.Lease) (Result, error) {
	sc, err := d.store.ClaimStates(ctx, d.clock.Now(), d.cfg.FlushLimit, d.stateCursor)
	if err != nil {
		return Result{}, err
	}
	d.stateCursor = sc.Next
	more := sc.Next != ""
	settled := int64(0)
	if len(sc.Stale) > 0 {
		if settled, err = d.store.MarkStatesSent(ctx, lease, sc.Stale, d.clock.Now()); err != nil {
			return Result{More: more}, err
		}
		for _, c := range sc.Stale {
			d.log.Info().Str("flid", c.FLID).Int64("state_version", c.StateVersion).Int64("event_id", c.EventID).
				Msg("state flush: version at or below the one already sent; settled, not sent")
		}
	}
	if len(sc.Due) == 0 {
		return Result{Sent: int(settled), More: more}, nil
	}
	res, err := d.deliver(ctx, lease, event.TargetSchd, d.cfg.TopicState, sc.Due)
	res.Sent += int(settled)
	res.More = more
	return res, err
}

// record turns a claimed event into its Kafka record on topic (the contract: event.Record).
func record(topic string, epoch int64, c outbox.Claimed) kafka.Record {
	r := event.Record(event.Claimed{
		EventID: c.EventID, Target: c.Target, FLID: c.FLID, Type: c.Type, StateVersion: c.StateVersion,
		MsgID: c.MsgID, Payload: c.Payload, CreatedAt: c.CreatedAt,
	}, epoch)
	h := make([]kafka.Header, len(r.Headers))
	for i, x := range r.Headers {
		h[i] = kafka.Header(x)
	}
	return kafka.Record{Topic: topic, Key: r.Key, Value: r.Value, Headers: h}
}

// deliver sends the claimed events as one batch of records on topic and records the outcome.
func (d *Dispatcher) deliver(ctx context.Context, lease leader.Lease, target, topic string, claimed []outbox.Claimed) (Result, error) {
	recs := make([]kafka.Record, len(claimed))
	for i, c := range claimed {
		recs[i] = record(topic, lease.Epoch, c)
	}
	errs := d.produce(ctx, target, recs)

	// A producer fenced by a newer one (a newer leader initialised the same transactional id)
	// ends this term; a broken one (a send abandoned at its timeout) is replaced by the link.
	// Neither counts an attempt against the events.
	if err := brokenOrFenced(errs); err != nil {
		if errors.Is(err, kafka.ErrFenced) {
			return Result{Claimed: len(claimed)}, fmt.Errorf("%w: %w", leader.ErrFenced, err)
		}
		d.m.outages.Inc()
		return Result{Claimed: len(claimed), Outage: true}, fmt.Errorf("%s send: %w", target, err)
	}

	a := sortAnswers(claimed, errs)
	if d.outage(ctx, target, len(recs), a) {
		return Result{Claimed: len(claimed), Outage: true}, nil
	}
	res := Result{Claimed: len(claimed)}
	now := d.clock.Now()
	d.observeLag(ctx, target, a.sentStates, now)
	if err := d.markSent(ctx, lease, target, a, now, &res); err != nil {
		return res, err
	}
	if err := d.markFailed(ctx, lease, target, a, now, &res); err != nil {
		return res, err
	}
	return res, nil
}

// produce sends recs once, observing the batch, then sends again what a rejection of another
// record may have failed (resendRejected). It answers each record.
func (d *Dispatcher) produce(ctx context.Context, target string, recs []kafka.Record) []error {
	start := time.Now()
	errs := d.send(ctx, target, recs)
	d.m.latency.WithLabelValues(target).Observe(time.Since(start).Seconds())
	d.m.batchSize.WithLabelValues(target).Observe(float64(len(recs)))
	if hasNonRetryable(errs) && brokenOrFenced(errs) == nil {
		d.resendRejected(ctx, target, recs, errs)
	}
	return errs
}

// resendRejected updates errs after a batch with non-retryable answers. A batch is one Kafka
// transaction: a non-retryable rejection aborts the others. Several rejections may be one
// poisoned record failing the transaction (or its partition batch): each rejected record is
// sent again alone before any is declared DEAD, then the others that failed with them together
// once more.
func (d *Dispatcher) resendRejected(ctx context.Context, target string, recs []kafka.Record, errs []error) {
	var fatal []int
	others := false
	for i, err := range errs {
		if kafka.NonRetryable(err) {
			fatal = append(fatal, i)
		} else if err != nil {
			others = true
		}
	}
	if len(fatal) > 1 || others {
		for _, i := range fatal {
			errs[i] = d.send(ctx, target, recs[i:i+1])[0]
		}
	}
	var again []int
	for i, err := range errs {
		if err != nil && !kafka.NonRetryable(err) {
			again = append(again, i)
		}
	}
	if len(again) == 0 || len(again) == len(recs) {
		return
	}
	sub := make([]kafka.Record, len(again))
	for j, i := range again {
		sub[j] = recs[i]
	}
	for j, err := range d.send(ctx, target, sub) {
		errs[again[j]] = err
	}
}

func hasNonRetryable(errs []error) bool {
	for _, err := range errs {
		if kafka.NonRetryable(err) {
			return true
		}
	}
	return false
}

// answers sorts a batch's records by their answers: the acknowledged and the failed, in the
// shapes of the two targets' outbox updates.
type answers struct {
	sent          []int64          // KAFKA:msg: the event ids to mark SENT
	sentStates    []outbox.Claimed // the acknowledged events (KAFKA:schd: the states to mark)
	failures      []outbox.Failure
	stateFailures []outbox.StateFailure
}

func sortAnswers(claimed []outbox.Claimed, errs []error) answers {
	var a answers
	for i, err := range errs {
		if err == nil {
			a.sent = append(a.sent, claimed[i].Represents...)
			a.sentStates = append(a.sentStates, claimed[i])
			continue
		}
		fatal := kafka.NonRetryable(err)
		a.failures = append(a.failures, outbox.Failure{IDs: claimed[i].Represents, Err: err.Error(), Fatal: fatal})
		a.stateFailures = append(a.stateFailures, outbox.StateFailure{FLID: claimed[i].FLID, Version: claimed[i].StateVersion, Err: err.Error(), Fatal: fatal})
	}
	return a
}

// outage reports whether the batch failed whole, every record retryable, while no broker
// answers a ping: then it is not the events' fault and no attempt is counted.
func (d *Dispatcher) outage(ctx context.Context, target string, records int, a answers) bool {
	if len(a.sent) > 0 || len(a.failures) == 0 || a.failures[0].Fatal || !allRetryable(a.failures) {
		return false
	}
	perr := d.sender.Ping(ctx)
	if perr == nil {
		return false
	}
	d.m.outages.Inc()
	d.log.Warn().Str("target", target).Int("records", records).Str("error", a.failures[0].Err).
		AnErr("ping", perr).Msg("kafka unreachable: batch not counted against its events")
	return true
}

// markSent marks the acknowledged events SENT (KAFKA:schd: the states and every older unsent
// event of their FLIDs).
func (d *Dispatcher) markSent(ctx context.Context, lease leader.Lease, target string, a answers, now time.Time, res *Result) error {
	if target == event.TargetSchd && len(a.sentStates) > 0 {
		n, err := d.store.MarkStatesSent(ctx, lease, a.sentStates, now)
		if err != nil {
			return err
		}
		res.Sent = int(n)
		d.m.sent.WithLabelValues(target).Add(float64(n))
	} else if len(a.sent) > 0 {
		if _, err := d.store.MarkSent(ctx, lease, a.sent, now); err != nil {
			return err
		}
		res.Sent = len(a.sent)
		d.m.sent.WithLabelValues(target).Add(float64(len(a.sent)))
	}
	return nil
}

// markFailed counts an attempt against the failed events (backoff, or DEAD) and logs each.
func (d *Dispatcher) markFailed(ctx context.Context, lease leader.Lease, target string, a answers, now time.Time, res *Result) error {
	if len(a.failures) == 0 {
		return nil
	}
	var outcomes []outbox.Outcome
	var err error
	if target == event.TargetSchd {
		outcomes, err = d.store.MarkStatesFailed(ctx, lease, a.stateFailures, now)
	} else {
		outcomes, err = d.store.MarkFailed(ctx, lease, a.failures, now)
	}
	if err != nil {
		return err
	}
	errByID := map[int64]string{}
	for _, f := range a.failures {
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
	return nil
}

// brokenOrFenced returns the first answer saying the producer cannot send any more.
func brokenOrFenced(errs []error) error {
	for _, err := range errs {
		if errors.Is(err, kafka.ErrFenced) || errors.Is(err, kafka.ErrBroken) {
			return err
		}
	}
	return nil
}

func allRetryable(fs []outbox.Failure) bool {
	for _, f := range fs {
		if f.Fatal {
			return false
		}
	}
	return true
}

// observeLag records the end-to-end lag of the acknowledged records: from ingest's enqueue of
// each record's message to now (the acknowledgement), with one query for the batch. Events
// without a message (purges) are not observed; a failed look-up only loses the observation.
func (d *Dispatcher) observeLag(ctx context.Context, target string, acked []outbox.Claimed, now time.Time) {
	ids := make([]int64, 0, len(acked))
	for _, c := range acked {
		if c.MsgID != 0 {
			ids = append(ids, c.MsgID)
		}
	}
	if len(ids) == 0 {
		return
	}
	origin, err := d.store.OriginTimes(ctx, ids)
	if err != nil {
		d.log.Warn().Err(err).Str("target", target).Msg("dispatcher: end-to-end lag not observed")
		return
	}
	h := d.m.lag.WithLabelValues(target)
	for _, c := range acked {
		if at, ok := origin[c.MsgID]; ok && c.MsgID != 0 {
			h.Observe(max(0, now.Sub(at).Seconds()))
		}
	}
}
