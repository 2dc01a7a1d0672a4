package dispatch

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/msgx/msgx/pkg/event"
	"github.com/msgx/msgx/pkg/kafka"
	"github.com/msgx/msgx/pkg/leader"
	"github.com/msgx/msgx/pkg/outbox"
)

// record turns a claimed event into its Kafka record on topic (the contract: event.Record).
func record(topic string, epoch int64, c outbox.Claimed) kafka.Record {
	r := event.Record(event.Claimed{
		EventID: c.EventID, Target: c.Target, FLID: c.FLID, Type: c.Type, StateVersion: c.StateVersion,
		MsgID: c.MsgID, Payload: c.Payload, CreatedAt: c.CreatedAt,
	}, epoch)
	return kafkaRecord(topic, r)
}

// kafkaRecord is the contract's record r on topic, as the producer takes it.
func kafkaRecord(topic string, r event.KafkaRecord) kafka.Record {
	h := make([]kafka.Header, len(r.Headers))
	for i, x := range r.Headers {
		h[i] = kafka.Header(x)
	}
	return kafka.Record{Topic: topic, Key: r.Key, Value: r.Value, Headers: h}
}

// deliver sends the claimed events as one batch of records on topic and records the outcome: of
// KAFKA:msg events by their claim c (outbox.Settle), of states by the state flush's marks.
func (d *Dispatcher) deliver(ctx context.Context, lease leader.Lease, target, topic string, claimed []outbox.Claimed, c *outbox.Claim) (Result, error) {
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
	if d.outage(ctx, target, len(recs), a, errs) {
		return Result{Claimed: len(claimed), Outage: true}, nil
	}
	res := Result{Claimed: len(claimed)}
	now := d.clock.Now()
	d.observeLag(ctx, target, a.sentStates, now)
	for _, c := range a.sentStates { // acknowledged: on the topic, whatever the outbox update does
		if last := d.lastSent[target]; c.EventID > last.Load() {
			last.Store(c.EventID)
		}
	}
	if c != nil {
		outcomes, err := d.settle(ctx, lease, *c, a.sent, a.failures)
		if err != nil {
			return res, err
		}
		res.Sent = len(a.sent)
		d.m.sent.WithLabelValues(target).Add(float64(len(a.sent)))
		d.logFailed(target, a, outcomes, &res)
		return res, nil
	}
	if err := d.markSent(ctx, lease, target, a, now, &res); err != nil {
		return res, err
	}
	if err := d.markFailed(ctx, lease, target, a, now, &res); err != nil {
		return res, err
	}
	return res, nil
}

// settle records a KAFKA:msg claim's outcome (outbox.Settle). The events it holds on their rows
// may lie below the bound the claim of such events starts from (Store.ClaimHeadsFrom): the next
// claim starts from the lowest of them.
func (d *Dispatcher) settle(ctx context.Context, lease leader.Lease, c outbox.Claim, sent []int64, failures []outbox.Failure) ([]outbox.Outcome, error) {
	// Lowered before the settle, which may hold them (the cursor moved) and still fail after; to
	// the claim's lowest event, held or not: a lower bound needs no more.
	if c.Queued && d.claimFrom != 0 {
		for _, id := range c.Held {
			d.claimFrom = min(d.claimFrom, id)
		}
		for _, e := range c.Events {
			d.claimFrom = min(d.claimFrom, e.EventID)
		}
	}
	return d.store.Settle(ctx, lease, c, sent, failures, d.clock.Now())
}

// produce sends recs once, observing the batch, holds every failed record behind the first
// failed one of its key (holdBehind), then sends again what a rejection of another record may
// have failed (resendRejected). It answers each record.
func (d *Dispatcher) produce(ctx context.Context, target string, recs []kafka.Record) []error {
	start := time.Now()
	errs := d.send(ctx, target, recs)
	d.m.latency.WithLabelValues(target).Observe(time.Since(start).Seconds())
	d.m.batchSize.WithLabelValues(target).Observe(float64(len(recs)))
	// Read before holdBehind, which answers errHeld to a rejected record it holds: that
	// rejection may still be what failed the others.
	rejected := hasNonRetryable(errs) && brokenOrFenced(errs) == nil
	holdBehind(recs, errs)
	if rejected {
		d.resendRejected(ctx, target, recs, errs)
	}
	return errs
}

// holdBehind answers errHeld for every failed record after the first failed record of its key:
// the batch's answer is no verdict on it (a rejected partition batch fails innocent records,
// an aborted transaction all of them), and it waits for that record, so nothing overtakes it.
// From here on a FLID's failure is counted against its first failed event only.
func holdBehind(recs []kafka.Record, errs []error) {
	failed := map[string]bool{}
	for i, err := range errs {
		if err == nil {
			continue
		}
		if failed[recs[i].Key] {
			errs[i] = errHeld
		}
		failed[recs[i].Key] = true
	}
}

