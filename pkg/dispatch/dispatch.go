package dispatch

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/msgx/msgx/pkg/clock"
	"github.com/msgx/msgx/pkg/event"
	"github.com/msgx/msgx/pkg/kafka"
	"github.com/msgx/msgx/pkg/leader"
	"github.com/msgx/msgx/pkg/outbox"
)

// Sender produces records: in production the Link, over the kafka.Producer of the term.
type Sender interface {
	// Send produces recs and answers each (nil: acknowledged by the broker under D3b). The
	// records of one key are answered in order: one is acknowledged only if every record of its
	// key before it in recs was (kafka.Producer: a batch is one transaction, all or none), so a
	// FLID's run never reaches the topic with a gap.
	Send(ctx context.Context, recs []kafka.Record) []error
	// Ping fails when no broker answers.
	Ping(ctx context.Context) error
}

var _ Sender = (*kafka.Producer)(nil)

// foldLimit bounds the msg_state_log rows one flush moves (one transaction's deletes and
// rewrites): about a minute of states at the sustained rate, a flush period's at a drain's.
const foldLimit = 20000

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
	stateFrom   int64  // lower bound of the msg_state_log ids left to fold (FlushStates; 0 at each term's start)
	claimFrom   int64  // lower bound of the unsent KAFKA:msg event ids (StepMsg; 0 at each term's start)

	// held are the change records the changes topic holds beyond what the database knew as
	// sent, by FLID and version (ReadTail sets them before the loops start; StepMsg reads them).
	held map[string]map[int64]outbox.Held

	// tail is why this term's tail read has not finished, since its first attempt (nil: read, or
	// no term): Ready, and the report of the sends (Reporter).
	tail atomic.Pointer[Blocked]

	// lastSent is, per target, the highest event id whose record the broker acknowledged in
	// this term (the heartbeat reports it; 0: none yet).
	lastSent map[string]*atomic.Int64
	beats    *beatMetrics
}

// Ready fails while the leader's term cannot read the topics' tail, so it sends nothing (the
// read is retried): e.g. a principal without Read on the topics (docs/kafka.md's ACLs).
func (d *Dispatcher) Ready(context.Context) error {
	if b := d.tail.Load(); b != nil {
		return b
	}
	return nil
}

// TailBlocked says why nothing is sent while this term's tail read has not finished, and since
// when (nil: read, or no term).
func (d *Dispatcher) TailBlocked() *Blocked { return d.tail.Load() }

// New returns a dispatcher. Its metrics are registered on reg.
func New(cfg Config, store *outbox.Store, sender Sender, clk clock.Clock, reg prometheus.Registerer, log zerolog.Logger) (*Dispatcher, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	d := &Dispatcher{cfg: cfg, store: store, sender: sender, clock: clk, log: log, inflight: map[int64]time.Time{},
		lastSent: map[string]*atomic.Int64{event.TargetMsg: {}, event.TargetSchd: {}}}
	m, err := newMetrics(reg, d.oldestUnacked, cfg.LagSample)
	if err != nil {
		return nil, fmt.Errorf("dispatch metrics: %w", err)
	}
	if d.beats, err = newBeatMetrics(reg, clk, cfg.TopicHeartbeat, cfg.HeartbeatPeriod); err != nil {
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

// Result is what one step did.
type Result struct {
	Claimed int // records produced (KAFKA:schd: FLIDs)
	Sent    int // events marked SENT (KAFKA:schd: states settled, one per flight)
	Retried int // events that will retry after backoff
	Dead    int // events that went DEAD
	Outage  bool
	// More: step again at once. KAFKA:schd: the flush stopped at its limit, more FLIDs follow the
	// cursor; KAFKA:msg: more due events were already waiting.
	More bool
}

// StepMsg sends one batch of KAFKA:msg events (outbox.Claim: a failing FLID's events held on
// their rows first, then the QUEUED ones above the delivery cursor) and records the outcome.
func (d *Dispatcher) StepMsg(ctx context.Context, lease leader.Lease) (Result, error) {
	// A window of one batch: the cursor passes a held FLID's events (holding them on their rows),
	// so they never crowd out the others for more than one claim.
	c, from, err := d.store.Claim(ctx, d.clock.Now(), d.cfg.Batch, d.cfg.Batch, d.claimFrom)
	d.claimFrom = from
	if err != nil || (len(c.Events) == 0 && !c.Queued) || (c.Queued && c.Upto == 0) {
		return Result{}, err
	}
	send, already, err := d.dropHeld(ctx, lease, c.Events)
	if err != nil {
		return Result{Claimed: already, Sent: already, More: c.More}, err
	}
	if len(send) == 0 {
		_, err := d.settle(ctx, lease, c, nil, nil)
		return Result{Claimed: already, Sent: already, More: c.More || !c.Queued}, err
	}
	res, err := d.deliver(ctx, lease, event.TargetMsg, d.cfg.TopicChanges, send, &c)
	res.Claimed += already
	res.Sent += already
	res.More = c.More || !c.Queued // after events held on their rows, the QUEUED ones
	return res, err
}

// FlushStates moves the states written since the last flush into their FLIDs' rows (at most
// foldLimit of them; more: the flush says so), then visits up to flush-limit FLIDs with an
// unsent state (after the previous flush's cursor), sends the newest state of each due one that
// is newer than what the state topic holds, settles the stale ones without sending, and records
// the outcome.
func (d *Dispatcher) FlushStates(ctx context.Context, lease leader.Lease) (Result, error) {
	folded, from, err := d.store.FoldStates(ctx, lease, d.stateFrom, foldLimit)
	if err != nil {
		return Result{}, err
	}
	d.stateFrom = from
	sc, err := d.store.ClaimStates(ctx, d.clock.Now(), d.cfg.FlushLimit, d.stateCursor)
	if err != nil {
		return Result{}, err
	}
	d.stateCursor = sc.Next
	more := sc.Next != "" || folded == foldLimit
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
	res, err := d.deliver(ctx, lease, event.TargetSchd, d.cfg.TopicState, sc.Due, nil)
	res.Sent += int(settled)
	res.More = more
	return res, err
}
