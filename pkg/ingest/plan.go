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
	// Horizon is the highest id visible when the gap was first seen (0 without a gap): with
	// FirstSeen it is the observation a restarted ingester starts from.
	Horizon int64
}

func (c cursor) equal(o cursor) bool {
	return c.W == o.W && c.GapStart == o.GapStart && c.FirstSeen.Equal(o.FirstSeen) && c.Horizon == o.Horizon
}

// observation records that at time at the highest visible mailbox id was maxID. Ids are
// allocated in increasing order, so every id below maxID was allocated by then: an id still
// missing has been missing since at least at. Observations are kept in increasing maxID order.
type observation struct {
	maxID int64
	at    time.Time
}

// observations is the history a step plans with: when each missing id was first seen missing.
type observations []observation

// add records the rows visible now (rows in id order).
func (o observations) add(rows []mailbox.Message, now time.Time) observations {
	if len(rows) == 0 {
		return o
	}
	if m := rows[len(rows)-1].ID; len(o) == 0 || m > o[len(o)-1].maxID {
		o = append(o, observation{maxID: m, at: now})
	}
	return o
}

// firstSeen is when id was first seen missing, and the horizon of that observation.
func (o observations) firstSeen(id int64, now time.Time) (time.Time, int64) {
	for _, ob := range o {
		if ob.maxID > id {
			return ob.at, ob.maxID
		}
	}
	return now, id + 1
}

// agedBelow is the highest id h such that every missing id below h has been missing for at
// least maxDelay (0: none).
func (o observations) agedBelow(now time.Time, maxDelay time.Duration) int64 {
	var h int64
	for _, ob := range o {
		if now.Sub(ob.at) >= maxDelay {
			h = max(h, ob.maxID)
		}
	}
	return h
}

// prune drops the observations that can no longer name a missing id above w.
func (o observations) prune(w int64) observations {
	i := 0
	for i < len(o) && o[i].maxID <= w+1 {
		i++
	}
	return append(o[:0], o[i:]...)
}

// skip is a range of missing ids judged permanent.
type skip struct {
	from, to int64
	since    time.Time // when the gap was first seen
	by       passedBy  // how they were judged permanent
}

// passedBy is how a missing id was judged permanent (inbox_gap.passed_by).
type passedBy string

const (
	passedAged   passedBy = "aged"   // missing for MSGX_MAX_COMMIT_DELAY
	passedProved passedBy = "proved" // no open transaction could still commit it (proof.go)
)

// decision is what one step commits in one PostgreSQL transaction.
type decision struct {
	enqueue []mailbox.Message // the contiguous rows after W (around the skipped ids), in id order
	skips   []skip            // missing ids skipped as permanent gaps, in id order
	next    cursor
	// blocked is the number of missing ids holding W after the step (0: no gap).
	blocked int64
}

// changes reports whether the step has anything to write.
func (d decision) changes(cur cursor) bool {
	return len(d.enqueue) > 0 || len(d.skips) > 0 || !d.next.equal(cur)
}

// plan decides one step from the cursor, the rows read after W (id order, all > W) and the
// observations (including this step's). It is the whole watermark and gap rule of doc.go, free
// of I/O: every missing id gets its own full max-commit-delay window, counted from when it was
// first seen missing (a higher id visible); W skips exactly the missing ids whose window ran out
// and never an existing row. A gap that appears after an older one filled is first seen then,
// so it gets a full window of its own. Missing ids below proved (0: none), proved permanent by a
// read of the transaction list before rows were read (proof.go), are skipped without waiting.
func plan(cur cursor, rows []mailbox.Message, obs observations, now time.Time, maxDelay time.Duration, maxSkip, proved int64) (decision, error) {
	prev := cur.W
	for _, r := range rows {
		if r.ID <= prev {
			return decision{}, fmt.Errorf("mailbox rows out of order or not after the watermark: %d after %d (W=%d)", r.ID, prev, cur.W)
		}
		prev = r.ID
	}
	var d decision
	w := cur.W
	aged := obs.agedBelow(now, maxDelay)
	budget := maxSkip
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
		// Judged permanent: the missing ids whose window ran out, then those proved, never the
		// existing row at first.
		for _, limit := range []struct {
			below int64
			by    passedBy
		}{{aged, passedAged}, {proved, passedProved}} {
			if to := min(first-1, limit.below-1, w+budget); to > w {
				since, _ := obs.firstSeen(w+1, now)
				d.skips = append(d.skips, skip{from: w + 1, to: to, since: since, by: limit.by})
				budget -= to - w
				w = to
			}
		}
		if w < first-1 {
			seen, horizon := obs.firstSeen(w+1, now)
			d.next = cursor{W: w, GapStart: w + 1, FirstSeen: seen, Horizon: horizon}
			d.blocked = first - 1 - w
			return d, nil
		}
	}
}
