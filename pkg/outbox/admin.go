package outbox

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/msgx/msgx/pkg/clip"
)

// The operators' side of the store: dead letters listed, replayed or skipped (msgxctl dlq, the
// console), each action audited.

// DeadEvent is one dead letter.
type DeadEvent struct {
	EventID      int64     `json:"event_id"`
	Target       string    `json:"target"`
	FLID         string    `json:"flid"`
	Type         string    `json:"event_type"`
	StateVersion int64     `json:"state_version"`
	MsgID        int64     `json:"msg_id,omitempty"`
	Attempts     int       `json:"attempts"`
	LastError    string    `json:"last_error"`
	CreatedAt    time.Time `json:"created_at"`
	Status       string    `json:"status"`  // DEAD, or SKIPPED (DeadFilter.All)
	Holding      int64     `json:"holding"` // later PENDING events of the same FLID and target
}

// DeadFilter selects dead letters; empty fields match everything.
type DeadFilter struct {
	Target string
	FLID   string
	Limit  int
	All    bool // the SKIPPED ones too
}

// ListDead lists dead letters in event order.
func (s *Store) ListDead(ctx context.Context, f DeadFilter) ([]DeadEvent, error) {
	if f.Limit <= 0 {
		f.Limit = 1000
	}
	rows, err := s.pool.Query(ctx, listDeadSQL, f.Target, f.FLID, f.Limit, f.All)
	if err != nil {
		return nil, fmt.Errorf("list dead letters: %w", err)
	}
	out, err := pgx.AppendRows([]DeadEvent(nil), rows, func(row pgx.CollectableRow) (DeadEvent, error) {
		var d DeadEvent
		var msgID *int64
		err := row.Scan(&d.EventID, &d.Target, &d.FLID, &d.Type, &d.StateVersion, &msgID, &d.Attempts, &d.LastError, &d.CreatedAt, &d.Status, &d.Holding)
		if msgID != nil {
			d.MsgID = *msgID
		}
		return d, err
	})
	if err != nil {
		return nil, fmt.Errorf("list dead letters: %w", err)
	}
	return out, nil
}

// Selector chooses dead letters to replay: explicit ids, or every dead letter of one FLID
// (optionally of one target).
type Selector struct {
	IDs    []int64
	FLID   string
	Target string
}

func (s Selector) String() string {
	if s.FLID != "" {
		out := "flid=" + s.FLID
		if s.Target != "" {
			out += " target=" + s.Target
		}
		return out
	}
	return fmt.Sprintf("ids=%v", s.IDs)
}

// Admin is who does an operator action, and why (replay_audit).
type Admin struct {
	Actor  string
	Reason string
	DryRun bool // do everything, report it, roll back
}

// Replay moves the selected DEAD events back to PENDING with a fresh attempt budget and writes a
// 'dlq-replay' audit row, in one transaction. It returns the ids it moved (in order).
func (s *Store) Replay(ctx context.Context, sel Selector, who Admin, now time.Time) ([]int64, error) {
	if len(sel.IDs) == 0 && sel.FLID == "" {
		return nil, errors.New("replay: select ids or a FLID")
	}
	return s.admin(ctx, who, "dlq-replay", sel.String(), now, func(tx pgx.Tx) (pgx.Rows, error) {
		return tx.Query(ctx, replaySQL, nonNil(sel.IDs), sel.FLID, sel.Target)
	})
}

// Skip gives up on the selected DEAD events: they become SKIPPED (never sent, no longer holding
// their FLID, kept past the SENT retention), and a 'dlq-skip' audit row is written, in one
// transaction. A reason is required.
func (s *Store) Skip(ctx context.Context, ids []int64, who Admin, now time.Time) ([]int64, error) {
	if len(ids) == 0 {
		return nil, errors.New("skip: select ids")
	}
	if who.Reason == "" {
		return nil, errors.New("skip: a reason is required")
	}
	note := clip.String("skipped by "+who.Actor+": "+who.Reason, maxNote)
	return s.admin(ctx, who, "dlq-skip", fmt.Sprintf("ids=%v", ids), now, func(tx pgx.Tx) (pgx.Rows, error) {
		return tx.Query(ctx, skipSQL, ids, note)
	})
}

var errDryRun = errors.New("dry run")

func (s *Store) admin(ctx context.Context, who Admin, action, selector string, now time.Time, update func(pgx.Tx) (pgx.Rows, error)) ([]int64, error) {
	if who.Actor == "" {
		return nil, fmt.Errorf("%s: an actor is required", action)
	}
	var ids []int64
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		rows, err := update(tx)
		if err != nil {
			return err
		}
		ids, err = pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return err
		}
		slices.Sort(ids)
		if len(ids) > 0 {
			if err := Audit(ctx, tx, action, who, selector, ids, now); err != nil {
				return err
			}
		}
		if who.DryRun {
			return errDryRun
		}
		return nil
	})
	if err != nil && !errors.Is(err, errDryRun) {
		return nil, fmt.Errorf("%s: %w", action, err)
	}
	return ids, nil
}

// Audit writes the replay_audit row of an operator action in tx: what (action), who and why,
// the selector as given and the ids it acted on.
func Audit(ctx context.Context, tx pgx.Tx, action string, who Admin, selector string, ids []int64, now time.Time) error {
	reason := who.Reason
	if reason == "" {
		reason = "(none given)"
	}
	if _, err := tx.Exec(ctx, auditSQL, action, who.Actor, reason, selector, ids, now); err != nil {
		return fmt.Errorf("audit %s: %w", action, err)
	}
	return nil
}

func nonNil(ids []int64) []int64 {
	if ids == nil {
		return []int64{}
	}
	return ids
}
