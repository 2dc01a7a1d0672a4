package processor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/msgx/msgx/pkg/backoff"
	"github.com/msgx/msgx/pkg/clip"
	"github.com/msgx/msgx/pkg/leader"
	"github.com/msgx/msgx/pkg/procstate"
)

// Bounds of text recorded from a failure: a META value read from a rejected message (it may be
// any length) and an attempt's reason built from an error or a panic value.
const (
	metaBound   = 64   // characters
	reasonBound = 2000 // characters
)

// describe completes r with the message's TYPE and STYP and, for a message that failed to
// decode, the META that was read (kept on the row and its attempt: a DEAD message still says
// what it claimed to be; its identity is shown, never bound).
func (p *Engine) describe(r *result, w *work) {
	switch {
	case w.msg != nil:
		// Copies: the decoded values share the message's text, which the batch drops once the
		// message is processed (work.release).
		r.typ, r.styp = strings.Clone(w.msg.Meta.TYPE), strings.Clone(w.msg.Meta.STYP)
	case w.read != nil:
		r.typ, r.styp = clip.String(w.read.TYPE, metaBound), clip.String(w.read.STYP, metaBound)
		read := map[string]string{"SNDR": clip.String(w.read.SNDR, metaBound), "SEQN": clip.String(w.read.SEQN, metaBound), "TYPE": r.typ, "STYP": r.styp,
			"DTTM": clip.String(w.read.DTTMRaw, metaBound)}
		if w.read.SNDR != "" && w.read.TYPE != "" && w.read.STYP != "" && w.read.SEQN != "" {
			read["identity"] = clip.String(p.cfg.Rule().Key(*w.read), 4*metaBound)
		}
		if b, err := json.Marshal(read); err == nil {
			r.meta = string(b)
		}
	}
}

// outcome completes r from a handler's answer.
func (p *Engine) outcome(r result, out Outcome, err error) result {
	if err != nil {
		r.class, r.reason = classify(err)
		r.status, r.err = statusOf(r.class), err
		return r
	}
	r.status, r.reason = procstate.StatusSucceeded, out.Reason
	if out.Skipped {
		r.status = procstate.StatusSkipped
	}
	return r
}

// failure turns a retryable failure into FAILED with backoff, or DEAD EXHAUSTED at the limit.
func (p *Engine) failure(w work, class procstate.Class, reason string, now time.Time) result {
	r := result{id: w.row.id, identity: w.identity, class: class, reason: reason, reused: w.reused}
	p.describe(&r, &w)
	attempt := w.row.attempts + 1
	if attempt >= p.cfg.MaxAttempts {
		r.status, r.class = procstate.StatusDead, procstate.ClassExhausted
		r.reason = fmt.Sprintf("after %d attempts: %s: %s", attempt, class, reason)
		return r
	}
	r.status = procstate.StatusFailed
	r.nextAt = now.Add(backoff.Delay(attempt, p.cfg.BackoffBase, p.cfg.BackoffMax))
	return r
}

// write stores the batch's terminal results (one statement, with their marker debt) and the
// failure that stopped it. It returns the debt's id (0: no terminal result), which the immediate
// marker settles after the commit.
//
// Each outcome written also writes the message's attempt row (msg_attempt) in the same
// statement: the attempt history.
func (p *Engine) write(ctx context.Context, tx pgx.Tx, now time.Time, lease leader.Lease, results []result, failure *result) (int64, error) {
	var debt int64
	terminal := results
	if failure != nil && failure.status.Terminal() {
		terminal = append(slices.Clone(results), *failure)
	}
	if len(terminal) > 0 {
		n := len(terminal)
		ids, statuses, classes, reasons := make([]int64, n), make([]procstate.Status, n), make([]string, n), make([]string, n)
		identities, differs, typs, styps := make([]string, n), make([]bool, n), make([]string, n), make([]string, n)
		metas := make([]string, n)
		for i, r := range terminal {
			ids[i], statuses[i], classes[i], reasons[i] = r.id, r.status, string(r.class), r.reason
			identities[i], differs[i], typs[i], styps[i], metas[i] = r.identity, r.differs, r.typ, r.styp, r.meta
		}
		err := tx.QueryRow(ctx, finishSQL, ids, statuses, classes, reasons, identities, differs, typs, styps, now, lease.Epoch, metas).Scan(&debt)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) { // no row: none was open any more
			return 0, fmt.Errorf("write terminal status: %w", err)
		}
	}
	if failure != nil && failure.status == procstate.StatusFailed {
		if _, err := tx.Exec(ctx, failSQL, failure.id, string(failure.class), failure.reason, failure.nextAt,
			failure.identity, failure.typ, failure.styp, now, lease.Epoch, failure.meta); err != nil {
			return 0, fmt.Errorf("record failure: %w", err)
		}
	}
	return debt, nil
}

// commit writes outcomes in a protected transaction of their own, outside a batch's: a message
// alone whose batch transaction failed as a whole (failBatch: FAILED, or DEAD EXHAUSTED at the
// limit). It returns the marker debt's id (write: a terminal outcome owes its marker).
func (p *Engine) commit(ctx context.Context, lease leader.Lease, now time.Time, terminal []result, failure *result) (int64, error) {
	var debt int64
	err := leader.Fenced(ctx, p.pool, lease, func(tx pgx.Tx) error {
		var err error
		debt, err = p.write(ctx, tx, now, lease, terminal, failure)
		return err
	})
	return debt, err
}

// afterCommit ends careful mode where the outcomes reach its bound (settle), counts outcomes, logs
// them and starts the one immediate marker attempt, which settles the marker debt debt (write).
func (p *Engine) afterCommit(_ context.Context, now time.Time, results []result, debt int64) {
	var ids []int64
	for _, r := range results {
		p.settle(r.id)
		if r.reused {
			p.metrics.identityReused.Inc()
			p.batchLog.Warn().Int64("msg_id", r.id).Str("identity", r.identity).Str("status", string(r.status)).
				Dur("window", p.cfg.IdentityWindow).
				Msg("pump: identity key reused outside the identity window (SEQN reset or wrap): a new message")
		}
		if r.status == procstate.StatusFailed {
			p.metrics.processed.WithLabelValues(string(r.status), string(r.class)).Inc()
			p.batchLog.Warn().Int64("msg_id", r.id).Str("class", string(r.class)).Str("reason", r.reason).
				Time("next_attempt_at", r.nextAt).Msg("pump: message FAILED; it holds the head until due")
			continue
		}
		p.metrics.processed.WithLabelValues(string(r.status), string(r.class)).Inc()
		if r.status == procstate.StatusDead {
			p.batchLog.Error().Int64("msg_id", r.id).Str("class", string(r.class)).Str("reason", r.reason).Msg("pump: message is DEAD")
		}
		ids = append(ids, r.id)
	}
	p.markImmediately(ids, debt, now)
}
