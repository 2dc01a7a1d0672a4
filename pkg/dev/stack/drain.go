package stack

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/msgx/msgx/pkg/status"
)

// Drained reports whether the pipeline has nothing left to do for mailbox ids up to maxID:
// ingest's watermark reached maxID, no message is PENDING or FAILED, no processed marker is owed
// to the mailbox and no outbox target has a PENDING event.
func Drained(s status.Snapshot, maxID int64) bool {
	if s.Watermark < maxID || s.ByStatus["PENDING"] > 0 || s.ByStatus["FAILED"] > 0 || s.MarkersOwed > 0 {
		return false
	}
	for _, t := range s.Outbox {
		if t.Pending > 0 {
			return false
		}
	}
	return true
}

// WaitDrained polls status every poll until Drained(maxID) has held for settle (the markers and
// the KAFKA:schd flush settle), ctx ends, or timeout passes; it returns the last snapshot. The
// error of a timeout describes where the pipeline stands.
func WaitDrained(ctx context.Context, pool *pgxpool.Pool, maxID int64, poll, settle, timeout time.Duration) (status.Snapshot, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(poll)
	defer tick.Stop()
	var since time.Time
	var last status.Snapshot
	for {
		s, err := status.Read(ctx, pool, time.Now())
		switch {
		case err == nil:
			last = s
			if !Drained(s, maxID) {
				since = time.Time{}
			} else if since.IsZero() {
				since = time.Now()
			}
			if !since.IsZero() && time.Since(since) >= settle {
				return s, nil
			}
		case ctx.Err() == nil:
			return last, fmt.Errorf("read status: %w", err)
		}
		select {
		case <-ctx.Done():
			return last, fmt.Errorf("not drained up to mailbox id %d within %s: watermark %d, by status %v, markers owed %d, outbox %s",
				maxID, timeout, last.Watermark, last.ByStatus, last.MarkersOwed, outboxText(last.Outbox))
		case <-tick.C:
		}
	}
}

func outboxText(ts []status.Target) string {
	out := "["
	for i, t := range ts {
		if i > 0 {
			out += " "
		}
		out += fmt.Sprintf("%s pending %d dead %d", t.Target, t.Pending, t.Dead)
	}
	return out + "]"
}
