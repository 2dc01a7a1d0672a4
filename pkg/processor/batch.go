package processor

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/msgx/msgx/pkg/clip"
	"github.com/msgx/msgx/pkg/leader"
	"github.com/msgx/msgx/pkg/procstate"
	"github.com/msgx/msgx/pkg/wake"
)

// pickBatch chooses the batch from the head run. A head that was being processed when a previous
// attempt ended without an outcome (processing_through set) runs alone and starts careful mode:
// the messages of that attempt's batch, up to its processing_through, run one per transaction,
// so a message that kills the process is isolated; the messages after them are batched again.
// A FAILED head runs alone too. After the head, a batch holds only untouched PENDING rows.
func (p *Engine) pickBatch(rows []headRow) []headRow {
	head := rows[0]
	if head.through != nil || head.status == procstate.StatusFailed {
		through := head.id
		if head.through != nil {
			through = max(through, *head.through)
		}
		if head.status == procstate.StatusPending && p.carefulThrough == 0 {
			p.log.Warn().Int64("msg_id", head.id).Int64("through", through).
				Msg("pump: head was being processed when a previous attempt ended; processing one message per transaction up to the end of that batch")
		}
		p.carefulThrough = max(p.carefulThrough, through)
		rows = rows[:1]
	}
	for i := 1; i < len(rows); i++ {
		if rows[i].status != procstate.StatusPending || rows[i].startedAt != nil {
			rows = rows[:i]
			break
		}
	}
	return rows
}

// apply runs the batch in one transaction. It returns the terminal results committed, when the
// batch stopped at a message that did not succeed, that message's outcome (also committed), and
// the marker debt's id (write).
func (p *Engine) apply(ctx context.Context, lease leader.Lease, now time.Time, batch []work) ([]result, *result, int64, error) {
	start := time.Now()
	var results []result
	var failure *result
	var debt int64
	err := leader.Fenced(ctx, p.pool, lease, func(tx pgx.Tx) error {
		results, failure, debt = nil, nil, 0
		if _, err := tx.Exec(ctx, leader.PipelineLockSQL); err != nil {
			return fmt.Errorf("take pipeline lock: %w", err)
		}
		if err := p.bind(ctx, tx, now, batch); err != nil {
			return err
		}
		sessions, order, err := p.begin(ctx, tx, now, lease, batch)
		if err != nil {
			return err
		}
		for i := range batch {
			r := p.process(ctx, tx, now, lease, &batch[i], sessions, i)
			if r.err != nil && environmental(r.err) {
				return r.err // not the message's failure: the batch ends without an outcome (failBatch)
			}
			if r.status == procstate.StatusFailed {
				// FIFO: nothing behind a failed message runs in this batch.
				f := p.failure(batch[i], r.class, r.reason, now)
				failure = &f
				break
			}
			results = append(results, r)
			batch[i].release()
		}
		for _, b := range order {
			if err := sessions[b].Flush(ctx); err != nil {
				return fmt.Errorf("flush %T: %w", b, err)
			}
		}
		if len(results) > 0 {
			if err := wake.Notify(ctx, tx, wake.Outbox); err != nil {
				return err
			}
		}
		debt, err = p.write(ctx, tx, now, lease, results, failure)
		return err
	})
	p.metrics.txSeconds.Observe(time.Since(start).Seconds())
	if err != nil {
		return nil, nil, 0, err
	}
	p.metrics.batchSize.Observe(float64(len(results)))
	return results, failure, debt, nil
}

