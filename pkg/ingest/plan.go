package ingest

import (
	"fmt"
	"time"

	"github.com/msgx/msgx/pkg/mailbox"
)

// cursor is the persisted watermark state (inbox_cursor).
type cursor struct {
	W         int64     // every id ≤ W is enqueued or recorded as skipped
	GapStart  int64     // W+1 while a gap holds W, else 0
	FirstSeen time.Time // when the gap at GapStart was first seen (zero without a gap)
}

func (c cursor) equal(o cursor) bool {
	return c.W == o.W && c.GapStart == o.GapStart && c.FirstSeen.Equal(o.FirstSeen)
}

// decision is what one step commits in one PostgreSQL transaction.
type decision struct {
	enqueue []mailbox.Message // the contiguous run after W (after any skip), in id order
	// skipFrom..skipTo are the missing ids skipped as a permanent gap; skipTo < skipFrom: none.
	skipFrom, skipTo int64
	// skippedSince is when the skipped gap was first seen.
	skippedSince time.Time
	next         cursor
	// blocked is the number of missing ids holding W after the step (0: no gap).
	blocked int64
}

func (d decision) skipped() int64 { return max(0, d.skipTo-d.skipFrom+1) }

// changes reports whether the step has anything to write.
func (d decision) changes(cur cursor) bool {
	return len(d.enqueue) > 0 || d.skipped() > 0 || !d.next.equal(cur)
}

// plan decides one step from the cursor and the rows read after W (id order, all > W). It is the
// whole watermark and gap rule of doc.go, free of I/O.
func plan(cur cursor, rows []mailbox.Message, now time.Time, maxDelay time.Duration, maxSkip int64) (decision, error) {
	prev := cur.W
	for _, r := range rows {
		if r.ID <= prev {
			return decision{}, fmt.Errorf("mailbox rows out of order or not after the watermark: %d after %d (W=%d)", r.ID, prev, cur.W)
		}
		prev = r.ID
	}
	d := decision{skipFrom: 1, skipTo: 0}
	w := cur.W
	if len(rows) == 0 {
		// Nothing visible above W: no gap can be seen (a gap is a missing id below a visible one).
		d.next = cursor{W: w}
		return d, nil
	}
	if first := rows[0].ID; first > w+1 {
		// A gap [W+1, first-1] holds W. It keeps its first-seen time while it stays the same gap.
		seen := now
		if cur.GapStart == w+1 && !cur.FirstSeen.IsZero() {
			seen = cur.FirstSeen
		}
		if now.Sub(seen) < maxDelay {
			d.next = cursor{W: w, GapStart: w + 1, FirstSeen: seen}
			d.blocked = first - 1 - w
			return d, nil
		}
		// Judged permanent: skip exactly the missing ids, never the existing row at first.
		to := first - 1
		if to-w > maxSkip {
			to = w + maxSkip
			d.skipFrom, d.skipTo, d.skippedSince = w+1, to, seen
			// The rest of the same aged gap: every id below first was allocated before the gap
			// was first seen, so it keeps the window that already ran out.
			d.next = cursor{W: to, GapStart: to + 1, FirstSeen: seen}
			d.blocked = first - 1 - to
			return d, nil
		}
		d.skipFrom, d.skipTo, d.skippedSince = w+1, to, seen
		w = to
	}
	i := 0
	for i < len(rows) && rows[i].ID == w+1 {
		w++
		i++
	}
	d.enqueue = rows[:i]
	if i < len(rows) {
		// A new gap right after the run: it gets its own full window from now.
		d.next = cursor{W: w, GapStart: w + 1, FirstSeen: now}
		d.blocked = rows[i].ID - 1 - w
		return d, nil
	}
	d.next = cursor{W: w}
	return d, nil
}
