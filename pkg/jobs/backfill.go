package jobs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/msgx/msgx/pkg/backoff"
	"github.com/msgx/msgx/pkg/clip"
	"github.com/msgx/msgx/pkg/clock"
	"github.com/msgx/msgx/pkg/leader"
	"github.com/msgx/msgx/pkg/mailbox"
	"github.com/msgx/msgx/pkg/replication"
)

// Backfill outcomes recorded in proc_state.backfill_outcome.
const (
	OutcomeMarked        = "MARKED"
	OutcomeAlreadyMarked = "ALREADY_MARKED"
	OutcomeMissingRow    = "MISSING_ROW"
	OutcomeOverdue       = "OVERDUE"
)

// markChunk bounds the ids of one mailbox call (and so the rows locked in it).
const markChunk = 500

// owed is a terminal row whose marker is due.
type owed struct {
	id       int64
	enqueued time.Time
	attempts int
}

// backfill is one run of the backfill sweep: chunks of due rows, each claimed, marked in the
// mailbox and recorded in one PostgreSQL transaction. The first mailbox failure ends the run
// (its rows are rescheduled; the rest stay due for the next run), and so does a wait for the
// standbys that runs out (nothing is written; every row stays due).
func (j *Jobs) backfill(ctx context.Context, lease leader.Lease, now time.Time) (Result, error) {
	var res Result
	deadline := time.Now().Add(j.cfg.RunBudget)
	if err := j.moveDebts(ctx, lease, now, deadline); err != nil {
		return res, err
	}
	if j.cfg.Shadow {
		// Shadow mode writes nothing to MySQL; the markers stay owed (and are not abandoned).
		return res, nil
	}
	batch := min(j.cfg.Batch, markChunk)
	var markErr error
	behind := false
	_, more, err := j.loop(ctx, deadline, batch, func() (int, error) {
		settled, selected, err := j.backfillChunk(ctx, lease, now, batch)
		res.Selected += selected
		res.Done += settled
		switch {
		case errors.Is(err, errMailbox):
			markErr = err
			return 0, nil // recorded on the rows; the run ends here
		case errors.Is(err, replication.ErrBehind): // logged and counted by the waiter
			behind = true
			return 0, nil // nothing written; the run ends here
		}
		return selected, err
	})
	res.More = more || behind
	if err == nil {
		err = markErr
	}
	if gerr := j.refreshBackfillGauges(ctx, now); gerr != nil && err == nil {
		err = gerr
	}
	return res, err
}

// debtChunk bounds the batch debts one statement moves onto their rows.
const debtChunk = 100

// moveDebts moves the batch debts older than the sweep's grace (BackoffBase, as for a row's first
// try) onto their rows, where the sweep below pays them row by row. A debt younger than that is
// the processor's immediate marker's, which deletes it when it wrote every row. Bounded as every
// task (loop); what is left is moved by the next run.
func (j *Jobs) moveDebts(ctx context.Context, lease leader.Lease, now, deadline time.Time) error {
	_, _, err := j.loop(ctx, deadline, debtChunk, func() (int, error) {
		var moved int
		err := leader.Fenced(ctx, j.pool, lease, func(tx pgx.Tx) error {
			return tx.QueryRow(ctx, moveDebtsSQL, now.Add(-j.cfg.BackoffBase), debtChunk).Scan(&moved)
		})
		if err != nil {
			return 0, fmt.Errorf("move batch marker debts onto their rows: %w", err)
		}
		return moved, nil
	})
	return err
}

// errMailbox marks a mailbox failure: recorded on the rows (backoff, or OVERDUE past R), it ends
// the run.
var errMailbox = errors.New("mailbox unavailable")

