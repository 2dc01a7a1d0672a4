package processor

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"

	"github.com/msgx/msgx/pkg/clock"
	"github.com/msgx/msgx/pkg/identity"
	"github.com/msgx/msgx/pkg/leader"
	"github.com/msgx/msgx/pkg/procstate"
	"github.com/msgx/msgx/pkg/sis"
)

// Engine drains the head of proc_state (doc.go).
type Engine struct {
	cfg      Config
	pool     *pgxpool.Pool
	handlers map[sis.Kind]Handler
	marker   Marker
	clock    clock.Clock
	log      zerolog.Logger
	metrics  *Metrics

	// batchLog is log with the batch id of the batch in progress (batchID); Step sets it before
	// the batch runs, and every line about the batch or one of its messages uses it.
	batchLog zerolog.Logger

	// carefulThrough is the last msg_id of a batch that ended without an outcome (its head found
	// with processing_through set) or failed as a whole: up to it the engine processes one
	// message per transaction (careful mode), so that the message that caused it is isolated.
	// A FAILED head, or one that had run alone, raises it to at least its own id (it runs alone).
	// It ends when a message at or past it has an outcome committed (afterCommit: settle).
	// It lives in this process only: after a restart only the head's mark bounds it (its own id
	// if it ran alone), and a batch that failed as a whole leaves no mark (endAttempt), so the rest
	// of such a batch runs in a batch again, which fails or dies as a whole again before careful
	// mode isolates the cause: one more batch, nobody charged. Zero: not careful.
	carefulThrough int64
	// ownMark is the head whose start mark this engine committed and whose attempt it saw end
	// without an outcome (an error, a cancelled context): the next attempt re-stamps it and
	// charges nothing (INV-23d). A mark the engine does not know was left by a process that died.
	// The mark is its own only while the row still holds what it wrote, ownAt and ownThrough:
	// another leader's term since (whatever its epoch: a failover may reuse one) re-stamps it
	// before its own attempt, with the time of that attempt.
	ownMark    int64
	ownAt      time.Time
	ownThrough int64
	// interrupted says why ownMark's attempt ended (the database's error), for its history; ""
	// when the engine does not know (cancelled, lease or database lost).
	interrupted string

	markers sync.WaitGroup // immediate marker writes in flight (WaitMarkers)
	writers chan struct{}  // their slots

	// ahead is the next batch's run, read while the last batch committed (lookahead.go).
	ahead *lookahead
}

// New returns an engine. handlers maps message kinds to their handlers; a kind without one is
// FAILED UNSUPPORTED. marker may be nil (no immediate backfill; the jobs sweep writes every
// marker).
func New(cfg Config, pool *pgxpool.Pool, handlers map[sis.Kind]Handler, marker Marker, clk clock.Clock, metrics *Metrics, log zerolog.Logger) *Engine {
	if cfg.Location == nil {
		cfg.Location = time.UTC
	}
	if cfg.MarkerTimeout <= 0 {
		cfg.MarkerTimeout = 10 * time.Second
	}
	if cfg.PoisonCrashes <= 0 {
		cfg.PoisonCrashes = 3 // tests and tools that build a Config by hand
	}
	if cfg.IdentityWindow <= 0 {
		cfg.IdentityWindow = 7 * 24 * time.Hour // the same (MSGX_IDENTITY_WINDOW's default)
	}
	if metrics == nil {
		metrics = NewMetrics(nil)
	}
	return &Engine{cfg: cfg, pool: pool, handlers: handlers, marker: marker, clock: clk, log: log, metrics: metrics,
		batchLog: log, writers: make(chan struct{}, markerWriters)}
}

// StepResult says what one Step did.
type StepResult struct {
	Processed int  // messages that reached a terminal status
	Failed    bool // the batch ended with a FAILED message
	Idle      bool // nothing to do
	// More: open rows were waiting beyond this batch when it was read (a full run, one the byte
	// bound cut, or a batch cut short); false after a batch that took the whole head run, so the
	// next rows come with ingest's wake-up.
	More      bool
	WaitUntil time.Time // set when the head is FAILED and not due yet
}

