package mailbox

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/msgx/msgx/pkg/mailbox/outbound"
)

// InsertOutbound writes msg to coutmsgs and returns its COUTMSGS_ID. The insert is its own
// (auto-committed) transaction: when it returns without error the row is there.
func (m *Mailbox) InsertOutbound(ctx context.Context, msg outbound.Message) (int64, error) {
	if msg.Inserted.IsZero() {
		return 0, errors.New("insert into coutmsgs: DATE_INSERTED required")
	}
	res, err := m.db.ExecContext(ctx, insertOutboundSQL, msg.Text, wallClock(msg.Inserted), msg.RoutingID)
	if err != nil {
		return 0, fmt.Errorf("insert into coutmsgs: %w", err)
	}
	id, err := res.LastInsertId()
	if err != nil {
		return 0, fmt.Errorf("insert into coutmsgs: read the new id: %w", err)
	}
	return id, nil
}

// FindOutbound returns the coutmsgs row holding exactly text with routingID, inserted at or after
// since (a wall clock, as InsertOutbound writes it); ok is false when there is none.
func (m *Mailbox) FindOutbound(ctx context.Context, routingID, text string, since time.Time) (outbound.Row, bool, error) {
	var row outbound.Row
	err := m.db.QueryRowContext(ctx, findOutboundSQL, routingID, wallClock(since), text).Scan(&row.ID, &row.Inserted)
	if errors.Is(err, sql.ErrNoRows) {
		return outbound.Row{}, false, nil
	}
	if err != nil {
		return outbound.Row{}, false, fmt.Errorf("look up coutmsgs: %w", err)
	}
	return row, true, nil
}

// OutboundSent returns COUTMSGS_DATE_SENT (a wall clock, read as UTC fields) of those of ids the
// AODB's transport has sent; rows not sent yet or missing are absent from the map.
func (m *Mailbox) OutboundSent(ctx context.Context, ids []int64) (map[int64]time.Time, error) {
	out := make(map[int64]time.Time, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	rows, err := m.db.QueryContext(ctx, outboundSentSQL(len(ids)), args...)
	if err != nil {
		return nil, fmt.Errorf("read coutmsgs DATE_SENT: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var at time.Time
		if err := rows.Scan(&id, &at); err != nil {
			return nil, fmt.Errorf("scan coutmsgs row: %w", err)
		}
		out[id] = at
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read coutmsgs rows: %w", err)
	}
	return out, nil
}

// RecentOutbound returns the coutmsgs rows of routingID inserted at or after since (a wall clock,
// as InsertOutbound writes it), in id order.
func (m *Mailbox) RecentOutbound(ctx context.Context, routingID string, since time.Time) ([]outbound.Listed, error) {
	rows, err := m.db.QueryContext(ctx, recentOutboundSQL, routingID, wallClock(since))
	if err != nil {
		return nil, fmt.Errorf("read recent coutmsgs rows: %w", err)
	}
	defer rows.Close()
	var out []outbound.Listed
	for rows.Next() {
		var r outbound.Listed
		if err := rows.Scan(&r.ID, &r.Inserted, &r.Text); err != nil {
			return nil, fmt.Errorf("scan coutmsgs row: %w", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read recent coutmsgs rows: %w", err)
	}
	return out, nil
}