// resendRejected updates errs after a batch with non-retryable answers. A batch is one Kafka
// transaction: a non-retryable rejection aborts the others. Several rejections may be one
// poisoned record failing the transaction (or its partition batch): each rejected record is
// sent again alone before any is declared DEAD, then the others that failed with them together
// once more. The records held behind a failed one of their key (errHeld) are not sent again.
func (d *Dispatcher) resendRejected(ctx context.Context, target string, recs []kafka.Record, errs []error) {
	var fatal, retry []int
	failed := 0
	for i, err := range errs {
		switch {
		case err == nil:
			continue
		case errors.Is(err, errHeld):
		case kafka.NonRetryable(err):
			fatal = append(fatal, i)
		default:
			retry = append(retry, i)
		}
		failed++
	}
	if len(fatal) > 1 || failed > len(fatal) {
		for _, i := range fatal {
			errs[i] = d.send(ctx, target, recs[i:i+1])[0]
		}
	}
	if len(retry) == 0 || len(retry) == len(recs) {
		return
	}
	sub := make([]kafka.Record, len(retry))
	for j, i := range retry {
		sub[j] = recs[i]
	}
	for j, err := range d.send(ctx, target, sub) {
		errs[retry[j]] = err
	}
}

// errHeld answers a record that waited behind an earlier failed record of its key: no attempt
// is counted against it, and it stays PENDING for a later claim.
var errHeld = errors.New("dispatch: held behind an earlier failed record of its FLID")

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

// The events that answered errHeld are neither: held by an earlier failed event of their FLID,
// not attempted on their own, they stay as they were.
func sortAnswers(claimed []outbox.Claimed, errs []error) answers {
	var a answers
	for i, err := range errs {
		if err == nil {
			a.sent = append(a.sent, claimed[i].Represents...)
			a.sentStates = append(a.sentStates, claimed[i])
			continue
		}
		if errors.Is(err, errHeld) {
			continue
		}
		fatal := kafka.NonRetryable(err)
		a.failures = append(a.failures, outbox.Failure{IDs: claimed[i].Represents, Err: err.Error(), Fatal: fatal})
		a.stateFailures = append(a.stateFailures, outbox.StateFailure{FLID: claimed[i].FLID, Version: claimed[i].StateVersion, Err: err.Error(), Fatal: fatal})
	}
	return a
}

// outage reports whether the batch failed whole, every record retryable, for a cause that is
// the cluster's and not the events': every answer says the cluster cannot take records now
// (kafka.Unavailable: too few in-sync replicas, a leader or coordinator moving or gone, a lost
// connection), or no broker answers a ping. Then no attempt is counted and the loop backs off.
func (d *Dispatcher) outage(ctx context.Context, target string, records int, a answers, errs []error) bool {
	if len(a.sent) > 0 || len(a.failures) == 0 || !allRetryable(a.failures) {
		return false
	}
	var perr error
	if !clusterAtFault(errs) {
		if perr = d.sender.Ping(ctx); perr == nil {
			return false
		}
	}
	d.m.outages.Inc()
	d.log.Warn().Str("target", target).Int("records", records).Str("error", a.failures[0].Err).
		AnErr("ping", perr).Msg("kafka unavailable: batch not counted against its events")
	return true
}

// clusterAtFault reports whether every failed answer blames the cluster (kafka.Unavailable),
// ignoring the records aborted only because another record of the transaction failed and the
// ones held behind a record of their key (errHeld); at least one must blame it.
func clusterAtFault(errs []error) bool {
	blamed := false
	for _, err := range errs {
		switch {
		case err == nil || errors.Is(err, kafka.ErrAborted) || errors.Is(err, errHeld):
		case kafka.Unavailable(err):
			blamed = true
		default:
			return false
		}
	}
	return blamed
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
	d.logFailed(target, a, outcomes, res)
	return nil
}

// logFailed logs what became of each failed event and counts it.
func (d *Dispatcher) logFailed(target string, a answers, outcomes []outbox.Outcome, res *Result) {
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

// observeLag records the end-to-end lag of a sample of the acknowledged records: from ingest's
// enqueue of each sampled record's message to now (the acknowledgement), with one query for the
// batch. The sample is the messages lagSampled picks (Config.LagSample), so the probes of
// proc_state are a fraction of the records sent. Events without a message (purges) are not
// observed; a failed look-up only loses the observation.
func (d *Dispatcher) observeLag(ctx context.Context, target string, acked []outbox.Claimed, now time.Time) {
	ids := make([]int64, 0, len(acked)/d.cfg.LagSample+1)
	for _, c := range acked {
		if c.MsgID != 0 && lagSampled(c.MsgID, d.cfg.LagSample) {
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
	for _, id := range ids {
		if at, ok := origin[id]; ok {
			h.Observe(max(0, now.Sub(at).Seconds()))
		}
	}
}

// lagSampled reports whether the lag of message msgID is observed: one message in every in
// expectation, by a multiplicative hash of the id, so that neither a regular spacing of the
// mailbox's ids (an auto_increment_increment above 1) nor the lag itself biases the sample.
func lagSampled(msgID int64, every int) bool {
	h := uint64(msgID) * 0x9E3779B97F4A7C15 // Fibonacci hashing: the high bits mix every bit of the id
	return (h>>32)%uint64(every) == 0
}
