package chaos

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/msgx/msgx/pkg/dev/stack"
)

// Kill sends SIGKILL to the binary of key and waits (bounded) until the supervisor has it
// serving again; it returns how long that took.
func (r *Run) Kill(ctx context.Context, key string) (time.Duration, error) {
	p := r.Stack.Proc(key)
	if p == nil {
		return 0, fmt.Errorf("%s is not running", key)
	}
	r.mu.Lock()
	r.killed[key]++
	r.mu.Unlock()
	at := time.Now()
	if err := p.Signal(syscall.SIGKILL); err != nil {
		return 0, fmt.Errorf("kill %s: %w", key, err)
	}
	<-p.Done()
	return r.waitServing(ctx, key, p, at)
}

// waitServing waits until a process other than old serves as key.
func (r *Run) waitServing(ctx context.Context, key string, old *stack.Proc, since time.Time) (time.Duration, error) {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if np := r.Stack.Proc(key); np != nil && np != old {
			return time.Since(since), nil
		}
		if time.Now().After(deadline) {
			return time.Since(since), fmt.Errorf("%s not restarted within 2m", key)
		}
		if err := Sleep(ctx, 50*time.Millisecond); err != nil {
			return 0, err
		}
	}
}

// Leader returns the key of the process holding role's leader lock (its holder is host:pid).
func (r *Run) Leader(ctx context.Context, role string) (string, *stack.Proc, error) {
	var holder string
	if err := r.Pool.QueryRow(ctx, `SELECT holder FROM leader_lease WHERE role = $1`, role).Scan(&holder); err != nil {
		return "", nil, fmt.Errorf("read %s's leader: %w", role, err)
	}
	pid, err := strconv.Atoi(holder[strings.LastIndexByte(holder, ':')+1:])
	if err != nil {
		return "", nil, fmt.Errorf("holder %q: %w", holder, err)
	}
	for key, p := range r.Stack.Procs() {
		if p.Pid() == pid {
			return key, p, nil
		}
	}
	return "", nil, fmt.Errorf("%s's leader %s is none of the stack's processes", role, holder)
}

// waitLeaderOtherThan waits (bounded) until role's leader is a process other than pid.
func (r *Run) waitLeaderOtherThan(ctx context.Context, role string, pid int, since time.Time) (time.Duration, error) {
	deadline := time.Now().Add(time.Minute)
	for {
		if _, p, err := r.Leader(ctx, role); err == nil && p.Pid() != pid {
			return time.Since(since), nil
		}
		if time.Now().After(deadline) {
			return time.Since(since), fmt.Errorf("no other %s leader within 1m", role)
		}
		if err := Sleep(ctx, 50*time.Millisecond); err != nil {
			return 0, err
		}
	}
}

// randomMoment waits a random moment within the next d.
func (r *Run) randomMoment(ctx context.Context, d time.Duration) error {
	return Sleep(ctx, time.Duration(r.Rand.Int64N(int64(d))))
}
