package ingest

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/rs/zerolog"

	"github.com/msgx/msgx/pkg/clock"
	"github.com/msgx/msgx/pkg/leader"
	"github.com/msgx/msgx/pkg/mailbox"
	"github.com/msgx/msgx/pkg/wake"
)

// Source is what the poll loop reads from the mailbox (a *mailbox.Mailbox).
type Source interface {
	// ReadAfter returns up to limit committed rows with id > after, in id order.
	ReadAfter(ctx context.Context, after int64, limit int) ([]mailbox.Message, error)
	// Probe returns up to limit existing rows whose ids fall in ranges, in id order.
	Probe(ctx context.Context, ranges []mailbox.IDRange, limit int) ([]mailbox.Message, error)
}

var _ Source = (*mailbox.Mailbox)(nil)

// TrxSource is InnoDB's list of open transactions (a *mailbox.Mailbox), from which a gap is
// proved permanent (proof.go).
type TrxSource interface {
	// Transactions reads the list (mailbox.TrxList); mailbox.ErrNoProcess without the privilege,
	// mailbox.ErrTrxListTooSoon when read again too soon.
	Transactions(ctx context.Context) (mailbox.TrxList, error)
}

var _ TrxSource = (*mailbox.Mailbox)(nil)

// Deps are the Ingester's collaborators.
type Deps struct {
	DB      DB
	Mailbox Source
	// Transactions is optional: without it every gap ages MSGX_MAX_COMMIT_DELAY.
	Transactions TrxSource
	Fence        leader.Fence      // checked by every ingest transaction before its writes
	Beat         func(loop string) // optional: told of every poll-loop iteration (liveness, leader.Lease.Tick)
	Clock        clock.Clock
	Metrics      *Metrics
	Log          zerolog.Logger
}

// Ingester is the poll loop of one leadership term. It is not safe for concurrent use: one
// goroutine calls Run (or Step, in tests).
type Ingester struct {
	cfg Config
	d   Deps
	log zerolog.Logger

	cur       cursor
	obs       observations // when ids above W were first seen missing
	loaded    bool
	full      bool      // the last poll returned a full batch and moved W
	enqueued  int       // rows the last poll enqueued (pollWait)
	nextProbe time.Time // when the ledger is re-probed next
	charsets  bool      // the mailbox charsets were checked (checkCharsets)

	proof      prover       // the recent reads of InnoDB's transaction list (proof.go)
	proved     int64        // missing ids below it, still missing at a later read, never commit
	proofRetry time.Time    // when the transaction list is read again after the account could not
	proofLast  proofOutcome // the last outcome logged about the proof's availability
	proofFails int          // transaction list reads failed in a row (logged on the first and on recovery)
}

// New returns an Ingester; cfg's zero fields take their defaults.
func New(cfg Config, d Deps) (*Ingester, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if d.DB == nil || d.Mailbox == nil || d.Fence == nil || d.Clock == nil || d.Metrics == nil {
		return nil, errors.New("ingest: DB, Mailbox, Fence, Clock and Metrics are required")
	}
	d.Metrics.gapLimit.Set(cfg.MaxCommitDelay.Seconds())
	return &Ingester{cfg: cfg, d: d, log: d.Log.With().Str("stage", "ingest").Logger()}, nil
}

// Run polls until ctx ends, leadership is fenced (leader.ErrFenced is returned) or PostgreSQL
// refuses a privilege (leader.ErrStepDown: another release's instance may have it). It polls
// again at once after a full batch that moved W, else waits the poll interval. Store failures
// are logged and counted, and the next poll starts from the persisted cursor.
func (i *Ingester) Run(ctx context.Context) error {
	failures := 0
	for {
		if i.d.Beat != nil {
			i.d.Beat("poll")
		}
		if err := i.checkCharsets(ctx); err != nil {
			return err
		}
		_, err := i.Step(ctx)
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, leader.ErrFenced):
			return err
		case leader.Refused(err):
			i.log.Warn().Err(err).Msg("ingest: the database refuses a privilege; stepping down")
			return fmt.Errorf("%w: %w", leader.ErrStepDown, err)
		case err != nil:
			failures++
			i.log.Warn().Err(err).Int("consecutive_failures", failures).Msg("ingest poll failed; retrying after the poll interval")
		default:
			if failures > 0 {
				i.log.Info().Int("failures", failures).Msg("ingest poll recovered")
			}
			failures = 0
			if i.full {
				continue
			}
		}
		if !clock.WallSleep(ctx, i.pollWait()) {
			return nil
		}
	}
}

