package obs

import "time"

// RepeatEvery is how often a warning that repeats while one fault lasts is logged again.
const RepeatEvery = 30 * time.Second

// Repeats thins a warning that a retry loop would log at every try while a fault lasts (a
// database that does not answer): the first occurrence is logged, then at most one line per
// Every, each saying how many occurrences it stands for. One per loop; not safe for concurrent use.
type Repeats struct {
	Every time.Duration
	last  time.Time
	held  int
}

// Due records an occurrence at now and reports whether to log it, with the number of
// occurrences the line stands for (this one and those held back since the last line).
func (r *Repeats) Due(now time.Time) (int, bool) {
	r.held++
	if !r.last.IsZero() && now.Sub(r.last) < r.Every {
		return 0, false
	}
	n := r.held
	r.last, r.held = now, 0
	return n, true
}

// Reset ends the fault: the next occurrence is logged at once.
func (r *Repeats) Reset() { r.last, r.held = time.Time{}, 0 }
