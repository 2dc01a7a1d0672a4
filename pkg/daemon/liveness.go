package daemon

import (
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/msgx/msgx/pkg/clock"
)

// Liveness is the heartbeat of the leader's stage loops, behind /healthz: every loop ticks once
// per iteration (leader.Lease.Tick), and Check fails when a running loop has not ticked for the
// stall threshold (MSGX_LIVENESS_STALL) — a hung loop, which the kubelet then restarts. A loop
// that ended (leader.Lease.Stopped; all of them when the term ends) is not expected to tick:
// the dispatcher waiting for a broker between its Kafka terms, or a standby, is alive. Waiting
// on a dependency is not a hang, and a restart would not fix it.
type Liveness struct {
	clock clock.Clock
	stall time.Duration

	mu    sync.Mutex
	term  bool
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
	l.term, l.beats = true, map[string]time.Time{}
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

// Quit records that the named loop ended.
func (l *Liveness) Quit(loop string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.beats, loop)
}

// Check is nil while every running loop of the term ticked within the threshold.
func (l *Liveness) Check() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.term {
		return nil
	}
	now := l.clock.Now()
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