// pollWait is the wait before the next poll when the last one was not a full batch: the poll
// interval, or under load (the last poll enqueued a tenth of the claim batch or more) the
// gathering window, so the stages behind ingest commit about 1/Gather batches a second however
// fast messages arrive, at the price of that much latency then.
func (i *Ingester) pollWait() time.Duration {
	if i.enqueued >= max(1, i.cfg.ClaimBatch/10) {
		return max(i.cfg.Gather, i.cfg.PollInterval)
	}
	return i.cfg.PollInterval
}

// charsetSource is the mailbox's charset check (mailbox.Mailbox); a Source without it is not checked.
type charsetSource interface {
	Charsets(ctx context.Context) (mailbox.Charsets, error)
}

// checkCharsets logs the mailbox charsets once per term and refuses a connection that does not
// talk utf8mb4 (mailbox.Charsets.Check). An unreadable answer is retried at the next poll.
func (i *Ingester) checkCharsets(ctx context.Context) error {
	src, ok := i.d.Mailbox.(charsetSource)
	if !ok || i.charsets {
		return nil
	}
	var c mailbox.Charsets
	if err := i.timed(ctx, func(ctx context.Context) error {
		var err error
		c, err = src.Charsets(ctx)
		return err
	}); err != nil {
		i.log.Warn().Err(err).Msg("mailbox charsets not read; checked again at the next poll")
		return nil
	}
	i.charsets = true
	if err := c.Check(); err != nil {
		return fmt.Errorf("ingest: %w", err)
	}
	i.log.Info().Str("connection", c.Connection).Str("cminmsgs", c.Inbound).Str("coutmsgs", c.Outbound).
		Msg("mailbox charsets: msgx reads and writes utf8mb4; the server converts from and to the columns' charsets")
	if w := c.Warning(); w != "" {
		i.log.Warn().Msg(w)
	}
	return nil
}

// Step runs one poll: read the rows after W, commit the contiguous run (and any skip of an aged
// gap) with the new W in one transaction, then re-probe the skipped ids when due. progressed
// reports whether W moved or a row was enqueued.
func (i *Ingester) Step(ctx context.Context) (progressed bool, err error) {
	now := i.d.Clock.Now().Truncate(time.Microsecond) // PostgreSQL's precision
	i.full = false
	if !i.loaded {
		if err := i.timed(ctx, func(ctx context.Context) error {
			cur, err := loadCursor(ctx, i.d.DB)
			i.cur, i.obs = cur, nil
			if cur.GapStart != 0 {
				// After a restart the open gap keeps its window; newer ids start their own.
				i.obs = observations{{maxID: max(cur.Horizon, cur.GapStart+1), at: cur.FirstSeen}}
			}
			return err
		}); err != nil {
			i.d.Metrics.pollErrors.WithLabelValues("postgres").Inc()
			return false, err
		}
		i.loaded = true
	}

	var rows []mailbox.Message
	if err := i.timed(ctx, func(ctx context.Context) (err error) {
		rows, err = i.d.Mailbox.ReadAfter(ctx, i.cur.W, i.cfg.ClaimBatch)
		return err
	}); err != nil {
		i.d.Metrics.pollErrors.WithLabelValues("mailbox").Inc()
		return false, err
	}
	i.obs = i.obs.add(rows, now)
	d, err := plan(i.cur, rows, i.obs, now, i.cfg.MaxCommitDelay, i.cfg.MaxSkip, i.proved)
	if err != nil {
		i.d.Metrics.pollErrors.WithLabelValues("mailbox").Inc()
		return false, err
	}
	if d.changes(i.cur) {
		if err := i.commit(ctx, d, now); err != nil {
			i.loaded = false // reload: the transaction may or may not have committed
			i.d.Metrics.pollErrors.WithLabelValues("postgres").Inc()
			return false, err
		}
	}
	progressed = d.next.W != i.cur.W || len(d.enqueue) > 0
	i.enqueued = len(d.enqueue)
	i.full = len(rows) == i.cfg.ClaimBatch && d.next.W != i.cur.W
	i.cur = d.next
	i.obs = i.obs.prune(i.cur.W)
	i.proof.prune(i.cur.W)
	i.d.Metrics.polled(now, i.cur, d.blocked)
	if d.blocked > 0 {
		i.prove(ctx, now)
	}

	late, err := i.reprobe(ctx, now)
	return progressed || late > 0, err
}

