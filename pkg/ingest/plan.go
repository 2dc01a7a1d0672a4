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
	// Horizon is the highest id visible when the gap was first seen: a missing id below it was
	// allocated before FirstSeen, so it shares that window (0 without a gap).
	Horizon int64
}

func (c cursor) equal(o cursor) bool {
	return c.W == o.W && c.GapStart == o.GapStart && c.FirstSeen.Equal(o.FirstSeen) && c.Horizon == o.Horizon
}

// skip is a range of missing ids judged permanent.
type skip struct {
	from, to int64
	since    time.Time // when the gap was first seen
}

// decision is what one step commits in one PostgreSQL transaction.
type decision struct {
	enqueue []mailbox.Message // the contiguous rows after W (around the skipped ids), in id order
	skips   []skip            // missing ids skipped as permanent gaps, in id order
	next    cursor
	// blocked is the number of missing ids holding W after the step (0: no gap).
	blocked int64
}

func (d decision) skipped() int64 {
	var n int64
	for _, s := range d.skips {
		n += s.to - s.from + 1
	}
	return n
}

// changes reports whether the step has anything to write.
func (d decision) changes(cur cursor) bool {
	return len(d.enqueue) > 0 || len(d.skips) > 0 || !d.next.equal(cur)
}

// plan decides one step from the cursor and the rows read after W (id order, all > W). It is the
// whole watermark and gap rule of doc.go, free of I/O.
//
// A gap's window starts when it is first seen. Ids are allocated in increasing order, so every
// missing id below the highest id visible at that moment (the horizon) was allocated before it:
// when a window runs out, the missing ids up to the horizon are skipped together, and only a gap
// above the horizon gets a new full window. A gap that fills in time ends its window: the next
// gap then gets a full window of its own, even below the horizon (SPEC §4).
func plan(cur cursor, rows []mailbox.Message, now time.Time, maxDelay time.Duration, maxSkip int64) (decision, error) {
	prev := cur.W
	for _, r := range rows {
		if r.ID <= prev {
			return decision{}, fmt.Errorf("mailbox rows out of order or not after the watermark: %d after %d (W=%d)", r.ID, prev, cur.W)
		}
		prev = r.ID
	}
	var d decision
	w := cur.W
	seen, horizon := time.Time{}, int64(0)
	if cur.GapStart == w+1 && !cur.FirstSeen.IsZero() {
		seen, horizon = cur.FirstSeen, max(cur.Horizon, w+1)
	}
	budget := maxSkip
	skipped := false // the window ran out in this step: gaps below its horizon share it
	i := 0
	for {
		start := i
		for i < len(rows) && rows[i].ID == w+1 {
			w++
			i++
		}
		d.enqueue = append(d.enqueue, rows[start:i]...)
		if i == len(rows) {
			// Nothing visible above W: no gap can be seen (a gap is a missing id below a visible one).
			d.next = cursor{W: w}
			return d, nil
		}
		first := rows[i].ID
		sameGap := w == cur.W && cur.GapStart == w+1
		if seen.IsZero() || (!sameGap && !skipped) || w+1 > horizon {
			// A gap not visible when the current window started: its own full window from now.
			seen, horizon = now, rows[len(rows)-1].ID
		}
		if now.Sub(seen) < maxDelay {
			d.next = cursor{W: w, GapStart: w + 1, FirstSeen: seen, Horizon: horizon}
			d.blocked = first - 1 - w
			return d, nil
		}
		// Judged permanent: skip exactly the missing ids, never the existing row at first.
		to := first - 1
		if to-w > budget {
			to = w + budget
		}
		if to > w {
			d.skips = append(d.skips, skip{from: w + 1, to: to, since: seen})
			budget -= to - w
			w = to
			skipped = true
		}
		if w < first-1 {
			// The rest of the same aged gap, beyond this step's skip budget.
			d.next = cursor{W: w, GapStart: w + 1, FirstSeen: seen, Horizon: max(horizon, first)}
			d.blocked = first - 1 - w
			return d, nil
		}
	}
}
