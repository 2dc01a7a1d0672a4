package processor

import (
	"context"
	"errors"

	"github.com/msgx/msgx/pkg/procstate"
)

// errHeadMoved: a head read ahead is no longer the head (markStarted found an open row below it).
var errHeadMoved = errors.New("the head moved while it was read ahead")

// lookahead is the next batch's head run, read and decoded while the batch before it commits, so
// that the database's commit and the processor's decoding overlap. It is the run after the batch
// in flight (the open rows above its last msg_id), as the head read would find it once that
// batch committed with every message terminal; it is read only behind a batch of more than one
// message (never beside a message alone, as in careful mode), used only when its head is an
// untouched PENDING row, and markStarted checks in the same statement that no open row appeared
// below it (a late row, a replay): otherwise the head is read again.
type lookahead struct {
	done chan struct{}
	rows []headRow
	work []work // rows decoded (prepare)
	more bool
	err  error
}

// readAhead starts reading and decoding the run after msg_id after (at most a batch).
func (p *Engine) readAhead(ctx context.Context, after int64) *lookahead {
	a := &lookahead{done: make(chan struct{})}
	go func() {
		defer close(a.done)
		if a.rows, a.more, a.err = p.loadRun(ctx, p.cfg.Batch, after); a.err != nil {
			return
		}
		a.work = make([]work, len(a.rows))
		for i, r := range a.rows {
			a.work[i] = p.prepare(r)
		}
	}()
	return a
}

// wait waits until a is read (a nil a: nothing to wait for).
func (a *lookahead) wait() {
	if a != nil {
		<-a.done
	}
}

// takeAhead returns the run read ahead when it can stand for the head read (see lookahead), and
// drops it either way.
func (p *Engine) takeAhead() *lookahead {
	a := p.ahead
	p.ahead = nil
	if a == nil {
		return nil
	}
	a.wait()
	if a.err != nil || len(a.rows) == 0 ||
		a.rows[0].status != procstate.StatusPending || a.rows[0].startedAt != nil || a.rows[0].through != nil {
		p.drop(a)
		return nil
	}
	return a
}

// dropAhead waits for a read ahead in flight and drops it.
func (p *Engine) dropAhead() {
	p.drop(p.ahead)
	p.ahead = nil
}

// drop waits for a (nil: none) and counts it dropped.
func (p *Engine) drop(a *lookahead) {
	if a != nil {
		a.wait()
		p.metrics.readAhead.WithLabelValues("dropped").Inc()
	}
}