// begin starts one session per Batcher that serves messages of the batch (in first-use order).
func (p *Engine) begin(ctx context.Context, tx pgx.Tx, now time.Time, lease leader.Lease, batch []work) (map[Batcher]Session, []Batcher, error) {
	var order []Batcher
	msgs := map[Batcher][]Message{}
	for _, w := range batch {
		if w.decErr != nil {
			continue
		}
		b, ok := p.handlers[w.msg.Kind].(Batcher)
		if !ok {
			continue
		}
		if _, seen := msgs[b]; !seen {
			order = append(order, b)
		}
		msgs[b] = append(msgs[b], Message{ID: w.row.id, Raw: *w.row.raw, Decoded: w.msg, Identity: w.identity, Now: now, Lease: lease, Location: p.cfg.Location, Forced: w.row.forced})
	}
	sessions := make(map[Batcher]Session, len(order))
	for _, b := range order {
		s, err := b.Begin(ctx, tx, msgs[b])
		if err != nil {
			return nil, nil, fmt.Errorf("begin %T: %w", b, err)
		}
		sessions[b] = s
	}
	return sessions, order, nil
}

// process decides one message's outcome, applying it under its own savepoint.
func (p *Engine) process(ctx context.Context, tx pgx.Tx, now time.Time, lease leader.Lease, w *work, sessions map[Batcher]Session, i int) result {
	r := result{id: w.row.id, identity: w.identity, reused: w.reused}
	p.describe(&r, w)
	if w.decErr != nil {
		r.class, r.reason = classify(w.decErr)
		r.status = statusOf(r.class)
		return r
	}
	if o := w.dup; o != nil {
		// The identity stays with its owner.
		r.identity = ""
		r.differs = string(o.SHA256) != string(w.sha)
		r.status, r.reason = procstate.StatusSkipped, procstate.Duplicate(o.MsgID, r.differs).String()
		if r.differs {
			p.metrics.contentDiffers.Inc()
			p.batchLog.Warn().Int64("msg_id", w.row.id).Int64("first", o.MsgID).Str("identity", w.identity).
				Msg("pump: same identity, different content (PRE-7b broken upstream)")
		}
		return r
	}
	if slices.Contains(p.cfg.IgnoreTypes, w.msg.Meta.TYPE) {
		r.status, r.reason = procstate.StatusSkipped, procstate.Ignored(w.msg.Meta.TYPE).String()
		return r
	}
	h, ok := p.handlers[w.msg.Kind]
	if !ok {
		r.status, r.class = procstate.StatusFailed, procstate.ClassUnsupported
		r.reason = procstate.NoProcessor(w.msg.Kind, w.msg.Meta.TYPE, w.msg.Meta.STYP)
		return r
	}
	m := Message{ID: w.row.id, Raw: *w.row.raw, Decoded: w.msg, Identity: w.identity, Now: now, Lease: lease, Location: p.cfg.Location, Forced: w.row.forced}
	if b, ok := h.(Batcher); ok && sessions[b] != nil {
		// In memory: a failed Apply leaves no trace, so no savepoint is needed.
		out, err := p.applyOne(ctx, m, func() (Outcome, error) { return sessions[b].Apply(ctx, m) })
		return p.outcome(r, out, err)
	}
	sp := fmt.Sprintf("m%d", i)
	if _, err := tx.Exec(ctx, "SAVEPOINT "+sp); err != nil {
		r.status, r.class, r.reason, r.err = procstate.StatusFailed, procstate.ClassInfra, "savepoint: "+err.Error(), err
		return r
	}
	out, err := p.applyOne(ctx, m, func() (Outcome, error) { return h.Apply(ctx, tx, m) })
	if err != nil {
		if _, rerr := tx.Exec(ctx, "ROLLBACK TO SAVEPOINT "+sp); rerr != nil {
			r.status, r.class, r.reason, r.err = procstate.StatusFailed, procstate.ClassInfra, "rollback to savepoint: "+rerr.Error(), rerr
			return r
		}
	}
	return p.outcome(r, out, err)
}

// applyOne calls the processor; a panic is logged with the message id, charged to the message
// (recordPanic) and re-raised.
func (p *Engine) applyOne(_ context.Context, m Message, apply func() (Outcome, error)) (Outcome, error) {
	defer func() {
		if v := recover(); v != nil {
			p.batchLog.Error().Int64("msg_id", m.ID).Interface("panic", v).Msg("pump: processor panicked; the process ends (a bug, not a business outcome)")
			p.recordPanic(m, v)
			panic(v)
		}
	}()
	return apply()
}

