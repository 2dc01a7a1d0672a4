// Package clock is the injected source of time for every stage: production uses the system
// clock; tests use a Fake they move by hand, so backoff, deadlines, gap ageing and schedules are
// tested without sleeping. SQL never calls now(): statements take the time as a parameter.
package clock

import (
	"context"
	"sync"
	"time"
)

// Clock tells the time.
type Clock interface {
	Now() time.Time
}

// System is the real clock.
type System struct{}

// Now returns time.Now().
func (System) Now() time.Time { return time.Now() }

// Fake is a manually advanced clock, safe for concurrent use.
type Fake struct {
	mu       sync.Mutex
	now      time.Time
	changed  chan struct{} // closed and replaced whenever the time moves (Sleep waits on it)
	sleeping int           // Sleeps blocked on changed
}

// NewFake returns a Fake set to t.
func NewFake(t time.Time) *Fake { return &Fake{now: t} }

// Now returns the fake time.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// Advance moves the fake time forward by d.
func (f *Fake) Advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = f.now.Add(d)
	f.moved()
}

// Set moves the fake time to t.
func (f *Fake) Set(t time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = t
	f.moved()
}

// Waiting reports whether a Sleep is blocked until the time moves (registered since it last
// moved), so that a test can move it once per turn of the loop it drives.
func (f *Fake) Waiting() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.sleeping > 0
}

// AdvanceWhileWaiting moves the time on by step whenever a Sleep waits on it, until done is
// closed, so that code waiting on the clock (bounded waits, backoffs) runs to its end; it reports
// false when done was not closed within limit of wall time.
func (f *Fake) AdvanceWhileWaiting(done <-chan struct{}, step, limit time.Duration) bool {
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return true
		case <-deadline.C:
			return false
		case <-tick.C:
		}
		if f.Waiting() {
			f.Advance(step)
		}
	}
}

// moved wakes the sleepers; f.mu is held.
func (f *Fake) moved() {
	if f.changed != nil {
		close(f.changed)
		f.changed = nil
	}
	f.sleeping = 0
}

// block returns a channel closed when the time next moves, or nil when until has come; a
// returned channel counts as a sleeper (Waiting) until the time moves or unblock.
func (f *Fake) block(until time.Time) chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.now.Before(until) {
		return nil
	}
	if f.changed == nil {
		f.changed = make(chan struct{})
	}
	f.sleeping++
	return f.changed
}

// unblock forgets a sleeper that stopped waiting on ch before the time moved.
func (f *Fake) unblock(ch chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.changed == ch {
		f.sleeping--
	}
}

// WallSleep waits d of wall time or until ctx ends; it reports whether d passed. Loops that are
// paced by real time (lock retries, polls, backoffs) use it.
func WallSleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// Sleep waits until d has passed on clk or ctx ends; it reports whether d passed. On a Fake it
// returns once the fake time has been moved d past the call (tests move it; nothing sleeps).
func Sleep(ctx context.Context, clk Clock, d time.Duration) bool {
	f, ok := clk.(*Fake)
	if !ok {
		return WallSleep(ctx, d)
	}
	until := f.Now().Add(d)
	for {
		ch := f.block(until)
		if ch == nil {
			return true
		}
		select {
		case <-ctx.Done():
			f.unblock(ch)
			return false
		case <-ch:
		}
	}
}

// WallClock is t read on the wall clock of loc (nil: t's own location), to the second, labelled
// UTC: the form in which the mailbox's zone-less DATETIME columns hold times and the one way msgx
// turns an instant into such a value.
func WallClock(t time.Time, loc *time.Location) time.Time {
	if loc != nil {
		t = t.In(loc)
	}
	return time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), 0, time.UTC)
}

// WallDay is the day of t on the wall clock of loc, as midnight labelled UTC.
func WallDay(t time.Time, loc *time.Location) time.Time {
	w := WallClock(t, loc)
	return time.Date(w.Year(), w.Month(), w.Day(), 0, 0, 0, 0, time.UTC)
}
