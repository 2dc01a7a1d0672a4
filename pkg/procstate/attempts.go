package procstate

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Outcomes of an attempt that are not a status (msg_attempt.outcome; the others are the
// statuses SUCCEEDED, SKIPPED, DEAD and FAILED the attempt ended with).
const (
	AttemptCrashed     = "CRASHED"      // the message panicked the processor (charged: crashes)
	AttemptDied        = "DIED"         // the process died without a word while the message ran alone (charged: deaths)
	AttemptInterrupted = "INTERRUPTED"  // the attempt ended without an outcome (cancelled, lease or database lost, a batch died): not charged
	AttemptBatchFailed = "BATCH_FAILED" // the batch it ran in failed as a whole: not charged; retried one message per transaction
)

// Attempt is one attempt of a message (msg_attempt): the attempt history that replay keeps.
type Attempt struct {
	// Attempt is proc_state.attempts after it: it counts the attempts with an outcome and starts
	// again after a replay; an attempt without one (CRASHED, DIED, INTERRUPTED, BATCH_FAILED) has the count
	// before it.
	Attempt int       `json:"attempt"`
	At      time.Time `json:"at"`
	Epoch   int64     `json:"epoch"` // the processor leader's epoch (of the leader that found it, for DIED and INTERRUPTED)
	Outcome string    `json:"outcome"`
	Class   string    `json:"class,omitempty"`
	Reason  string    `json:"reason,omitempty"`
	// Meta is the META read of a message that failed to decode (SNDR, SEQN, TYPE, STYP, DTTM,
	// identity as it would be), nil otherwise.
	Meta map[string]string `json:"meta,omitempty"`
}

// Attempts lists every attempt of a message, oldest first (live or archived; replays included).
func Attempts(ctx context.Context, db Querier, msgID int64) ([]Attempt, error) {
	rows, err := db.Query(ctx, attemptsSQL, msgID)
	if err != nil {
		return nil, fmt.Errorf("read attempts of %d: %w", msgID, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Attempt, error) {
		var a Attempt
		var meta []byte
		if err := r.Scan(&a.Attempt, &a.At, &a.Epoch, &a.Outcome, &a.Class, &a.Reason, &meta); err != nil {
			return a, err
		}
		if meta != nil {
			if err := json.Unmarshal(meta, &a.Meta); err != nil {
				return a, fmt.Errorf("meta: %w", err)
			}
		}
		return a, nil
	})
	if err != nil {
		return nil, fmt.Errorf("read attempts of %d: %w", msgID, err)
	}
	return out, nil
}