// endAttempt ends the attempt of the batch ids (the head first) without charging anybody: the
// head's mark no longer names it, and each message's history gets outcome with why. The engine
// then holds no open attempt of its own.
func (p *Engine) endAttempt(ctx context.Context, lease leader.Lease, now time.Time, ids []int64, why, outcome string) error {
	why = clip.String(why, reasonBound)
	if err := leader.Fenced(ctx, p.pool, lease, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, endAttemptSQL, ids[0], ids, now, lease.Epoch, why, outcome)
		return err
	}); err != nil {
		return err
	}
	p.ownMark = 0
	return nil
}

// failBatch handles a batch transaction that failed as a whole (e.g. a Flush). A batch of several
// messages charges nobody: the engine goes on one message per transaction (careful mode), so the
// message that causes it fails alone. A message alone is charged: FAILED (or DEAD EXHAUSTED at
// the attempt limit). Fencing and cancellation are returned as they are (the attempt was
// interrupted, INV-23d), and so is a failure of the database that is not the message's
// (environmental): nobody is charged, and the next attempt records why this one ended.
func (p *Engine) failBatch(ctx context.Context, lease leader.Lease, now time.Time, batch []work, err error) (StepResult, error) {
	if errors.Is(err, leader.ErrFenced) || ctx.Err() != nil {
		return StepResult{}, err
	}
	from, to := batch[0].row.id, batch[len(batch)-1].row.id
	ids := make([]int64, len(batch))
	for i, w := range batch {
		ids[i] = w.row.id
	}
	if environmental(err) {
		// The attempt ends here, recorded: a mark left naming it would be read by another
		// process (a restart, a new leader) as a death of the message, and enough of those
		// make it poison.
		why := fmt.Sprintf("the attempt of the batch %d..%d ended without an outcome (the database's failure: %v): not charged", from, to, err)
		if werr := p.endAttempt(ctx, lease, now, ids, why, procstate.AttemptInterrupted); werr != nil {
			p.interrupted = clip.String(err.Error(), reasonBound) // the next attempt records it
			return StepResult{}, fmt.Errorf("apply batch %d..%d (not charged: the database's failure, retried): %w (recording it: %v)", from, to, err, werr)
		}
		return StepResult{}, fmt.Errorf("apply batch %d..%d (not charged: the database's failure, retried): %w", from, to, err)
	}
	if len(batch) > 1 {
		p.carefulThrough = max(p.carefulThrough, to)
		p.batchLog.Warn().Err(err).Int64("from", from).Int64("to", to).
			Msg("pump: batch failed as a whole; retrying one message per transaction to find the cause")
		// The attempt ended: the head's mark no longer names the batch, and each message's
		// history says what happened to it (nobody is charged).
		why := fmt.Sprintf("the batch %d..%d failed as a whole (%v): nobody charged; retried one message per transaction", from, to, err)
		if werr := p.endAttempt(ctx, lease, now, ids, why, procstate.AttemptBatchFailed); werr != nil {
			return StepResult{}, fmt.Errorf("apply batch: %w (recording its end: %v)", err, werr)
		}
		return StepResult{Failed: true}, nil
	}
	class, reason := classify(err)
	if class.Permanent() {
		class = procstate.ClassInfra
	}
	f := p.failure(batch[0], class, reason, now)
	debt, cerr := p.commit(ctx, lease, now, nil, &f)
	if cerr != nil {
		return StepResult{}, fmt.Errorf("apply batch: %w (recording the failure: %v)", err, cerr)
	}
	p.ownMark = 0
	p.afterCommit(ctx, now, []result{f}, debt)
	return StepResult{Processed: len(terminalOnly([]result{f})), Failed: f.status == procstate.StatusFailed, More: true}, nil
}

// terminalOnly is rs without its FAILED results.
func terminalOnly(rs []result) []result {
	return slices.DeleteFunc(slices.Clone(rs), func(r result) bool { return r.status == procstate.StatusFailed })
}