// maxBatchBytes bounds the stored text a batch loads (the first message always loads).
const maxBatchBytes = 8 << 20

// headRow is one row of the head run.
type headRow struct {
	id         int64
	raw        *string
	rawBytes   []byte // the mailbox bytes, loaded only when raw is NULL (no text copy could be stored)
	status     procstate.Status
	attempts   int
	nextAt     *time.Time
	startedAt  *time.Time
	through    *int64 // an attempt started (mark committed) and not ended: the batch's last msg_id
	crashes    int
	deaths     int
	enqueuedAt time.Time
	forced     bool // an operator forced its replay (INV-24b)
}

// work is one message of a batch with its decode result.
type work struct {
	row      headRow
	msg      *sis.Message
	decErr   error
	read     *sis.Meta // the META read of a message that failed to decode (nil: none reached)
	identity string
	sha      []byte
	dup      *identity.Binding // the message this one duplicates (bind)
	reused   bool              // its key was bound to a message outside the identity window (bind)
}

// release drops a processed message's text and decoded form: a batch holds only the messages
// still to process (and the read-ahead its next batch), not every message it processed.
func (w *work) release() { w.msg, w.row.raw, w.row.rawBytes = nil, nil, nil }

// result is a message's outcome in a batch.
type result struct {
	id       int64
	status   procstate.Status // SUCCEEDED, SKIPPED, DEAD; or FAILED
	class    procstate.Class
	reason   string
	identity string
	differs  bool
	typ      string
	styp     string
	meta     string // JSON of the META read, for a message that failed to decode (msg_attempt.meta)
	nextAt   time.Time
	reused   bool  // the key was reused (SEQN reset or wrap): counted and logged after the commit
	err      error // a FAILED outcome's error, as the handler or the database returned it
}

// Step processes the next batch of head messages: it waits for a FAILED head that is not due,
// ends a head past its deadline, picks the batch (one message in careful mode), marks its start,
// then applies it in one transaction; a transaction that fails as a whole is recorded on the head.
func (p *Engine) Step(ctx context.Context, lease leader.Lease) (StepResult, error) {
	now := p.clock.Now()
	limit := p.cfg.Batch
	if p.carefulThrough > 0 {
		limit = 1
	}
	var rows []headRow
	var more bool
	var decoded []work // rows decoded ahead (nil: decode here)
	if a := p.takeAhead(); a != nil {
		rows, more, decoded = a.rows, a.more, a.work
	} else {
		var err error
		if rows, more, err = p.loadRun(ctx, limit, 0); err != nil {
			return StepResult{}, err
		}
	}
	if len(rows) == 0 {
		p.metrics.headAge.Set(0)
		return StepResult{Idle: true}, nil
	}
	head := rows[0]
	p.metrics.headAge.Set(now.Sub(head.enqueuedAt).Seconds())

	if head.status == procstate.StatusFailed && head.nextAt != nil && head.nextAt.After(now) {
		return StepResult{WaitUntil: *head.nextAt}, nil
	}
	mark, expired := p.attemptMark(head, now)
	if expired != "" {
		p.batchLog = p.log.With().Str("batch", batchID(head.id, head.id)).Logger()
		return p.expireHead(ctx, lease, now, head, mark, expired)
	}
	picked := p.pickBatch(rows)
	more = more || len(picked) < len(rows)
	rows = picked
	p.batchLog = p.log.With().Str("batch", batchID(head.id, rows[len(rows)-1].id)).Logger()
	mark.through = rows[len(rows)-1].id
	if err := p.markStarted(ctx, lease, now, head, mark, decoded != nil); err != nil {
		if errors.Is(err, errHeadMoved) {
			p.metrics.readAhead.WithLabelValues("moved").Inc()
			return StepResult{More: true}, nil // read the head again
		}
		return StepResult{}, err
	}
	p.ownMark, p.ownAt, p.ownThrough, p.interrupted = head.id, mark.at, mark.through, ""

	batch := p.batchOf(rows, decoded)
	var ahead *lookahead
	// Never beside a message alone: a death during its attempt is charged to it (attemptMark), so
	// the attempt must not be the read-ahead's too. This also keeps careful mode's one message
	// per transaction free of it.
	if more && len(rows) > 1 && p.cfg.ReadAhead {
		ahead = p.readAhead(ctx, rows[len(rows)-1].id)
	}
	results, failure, debt, err := p.apply(ctx, lease, now, batch)
	if err != nil {
		p.drop(ahead)
		return p.failBatch(ctx, lease, now, batch, err)
	}
	p.ownMark = 0
	if failure != nil {
		p.drop(ahead) // the failed message holds the head: the run after it is not next
		results = append(results, *failure)
	} else {
		p.ahead = ahead
	}
	p.afterCommit(ctx, now, results, debt)
	p.batchLog.Debug().Int("messages", len(results)).Msg("pump: batch committed")
	t := terminalOnly(results)
	return StepResult{Processed: len(t), Failed: len(t) < len(results), More: more}, nil
}

