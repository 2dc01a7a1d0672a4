package daemon

import (
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/msgx/msgx/pkg/clock"
)

// Liveness is the heartbeat of the leader's stage loops, behind /healthz: every loop ticks once
// per iteration (leader.Lease.Tick), and Check fails when one of them has not ticked for the
// stall threshold (MSGX_LIVENESS_STALL) — a hung loop, which the kubelet then restarts — or when
// none has ticked that long since the term started. A standby runs no loop and is alive.
type Liveness struct {
	clock clock.Clock
	stall time.Duration

	mu    sync.Mutex
	term  bool
	start time.Time
	beats map[string]time.Time
}

// NewLiveness returns the heartbeat of one process; stall is the threshold.
func NewLiveness(clk clock.Clock, stall time.Duration) *Liveness {
	return &Liveness{clock: clk, stall: stall}
}

// begin starts a leadership term: no loop has ticked yet.
func (l *Liveness) begin() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.term, l.start, l.beats = true, l.clock.Now(), map[string]time.Time{}
}

// end ends the term: the loops are gone, and a standby is alive.
func (l *Liveness) end() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.term, l.beats = false, nil
}

// Beat records one iteration of the named loop (ignored outside a term).
func (l *Liveness) Beat(loop string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.term {
		l.beats[loop] = l.clock.Now()
	}
}

// Check is nil while every loop of the term ticked within the threshold.
func (l *Liveness) Check() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.term {
		return nil
	}
	now := l.clock.Now()
	if len(l.beats) == 0 {
		if age := now.Sub(l.start); age > l.stall {
			return fmt.Errorf("no stage loop has ticked in the %s since the leadership term started (MSGX_LIVENESS_STALL %s)", age, l.stall)
		}
		return nil
	}
	loops := make([]string, 0, len(l.beats))
	for loop := range l.beats {
		loops = append(loops, loop)
	}
	sort.Strings(loops)
	for _, loop := range loops {
		if age := now.Sub(l.beats[loop]); age > l.stall {
			return fmt.Errorf("stage loop %s has not ticked for %s (MSGX_LIVENESS_STALL %s)", loop, age, l.stall)
		}
	}
	return nil
}
