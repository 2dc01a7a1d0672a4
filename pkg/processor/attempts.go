package processor

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/msgx/msgx/pkg/clip"
	"github.com/msgx/msgx/pkg/leader"
	"github.com/msgx/msgx/pkg/procstate"
)

// startMark is the start mark the next attempt of the head commits (markStarted).
type startMark struct {
	write   bool      // false: the head's mark stays as it is
	at      time.Time // processing_started_at
	through int64     // the batch's last msg_id (set by Step once the batch is picked)
	deaths  int       // silent deaths charged in a row so far (INV-23d), as the mark records them
	// ended is the outcome recorded in msg_attempt for the previous attempt, which ended without
	// one (DIED, INTERRUPTED; empty: none), with why.
	ended, why string
}

// attemptMark applies the attempt rule (INV-23d) to the head: it returns the start mark of the
// next attempt, or the reason the head ends DEAD EXHAUSTED instead.
//
//   - A message that panics is charged one crash by the dying process itself (recordPanic):
//     PoisonCrashes in a row make it poison.
//   - An attempt that started (processing_through set) and that this engine did not see end was
//     ended by the process dying without a word (SIGKILL, out of memory, a hang killed by the
//     liveness probe) or by another leader taking over. If the message ran alone it is charged
//     one death; 3×PoisonCrashes in a row make it poison (a looser bound: such a death may be the
//     operator's or the platform's). A batch that died charges nobody: careful mode then runs its
//     messages alone, so the next death is charged to the culprit.
//   - An attempt this engine saw end without an outcome (cancelled, database lost) charges
//     nothing. Either way the mark is re-stamped: the time before is not the message's.
//   - A FAILED head's retries count from its first attempt, but a stretch in which the engine
//     could not retry it (due more than BackoffMax ago: an outage) moves the start forward by
//     that stretch. The head deadline ends a FAILED head only after that much real retrying.
func (p *Engine) attemptMark(head headRow, now time.Time) (startMark, string) {
	m := startMark{at: now, deaths: head.deaths}
	if head.startedAt != nil {
		m.at = *head.startedAt
	}
	if head.crashes >= p.cfg.PoisonCrashes {
		return m, fmt.Sprintf("poison: it crashed the processor %d times in a row (MSGX_POISON_CRASHES)", head.crashes)
	}
	switch {
	case head.through != nil && !p.ownsMark(head):
		m.ended, m.why = procstate.AttemptInterrupted, fmt.Sprintf("the process ended during the batch %d..%d (nobody charged; careful mode)", head.id, *head.through)
		if *head.through == head.id {
			m.deaths++
			m.ended, m.why = procstate.AttemptDied, fmt.Sprintf("the process died while the message ran alone (%d in a row)", m.deaths)
			if m.deaths >= 3*p.cfg.PoisonCrashes {
				return m, fmt.Sprintf("poison: the processor died %d times in a row while it ran alone (3×MSGX_POISON_CRASHES)", m.deaths)
			}
		}
		m.at, m.write = now, true
	case head.through != nil:
		cause := "cancelled, lease or database lost"
		if p.interrupted != "" {
			cause = "the database's failure: " + p.interrupted
		}
		m.ended, m.why = procstate.AttemptInterrupted, fmt.Sprintf("the attempt of the batch %d..%d ended without an outcome (%s): not charged", head.id, *head.through, cause)
		m.at, m.write = now, true
	case head.startedAt == nil:
		m.write = true
	case head.status == procstate.StatusFailed && head.nextAt != nil && now.Sub(*head.nextAt) > p.cfg.BackoffMax:
		m.at, m.write = m.at.Add(now.Sub(*head.nextAt)), true
	}
	if head.status == procstate.StatusFailed && now.Sub(m.at) >= p.cfg.HeadDeadline {
		return m, fmt.Sprintf("head deadline %s of retries passed (first attempt %s)", p.cfg.HeadDeadline, m.at.UTC().Format(time.RFC3339))
	}
	m.write = true // every attempt names its batch (processing_through)
	return m, ""
}

