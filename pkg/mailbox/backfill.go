package mailbox

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"
)

// MarkOutcome is what writing one row's processed marker found (the four outcomes of INV-7,
// less the failure, which is the error of MarkEach).
type MarkOutcome int

// Per-row outcomes of MarkEach.
const (
	// MarkWritten: the marker was NULL and is now written.
	MarkWritten MarkOutcome = iota + 1
	// MarkAlready: the marker was already set (by us earlier, or by someone else); untouched.
	MarkAlready
	// MarkMissing: no cminmsgs row has this id.
	MarkMissing
	// markRefused: unmarked, and not written because MarkIf's guard left it out.
	markRefused
)

func (o MarkOutcome) String() string {
	switch o {
	case MarkWritten:
		return "written"
	case MarkAlready:
		return "already-marked"
	case MarkMissing:
		return "missing"
	case markRefused:
		return "refused"
	}
	return fmt.Sprintf("MarkOutcome(%d)", int(o))
}

// The backfill's statements (they live here, beside the code that runs them, because sql.go is
// being changed by another issue; move them there when convenient).
const (
	// markLockSQL reads the marker of the given rows and locks them until the update commits,
	// so the outcome of each row is exact even when someone else marks at the same time.
	markLockSQL = `SELECT CMINMSGS_ID, CMINMSGS_DATE_PROCESSED IS NOT NULL FROM cminmsgs WHERE CMINMSGS_ID IN (?`
	// markNullSQL is the one marker statement (MarkEach, MarkIf): only NULL → at (INV-7).
	markNullSQL = "UPDATE cminmsgs SET CMINMSGS_DATE_PROCESSED = ?"
)

// MarkEach writes the processed marker of the given rows (only NULL → at, INV-7, and
// CMINMSGS_STATUS = status when status is not empty; at is a wall-clock time whose UTC fields
// are written as they are) and reports each row's outcome. It
// runs in one short MySQL transaction that locks the rows it reads. An error means nothing is
// known about any row (the transaction rolled back).
func (m *Mailbox) MarkEach(ctx context.Context, ids []int64, at time.Time, status string) (map[int64]MarkOutcome, error) {
	return m.markEach(ctx, ids, at, status, nil)
}

// MarkIf is MarkEach for the rows guard allows, and returns how many rows it wrote. Once the
// rows are locked and before anything is written, guard is asked which of the unmarked ones
// may be marked; a row it leaves out is not written. Its answer must stay true until MarkIf
// returns (the mailbox write has committed then): the processor holds the PostgreSQL rows it
// allowed locked in a transaction it ends after, so no replay reopens one under the marker. A
// guard error writes nothing and is returned. Any error means nothing is known about any row
// (a failed commit may have landed).
func (m *Mailbox) MarkIf(ctx context.Context, ids []int64, at time.Time, status string,
	guard func(ctx context.Context, unmarked []int64) ([]int64, error)) (int64, error) {
	out, err := m.markEach(ctx, ids, at, status, guard)
	if err != nil {
		return 0, err
	}
	var n int64
	for _, o := range out {
		if o == MarkWritten {
			n++
		}
	}
	return n, nil
}

// markEach is MarkEach, asking guard (when not nil) which of the unmarked rows it may write; a
// row guard leaves out is reported markRefused (only MarkIf uses a guard, and it reports a count).
func (m *Mailbox) markEach(ctx context.Context, ids []int64, at time.Time, status string,
	guard func(ctx context.Context, unmarked []int64) ([]int64, error)) (map[int64]MarkOutcome, error) {
	out := make(map[int64]MarkOutcome, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	tx, err := m.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("write processed markers: %w", err)
	}
	defer func() { _ = tx.Rollback() }()

	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	rows, err := tx.QueryContext(ctx, markLockSQL+strings.Repeat(",?", len(ids)-1)+") FOR UPDATE", args...)
	if err != nil {
		return nil, fmt.Errorf("read processed markers: %w", err)
	}
	var unmarked []int64
	for rows.Next() {
		var id int64
		var marked bool
		if err := rows.Scan(&id, &marked); err != nil {
			_ = rows.Close()
			return nil, fmt.Errorf("read processed markers: %w", err)
		}
		if marked {
			out[id] = MarkAlready
		} else {
			out[id] = MarkWritten
			unmarked = append(unmarked, id)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read processed markers: %w", err)
	}
	if guard != nil && len(unmarked) > 0 {
		allowed, err := guard(ctx, unmarked)
		if err != nil {
			return nil, fmt.Errorf("check the rows to mark: %w", err)
		}
		ok := make(map[int64]bool, len(allowed))
		for _, id := range allowed {
			ok[id] = true
		}
		kept := unmarked[:0]
		for _, id := range unmarked {
			if ok[id] {
				kept = append(kept, id)
			} else {
				out[id] = markRefused
			}
		}
		unmarked = kept
	}
	if len(unmarked) > 0 {
		write := make([]any, len(unmarked))
		for i, id := range unmarked {
			write[i] = id
		}
		if err := m.markNull(ctx, tx, write, at, status); err != nil {
			return nil, err
		}
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("write processed markers: %w", err)
	}
	for _, id := range ids {
		if _, ok := out[id]; !ok {
			out[id] = MarkMissing
		}
	}
	return out, nil
}

func (m *Mailbox) markNull(ctx context.Context, tx *sql.Tx, ids []any, at time.Time, status string) error {
	args := make([]any, 0, len(ids)+2)
	args = append(args, at.UTC().Format(time.DateTime))
	q := markNullSQL
	if status != "" {
		q += ", CMINMSGS_STATUS = ?"
		args = append(args, status)
	}
	q += " WHERE CMINMSGS_DATE_PROCESSED IS NULL AND CMINMSGS_ID IN (?" + strings.Repeat(",?", len(ids)-1) + ")"
	args = append(args, ids...)
	res, err := tx.ExecContext(ctx, q, args...)
	if err != nil {
		return fmt.Errorf("write processed markers: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("write processed markers: %w", err)
	}
	if n != int64(len(ids)) {
		// The rows are locked: this cannot happen unless the isolation is broken. Refuse to guess.
		return fmt.Errorf("write processed markers: %d of %d locked rows changed", n, len(ids))
	}
	return nil
}