// backfillChunk claims up to batch due rows and settles them. It returns how many rows it
// settled and how many it selected.
func (j *Jobs) backfillChunk(ctx context.Context, lease leader.Lease, now time.Time, batch int) (int, int, error) {
	settled, selected := 0, 0
	var markErr error
	err := leader.Fenced(ctx, j.pool, lease, func(tx pgx.Tx) error {
		settled, selected, markErr = 0, 0, nil
		rows, err := tx.Query(ctx, backfillDueSQL, now, now.Add(-j.cfg.BackoffBase), batch)
		if err != nil {
			return fmt.Errorf("select due markers: %w", err)
		}
		due, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (owed, error) {
			var o owed
			return o, r.Scan(&o.id, &o.enqueued, &o.attempts)
		})
		if err != nil {
			return fmt.Errorf("select due markers: %w", err)
		}
		selected = len(due)
		if len(due) == 0 {
			return nil
		}
		// No marker before the standbys have the rows' terminal commits (INV-8c): every commit
		// this selection saw is behind the WAL position the wait reads now, in the same
		// transaction (whose row locks keep a replay off the rows meanwhile). Short of them,
		// nothing is written or recorded: the rows stay due for the next run.
		if err := j.cfg.Standbys.Await(ctx, tx, len(due), j.log); err != nil {
			if errors.Is(err, replication.ErrBehind) {
				markErr = err
				return nil
			}
			return fmt.Errorf("wait for the standbys: %w", err)
		}
		ids := make([]int64, len(due))
		for i, o := range due {
			ids[i] = o.id
		}
		mctx, cancel := context.WithTimeout(ctx, j.cfg.MarkTimeout)
		found, err := j.marker.MarkEach(mctx, ids, clock.WallClock(now, j.cfg.Location), j.cfg.ProcessedValue)
		cancel()
		if err != nil && ctx.Err() != nil {
			return ctx.Err()
		}
		markErr = err
		outcomes, errs, nexts := j.outcomes(due, found, err, now)
		if _, err := tx.Exec(ctx, backfillRecordSQL, ids, now, outcomes, errs, nexts); err != nil {
			return fmt.Errorf("record marker outcomes: %w", err)
		}
		j.report(due, outcomes, err)
		for _, o := range outcomes {
			if o == OutcomeMarked || o == OutcomeAlreadyMarked {
				settled++
			}
		}
		return nil
	})
	if err != nil {
		return settled, selected, err
	}
	if errors.Is(markErr, replication.ErrBehind) { // nothing was written, the rows stay due
		return 0, selected, markErr
	}
	if markErr != nil {
		return settled, selected, fmt.Errorf("%w: %w", errMailbox, markErr)
	}
	return settled, selected, nil
}

// outcomes are the chunk's outcome, error and next due time per row, from the mailbox's answer
// (found) or its failure (markErr): an empty outcome is a failure due again at next.
func (j *Jobs) outcomes(due []owed, found map[int64]mailbox.MarkOutcome, markErr error, now time.Time) ([]string, []string, []*time.Time) {
	n := len(due)
	outcomes, errs, nexts := make([]string, n), make([]string, n), make([]*time.Time, n)
	for i, o := range due {
		if markErr != nil {
			errs[i] = clip.String(markErr.Error(), maxBackfillError)
			if !now.Before(o.enqueued.Add(j.cfg.Overdue)) {
				outcomes[i] = OutcomeOverdue
				continue
			}
			next := now.Add(backoff.Delay(o.attempts+1, j.cfg.BackoffBase, j.cfg.BackoffMax))
			nexts[i] = &next
			continue
		}
		switch found[o.id] {
		case mailbox.MarkWritten:
			outcomes[i] = OutcomeMarked
		case mailbox.MarkAlready:
			outcomes[i] = OutcomeAlreadyMarked
		default:
			outcomes[i], errs[i] = OutcomeMissingRow, "mailbox row missing"
		}
	}
	return outcomes, errs, nexts
}

// report logs and counts a chunk's outcomes.
func (j *Jobs) report(due []owed, outcomes []string, markErr error) {
	var marked, already, failed int
	for i, o := range due {
		switch outcomes[i] {
		case OutcomeMarked:
			marked++
		case OutcomeAlreadyMarked:
			already++
		case OutcomeMissingRow:
			j.metrics.abandonedTotal.WithLabelValues(OutcomeMissingRow).Inc()
			j.log.Error().Int64("msg_id", o.id).Str("outcome", OutcomeMissingRow).
				Msg("backfill: mailbox row missing; marker abandoned (reconcile, then msgxctl backfill retry)")
		case OutcomeOverdue:
			j.metrics.abandonedTotal.WithLabelValues(OutcomeOverdue).Inc()
			j.log.Error().Int64("msg_id", o.id).Str("outcome", OutcomeOverdue).Time("enqueued_at", o.enqueued).
				Err(markErr).Msg("backfill: marker still failing after R; abandoned and listed for reconciliation")
		default:
			failed++
		}
	}
	j.metrics.purged.WithLabelValues(Backfill, "marked").Add(float64(marked))
	j.metrics.purged.WithLabelValues(Backfill, "already-marked").Add(float64(already))
	if failed > 0 {
		j.log.Warn().Err(markErr).Int("count", failed).Msg("backfill: mailbox unavailable; markers rescheduled with backoff")
	}
}