// ownsMark reports whether head's open mark is the one this engine committed (ownMark): the
// same head, batch and start time (stored to the microsecond).
func (p *Engine) ownsMark(head headRow) bool {
	return head.id == p.ownMark && head.through != nil && *head.through == p.ownThrough &&
		head.startedAt != nil && head.startedAt.Sub(p.ownAt).Abs() < time.Microsecond
}

// expireHead ends the head DEAD EXHAUSTED without another attempt (poison, or retried past the
// head deadline), so the messages behind it flow again; the attempt that made it poison is in
// its history first.
func (p *Engine) expireHead(ctx context.Context, lease leader.Lease, now time.Time, head headRow, m startMark, reason string) (StepResult, error) {
	r := result{id: head.id, status: procstate.StatusDead, class: procstate.ClassExhausted, reason: reason}
	var debt int64
	err := leader.Fenced(ctx, p.pool, lease, func(tx pgx.Tx) error {
		if err := p.recordEnded(ctx, tx, lease, now, head, m); err != nil {
			return err
		}
		var err error
		debt, err = p.write(ctx, tx, now, lease, []result{r}, nil)
		return err
	})
	if err != nil {
		return StepResult{}, err
	}
	p.ownMark = 0
	p.afterCommit(ctx, now, []result{r}, debt)
	return StepResult{Processed: 1, More: true}, nil
}

// markStarted commits the head's start mark in its own transaction, before the batch runs:
// processing_started_at, the batch's last msg_id and the deaths charged (INV-23d), with the
// attempt rows of the previous attempt when it ended without an outcome (recordEnded). The
// other messages of the batch get their own start mark (the same time) when their outcome is
// written. It is fenced like every write: a deposed leader's mark would make the next leader
// record an attempt that ended without an outcome, and charge a death when the head ran alone.
func (p *Engine) markStarted(ctx context.Context, lease leader.Lease, now time.Time, head headRow, m startMark, ahead bool) error {
	err := leader.Fenced(ctx, p.pool, lease, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, markStartedSQL, head.id, m.at, m.through, m.deaths, ahead)
		if err != nil {
			return err
		}
		if ahead && tag.RowsAffected() == 0 {
			return errHeadMoved
		}
		return p.recordEnded(ctx, tx, lease, now, head, m)
	})
	if err != nil {
		return fmt.Errorf("mark processing started: %w", err)
	}
	return nil
}

// recordEnded writes the attempt rows of the head's previous attempt when it ended without an
// outcome (DIED; INTERRUPTED for every open message of its batch), dated by its start mark.
func (p *Engine) recordEnded(ctx context.Context, tx pgx.Tx, lease leader.Lease, now time.Time, head headRow, m startMark) error {
	if m.ended == "" {
		return nil
	}
	at, through := now, head.id
	if head.startedAt != nil {
		at = *head.startedAt
	}
	if head.through != nil {
		through = *head.through
	}
	if _, err := tx.Exec(ctx, attemptEndedSQL, head.id, at, lease.Epoch, m.ended, m.why, through); err != nil {
		return fmt.Errorf("record the attempt that ended without an outcome: %w", err)
	}
	return nil
}

// recordPanic charges a panic to the message that caused it (crashes + 1, INV-23d) and records
// the attempt (CRASHED, with the panic value), on its own connection with a short deadline,
// before the process dies. The batch's transaction is still open and will be rolled back by the
// death; the charge is the only write that survives.
func (p *Engine) recordPanic(m Message, v any) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	why := clip.String(fmt.Sprintf("panic: %v", v), reasonBound)
	if _, err := p.pool.Exec(ctx, recordPanicSQL, m.ID, m.Now, m.Lease.Epoch, why); err != nil {
		p.batchLog.Error().Err(err).Int64("msg_id", m.ID).Msg("pump: could not record the panic on the message")
	}
}
