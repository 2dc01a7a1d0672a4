// Package backoff is the one retry delay rule of msgx, shared by the processor (proc_state), the
// dispatcher's outbox (msg_event) and the jobs stage's marker backfill: after the n-th failed
// attempt, wait base·2^(n-1), capped at max.
package backoff

import "time"

// Delay is the wait after the n-th failed attempt (n ≥ 1): base·2^(n-1), capped at maxDelay.
func Delay(n int, base, maxDelay time.Duration) time.Duration {
	d := base
	for i := 1; i < n && d < maxDelay; i++ {
		d *= 2
	}
	return min(d, maxDelay)
}
