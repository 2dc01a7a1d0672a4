// Package backoff is the one retry delay rule of msgx: each wait doubles the one before, from a
// base up to a cap. Delay gives the wait after the n-th failed attempt, for retries scheduled in
// the database (the processor's proc_state, the dispatcher's outbox, the jobs stage's marker
// backfill); Next gives the wait after the previous one, for loops that keep it in a variable
// (the processor's and the dispatcher's run loops, the Kafka link, the wake-up listener).
package backoff

import "time"

// Delay is the wait after the n-th failed attempt (n ≥ 1; below 1 counts as 1): base·2^(n-1),
// capped at maxDelay.
func Delay(n int, base, maxDelay time.Duration) time.Duration {
	d := Next(0, base, maxDelay)
	for i := 1; i < n && d < maxDelay; i++ {
		d = Next(d, base, maxDelay)
	}
	return d
}

// Next is the wait after a failure that followed a wait of last (0: the first failure): twice
// last, at least base, capped at maxDelay.
func Next(last, base, maxDelay time.Duration) time.Duration {
	return min(max(2*last, base), maxDelay)
}