func (j *Jobs) refreshBackfillGauges(ctx context.Context, now time.Time) error {
	var oldest *time.Time
	var abandoned int64
	if err := j.pool.QueryRow(ctx, backfillGaugesSQL).Scan(&oldest, &abandoned); err != nil {
		return fmt.Errorf("read backfill gauges: %w", err)
	}
	age := 0.0
	if oldest != nil && !j.cfg.Shadow {
		age = max(0, now.Sub(*oldest).Seconds())
	}
	j.metrics.oldestUnmarked.Set(age)
	j.metrics.abandoned.Set(float64(abandoned))
	return nil
}

// maxBackfillError bounds, in characters, the mailbox error a row's backfill_error keeps.
const maxBackfillError = 500

// Abandoned is one abandoned marker, listed for reconciliation.
type Abandoned struct {
	MsgID       int64      `json:"msg_id"`
	Status      string     `json:"status"`
	Outcome     string     `json:"outcome"`
	Error       string     `json:"error,omitempty"`
	Attempts    int        `json:"attempts"`
	ReceivedAt  *time.Time `json:"received_at,omitempty"`
	EnqueuedAt  time.Time  `json:"enqueued_at"`
	FinishedAt  *time.Time `json:"finished_at"`
	AbandonedAt time.Time  `json:"abandoned_at"`
	Archived    bool       `json:"archived"`
}

// ListAbandoned lists up to limit abandoned markers (proc_state and proc_state_hst), by msg_id.
func ListAbandoned(ctx context.Context, pool *pgxpool.Pool, limit int) ([]Abandoned, error) {
	rows, err := pool.Query(ctx, listAbandonedSQL, limit)
	if err != nil {
		return nil, fmt.Errorf("list abandoned markers: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Abandoned, error) {
		var a Abandoned
		var outcome *string
		err := r.Scan(&a.MsgID, &a.Status, &outcome, &a.Error, &a.Attempts, &a.ReceivedAt, &a.EnqueuedAt,
			&a.FinishedAt, &a.AbandonedAt, &a.Archived)
		if outcome != nil {
			a.Outcome = *outcome
		}
		return a, err
	})
	if err != nil {
		return nil, fmt.Errorf("list abandoned markers: %w", err)
	}
	return out, nil
}

// RetryRequest makes abandoned markers due again (msgxctl backfill retry).
type RetryRequest struct {
	IDs    []int64
	Actor  string
	Reason string
	Now    time.Time
}

// RetryReport says which ids were made due and which were not abandoned markers.
type RetryReport struct {
	Retried []int64 `json:"retried"`
	Refused []int64 `json:"refused,omitempty"` // not an abandoned marker (owed, settled, unknown)
}

// RetryBackfill makes the given abandoned markers due now, moving archived ones back to
// proc_state, with an audit row (replay_audit action backfill-retry). The sweep retries them at
// its next run; a row still failing (or still missing) is abandoned again.
func RetryBackfill(ctx context.Context, pool *pgxpool.Pool, req RetryRequest) (RetryReport, error) {
	var rep RetryReport
	if len(req.IDs) == 0 {
		return rep, errors.New("retry: no ids")
	}
	if req.Reason == "" || req.Actor == "" {
		return rep, errors.New("retry: --reason and the actor are required (audit)")
	}
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, unarchiveAbandonedSQL, req.IDs); err != nil {
			return fmt.Errorf("unarchive abandoned markers: %w", err)
		}
		rows, err := tx.Query(ctx, retryAbandonedSQL, req.IDs, req.Now, req.Reason)
		if err != nil {
			return fmt.Errorf("retry abandoned markers: %w", err)
		}
		rep.Retried, err = pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return fmt.Errorf("retry abandoned markers: %w", err)
		}
		if len(rep.Retried) == 0 {
			return nil
		}
		_, err = tx.Exec(ctx, auditSQL, "backfill-retry", req.Actor, req.Reason, "ids", rep.Retried, req.Now)
		return err
	})
	if err != nil {
		return RetryReport{}, err
	}
	got := map[int64]bool{}
	for _, id := range rep.Retried {
		got[id] = true
	}
	for _, id := range req.IDs {
		if !got[id] {
			rep.Refused = append(rep.Refused, id)
		}
	}
	return rep, nil
}