func (i *Ingester) commit(ctx context.Context, d decision, now time.Time) error {
	c := newCopies(d.enqueue)
	var inserted []int64
	err := i.timed(ctx, func(ctx context.Context) error {
		return leader.Fenced(ctx, i.d.DB, i.d.Fence, func(tx pgx.Tx) error {
			var err error
			if inserted, err = enqueue(ctx, tx, c, now, false); err != nil {
				return err
			}
			for _, sk := range d.skips {
				if err := recordSkip(ctx, tx, sk, now, now.Add(i.cfg.ReprobeWindow)); err != nil {
					return err
				}
			}
			return moveCursor(ctx, tx, i.cur.W, d.next, now, i.cfg.MaxCommitDelay)
		})
	})
	if err != nil {
		return fmt.Errorf("commit ingest step at W=%d: %w", i.cur.W, err)
	}
	i.d.Metrics.enqueued.WithLabelValues("poll").Add(float64(len(inserted)))
	i.d.Metrics.copied(c, inserted)
	for _, id := range c.unstorable {
		i.d.Metrics.unstorable.Inc()
		i.log.Error().Int64("msg_id", id).Msg("mailbox text has a NUL byte or bytes that are text in no charset msgx reads: enqueued with raw NULL and its bytes in raw_bytes (the processor reads them: CODEC_ERROR or MALFORMED)")
	}
	for _, sk := range d.skips {
		n := sk.to - sk.from + 1
		i.d.Metrics.skipped.Add(float64(n))
		i.d.Metrics.passed.WithLabelValues(string(sk.by)).Add(float64(n))
		ev := i.log.Warn()
		if sk.by == passedProved {
			ev = i.log.Info() // the expected end of a rolled-back insert
		}
		ev.Int64("from_id", sk.from).Int64("to_id", sk.to).Int64("ids", n).Str("passed_by", string(sk.by)).
			Time("first_seen_at", sk.since).Dur("max_commit_delay", i.cfg.MaxCommitDelay).
			Msg("gap judged permanent: skipped the missing ids only; they are re-probed for late commits")
		i.nextProbe = time.Time{} // make the ledger metrics current at once
	}
	if d.next.GapStart != 0 && d.next.GapStart != i.cur.GapStart {
		i.log.Info().Int64("gap_start", d.next.GapStart).Int64("missing_ids", d.blocked).
			Msg("gap in mailbox ids holds the watermark until the missing ids commit or the max commit delay passes")
	}
	return nil
}

// proofRetryWait is how long ingest waits before it reads the transaction list again after the
// account was refused it (a PROCESS grant added later is used from then on).
const proofRetryWait = time.Minute

// prove reads InnoDB's transaction list while a gap holds W and keeps the horizon it proves for
// the next step's read (proof.go). Any failure only leaves the gap to age.
func (i *Ingester) prove(ctx context.Context, now time.Time) {
	src := i.d.Transactions
	if src == nil || now.Before(i.proofRetry) {
		return
	}
	var l mailbox.TrxList
	err := i.timed(ctx, func(ctx context.Context) (err error) {
		l, err = src.Transactions(ctx)
		return err
	})
	var outcome proofOutcome
	switch {
	case errors.Is(err, mailbox.ErrTrxListTooSoon):
		return
	case errors.Is(err, mailbox.ErrNoProcess):
		outcome, i.proofRetry = proofUnavailable, now.Add(proofRetryWait)
	case err != nil:
		outcome = proofError
	default:
		var h int64
		h, outcome = i.proof.judge(l, i.cfg.ProofSettle)
		i.proved = max(i.proved, h)
	}
	i.d.Metrics.proofReads.WithLabelValues(string(outcome)).Inc()
	i.noteProofRead(err, outcome)
	switch {
	case outcome == proofUnavailable && i.proofLast != proofUnavailable:
		i.log.Info().Err(err).Dur("max_commit_delay", i.cfg.MaxCommitDelay).
			Msg("gap proof off: the mailbox account may not read InnoDB's transaction list (PROCESS); gaps age the max commit delay")
	case outcome != proofUnavailable && outcome != proofError && (i.proofLast == "" || i.proofLast == proofUnavailable):
		i.log.Info().Msg("gap proof on: a gap is passed as soon as no open transaction can still commit its ids")
	}
	if (outcome == proofClock || outcome == proofServer) && outcome != i.proofLast {
		i.log.Warn().Str("outcome", string(outcome)).
			Msg("gap proof doubts the transaction list (clock: the session time zone is not the server's or its clock stepped; server: a read-only server, one of several writers, or a mailbox table not in InnoDB); the gap ages meanwhile")
	}
	if outcome != proofError {
		i.proofLast = outcome
	}
}