// settle ends careful mode when id, the last message with an outcome just committed (FAILED
// included), is at or past its bound: every message of the batch careful mode covers has run
// alone. A FAILED head still runs alone on its retries (pickBatch); the messages behind it are
// batched again.
func (p *Engine) settle(id int64) {
	if id >= p.carefulThrough {
		p.carefulThrough = 0
	}
}

// batchOf is the batch of rows: the work decoded ahead (decoded), or the rows decoded now.
func (p *Engine) batchOf(rows []headRow, decoded []work) []work {
	if decoded != nil {
		p.metrics.readAhead.WithLabelValues("used").Inc()
		return decoded[:min(len(decoded), len(rows))]
	}
	batch := make([]work, len(rows))
	for i, r := range rows {
		batch[i] = p.prepare(r)
	}
	return batch
}

// batchID names a batch in the log: its first and last msg_id ("101..164"; a message alone is
// "101..101"), the range its start mark records (processing_through).
func batchID(first, last int64) string { return fmt.Sprintf("%d..%d", first, last) }

// loadRun reads the run of open rows after msg_id after (0: the head run): at most limit rows,
// with their text (headSQL, bounded by maxBatchBytes), and whether more open rows wait behind them.
func (p *Engine) loadRun(ctx context.Context, limit int, after int64) ([]headRow, bool, error) {
	rows, err := p.pool.Query(ctx, headSQL, limit, maxBatchBytes, after)
	if err != nil {
		return nil, false, fmt.Errorf("load head: %w", err)
	}
	var run int
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (headRow, error) {
		var h headRow
		err := r.Scan(&h.id, &h.raw, &h.rawBytes, &h.status, &h.attempts, &h.nextAt, &h.startedAt, &h.through, &h.crashes, &h.deaths, &h.enqueuedAt, &h.forced, &run)
		return h, err
	})
	if err != nil {
		return nil, false, fmt.Errorf("load head: %w", err)
	}
	return out, run >= limit || len(out) < run, nil
}

// prepare decodes a message and computes its identity (outside any transaction): from its text
// copy, or from the mailbox bytes when no text copy could be stored.
func (p *Engine) prepare(r headRow) work {
	if r.raw == nil && len(r.rawBytes) > 0 {
		text := string(r.rawBytes) // decoding reads its declared charset: CODEC_ERROR or MALFORMED
		r.raw = &text
	}
	w := work{row: r}
	if r.raw == nil || strings.TrimSpace(*r.raw) == "" {
		w.decErr = Errorf(procstate.ClassMalformed, "raw text empty or missing")
		return w
	}
	sum := sha256.Sum256([]byte(*r.raw))
	w.sha = sum[:]
	m, err := sis.DecodePartialString(*r.raw, sis.Options{Location: p.cfg.Location})
	if err != nil {
		w.decErr = err
		if m != nil {
			w.read = &m.Meta
		}
		return w
	}
	w.msg, w.identity = m, p.cfg.Rule().Key(m.Meta)
	return w
}
