package mailbox

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/msgx/msgx/pkg/clock"
)

// Message is one cminmsgs row as ingest copies it.
type Message struct {
	ID int64
	// Text is CMINMSGS_CLOB_MSG exactly as stored (never trimmed or re-encoded).
	Text string
	// ReceivedAt is CMINMSGS_DATE_RECEIVED as a wall-clock value in UTC; zero when NULL.
	ReceivedAt time.Time
}

// IDRange is the closed range [From, To] of mailbox ids.
type IDRange struct {
	From, To int64
}

// NewMessage is what the compat entry inserts.
type NewMessage struct {
	Text string
	// Received is written to CMINMSGS_DATE_RECEIVED as its own wall clock (the location is
	// dropped: the column has no zone). Zero writes NULL.
	Received time.Time
	// Subsystem fills the CMINMSGS_SUBSYSTEM_* columns; zero fields write NULL.
	Subsystem Subsystem
}

// Subsystem is the CMINMSGS_SUBSYSTEM_* columns, taken from the message's META.
type Subsystem struct {
	Name        string    // SNDR, varchar(4)
	Type        string    // TYPE, varchar(4)
	Subtype     string    // STYP, varchar(4)
	Sequence    int64     // SEQN, mediumint; written only when HasSequence
	HasSequence bool      //
	DateSent    time.Time // DTTM as a wall clock; zero writes NULL
}

// ErrBadRange means a probe range is empty or reversed.
var ErrBadRange = errors.New("mailbox: probe range with From > To")

// ReadAfter returns up to limit rows with CMINMSGS_ID > after, in id order. It sees only
// committed rows: an id allocated by a transaction that has not committed yet is simply absent.
func (m *Mailbox) ReadAfter(ctx context.Context, after int64, limit int) ([]Message, error) {
	rows, err := m.db.QueryContext(ctx, readAfterSQL, after, limit)
	if err != nil {
		return nil, fmt.Errorf("read mailbox after %d: %w", after, err)
	}
	return scanMessages(rows, limit)
}

// Probe returns up to limit existing rows whose ids fall in any of ranges, in id order.
func (m *Mailbox) Probe(ctx context.Context, ranges []IDRange, limit int) ([]Message, error) {
	if len(ranges) == 0 {
		return nil, nil
	}
	args := make([]any, 0, 2*len(ranges)+1)
	for _, r := range ranges {
		if r.From > r.To {
			return nil, fmt.Errorf("%w: [%d, %d]", ErrBadRange, r.From, r.To)
		}
		args = append(args, r.From, r.To)
	}
	args = append(args, limit)
	rows, err := m.db.QueryContext(ctx, probeSQL(len(ranges)), args...)
	if err != nil {
		return nil, fmt.Errorf("probe mailbox ids: %w", err)
	}
	return scanMessages(rows, limit)
}

func scanMessages(rows *sql.Rows, capacity int) ([]Message, error) {
	defer rows.Close()
	out := make([]Message, 0, min(capacity, 1024))
	for rows.Next() {
		var (
			msg      Message
			received sql.NullTime
		)
		if err := rows.Scan(&msg.ID, &msg.Text, &received); err != nil {
			return nil, fmt.Errorf("scan mailbox row: %w", err)
		}
		if received.Valid {
			msg.ReceivedAt = received.Time
		}
		out = append(out, msg)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read mailbox rows: %w", err)
	}
	return out, nil
}

// Insert adds msg to cminmsgs with STATUS 'VALID' and returns its CMINMSGS_ID.
func (m *Mailbox) Insert(ctx context.Context, msg NewMessage) (int64, error) {
	s := msg.Subsystem
	res, err := m.db.ExecContext(ctx, insertSQL,
		msg.Text, wallClock(msg.Received), nullString(s.Name), nullSequence(s),
		wallClock(s.DateSent), nullString(s.Subtype), nullString(s.Type), statusValid)
	if err != nil {
		return 0, fmt.Errorf("insert into mailbox: %w", err)
	}
	id, err := res.LastInsertId()
	if err != nil {
		return 0, fmt.Errorf("insert into mailbox: read the new id: %w", err)
	}
	return id, nil
}

// wallClock turns t into a DATETIME parameter holding t's own wall clock. The driver writes a
// time.Time in its connection location (UTC), so the wall clock is re-based onto UTC first.
func wallClock(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return clock.WallClock(t, nil)
}

func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func nullSequence(s Subsystem) any {
	if !s.HasSequence {
		return nil
	}
	return s.Sequence
}