// noteProofRead logs a change of whether the transaction list can be read: its first failed read
// (the following ones are only counted, msgx_ingest_gap_proof_reads_total{outcome="error"}) and
// the read that answers again.
func (i *Ingester) noteProofRead(err error, outcome proofOutcome) {
	switch {
	case outcome == proofError:
		if i.proofFails == 0 {
			i.log.Warn().Err(err).Msg("InnoDB transaction list not read; the gap ages meanwhile (further failures are counted, not logged)")
		}
		i.proofFails++
	case i.proofFails > 0:
		i.log.Info().Int("failed_reads", i.proofFails).Msg("InnoDB transaction list read again")
		i.proofFails = 0
	}
}

// reprobe looks for rows of skipped ids (when due) and enqueues those found as late rows.
func (i *Ingester) reprobe(ctx context.Context, now time.Time) (int, error) {
	if now.Before(i.nextProbe) {
		return 0, nil
	}
	var ranges []mailbox.IDRange
	if err := i.timed(ctx, func(ctx context.Context) error {
		n, oldest, err := ledgerStats(ctx, i.d.DB, now)
		if err != nil {
			return err
		}
		i.d.Metrics.ledger(n, oldest)
		if n > 0 {
			ranges, err = reprobeRanges(ctx, i.d.DB, now, i.cfg.ReprobeRanges)
		}
		return err
	}); err != nil {
		i.d.Metrics.pollErrors.WithLabelValues("postgres").Inc()
		return 0, err
	}
	if len(ranges) == 0 {
		i.nextProbe = now.Add(i.cfg.ReprobeEvery)
		return 0, nil
	}
	var found []mailbox.Message
	if err := i.timed(ctx, func(ctx context.Context) (err error) {
		found, err = i.d.Mailbox.Probe(ctx, ranges, i.cfg.ClaimBatch)
		return err
	}); err != nil {
		i.d.Metrics.pollErrors.WithLabelValues("mailbox").Inc()
		return 0, err
	}
	if len(found) == 0 {
		i.nextProbe = now.Add(i.cfg.ReprobeEvery)
		return 0, nil
	}
	inserted, closed, err := i.enqueueLate(ctx, found, now)
	if err != nil {
		i.d.Metrics.pollErrors.WithLabelValues("postgres").Inc()
		return 0, fmt.Errorf("enqueue late rows: %w", err)
	}
	// A full probe may have more: look again on the next step.
	if len(found) < i.cfg.ClaimBatch {
		i.nextProbe = now.Add(i.cfg.ReprobeEvery)
	}
	i.reportLate(inserted, closed)
	_ = i.timed(ctx, func(ctx context.Context) error {
		n, oldest, err := ledgerStats(ctx, i.d.DB, now)
		if err == nil {
			i.d.Metrics.ledger(n, oldest)
		}
		return err // only the metric is stale; the next re-probe refreshes it
	})
	return len(closed), nil
}

// enqueueLate enqueues the late rows found and closes their skipped ids in the ledger, in one
// transaction; it returns the ids it inserted (a late row the compat entry enqueued already is
// not) and the skipped ids it closed.
func (i *Ingester) enqueueLate(ctx context.Context, found []mailbox.Message, now time.Time) ([]int64, []foundGap, error) {
	c := newCopies(found)
	var (
		inserted []int64
		closed   []foundGap
	)
	err := i.timed(ctx, func(ctx context.Context) error {
		return leader.Fenced(ctx, i.d.DB, i.d.Fence, func(tx pgx.Tx) error {
			var err error
			if inserted, err = enqueue(ctx, tx, c, now, true); err != nil {
				return err
			}
			if closed, err = markFound(ctx, tx, c.ids, now); err != nil {
				return err
			}
			return wake.Notify(ctx, tx, wake.Inbox)
		})
	})
	if err == nil {
		i.d.Metrics.copied(c, inserted)
	}
	return inserted, closed, err
}

// reportLate logs each late row and counts them.
func (i *Ingester) reportLate(inserted []int64, closed []foundGap) {
	isNew := make(map[int64]bool, len(inserted))
	for _, id := range inserted {
		isNew[id] = true
	}
	for _, g := range closed {
		ev := i.log.Warn().Int64("msg_id", g.ID).Time("gap_first_seen_at", g.FirstSeen).Time("skipped_at", g.SkippedAt).Int64("watermark", i.cur.W)
		if isNew[g.ID] {
			ev.Msg("late row: committed after its id was skipped; enqueued below W and processed next (FIFO for everything still open)")
		} else {
			ev.Msg("late row: committed after its id was skipped; already enqueued by the compat entry")
		}
	}
	i.d.Metrics.late.Add(float64(len(closed)))
	i.d.Metrics.enqueued.WithLabelValues("late").Add(float64(len(inserted)))
}

// timed runs f with the per-round-trip deadline.
func (i *Ingester) timed(ctx context.Context, f func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, i.cfg.DBTimeout)
	defer cancel()
	return f(ctx)
}
