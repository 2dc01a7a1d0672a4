package mailbox

import (
	"context"
	"fmt"
	"time"
)

// MarkProcessed writes the processed marker of the given rows: CMINMSGS_DATE_PROCESSED = at
// (and CMINMSGS_STATUS = status when status is not empty), only where the marker is still NULL
// (INV-7: never overwritten). at is a wall-clock time (its UTC fields are written as they are).
// It returns how many rows changed.
func (m *Mailbox) MarkProcessed(ctx context.Context, ids []int64, at time.Time, status string) (int64, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	args := make([]any, 0, len(ids)+2)
	args = append(args, at.UTC().Format(time.DateTime))
	if status != "" {
		args = append(args, status)
	}
	for _, id := range ids {
		args = append(args, id)
	}
	res, err := m.db.ExecContext(ctx, markProcessedSQL(len(ids), status != ""), args...)
	if err != nil {
		return 0, fmt.Errorf("write processed marker: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("write processed marker: %w", err)
	}
	return n, nil
}
