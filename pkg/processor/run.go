package processor

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/msgx/msgx/pkg/backoff"
	"github.com/msgx/msgx/pkg/clock"
	"github.com/msgx/msgx/pkg/leader"
	"github.com/msgx/msgx/pkg/wake"
)

// Run drains the head until ctx ends. It returns leader.ErrFenced when a newer leader took over,
// and steps down (leader.ErrStepDown) when PostgreSQL refuses it a privilege once no attempt of
// its own is left open (its end recorded: another process would read an open one as a death);
// other errors are logged and retried after a pause (the failure is recorded on the message
// where it can be).
func (p *Engine) Run(ctx context.Context, lease leader.Lease) error {
	ctx, cancel := context.WithCancel(ctx) // a return before ctx ends stops the listener too
	defer cancel()
	defer p.WaitMarkers()
	defer p.dropAhead()
	p.log.Info().Int("batch", p.cfg.Batch).Bool("read_ahead", p.cfg.ReadAhead).Msg("pump: draining the head")
	if !p.cfg.Shadow {
		p.cfg.Standbys.Check(ctx, p.pool, p.log)
	}
	inbox := wake.Listen(ctx, p.pool.Config().ConnConfig, wake.Inbox, p.log)
	gctx, stopGauges := context.WithCancel(ctx)
	var gauges sync.WaitGroup
	gauges.Go(func() { p.gaugeLoop(gctx, lease) })
	defer gauges.Wait()
	defer stopGauges()
	pause := p.cfg.BackoffBase
	for {
		lease.Tick("pump")
		res, err := p.Step(ctx, lease)
		if ctx.Err() != nil {
			return nil
		}
		if errors.Is(err, leader.ErrFenced) {
			return err
		}
		var wait time.Duration
		switch {
		case err != nil:
			p.log.Error().Err(err).Dur("retry_in", pause).Msg("pump: step failed")
			wait, pause = pause, backoff.Next(pause, p.cfg.BackoffBase, p.cfg.BackoffMax)
			// A refusal (refused: the server answers, a quick retry changes nothing): the whole pause. A wake-up
			// (messages arriving) would not change the answer, and the head would be retried,
			// and each refusal recorded in its history, at the rate messages arrive. After any
			// other error (the database lost, read-only after a failover) a wake-up may say it
			// is back.
			if refused(err) {
				if leader.Refused(err) && p.ownMark == 0 {
					return fmt.Errorf("%w: %w", leader.ErrStepDown, err)
				}
				if !clock.Sleep(ctx, p.clock, wait) {
					return nil
				}
				continue
			}
		case res.Idle:
			wait, pause = p.cfg.IdlePoll, p.cfg.BackoffBase
		case !res.WaitUntil.IsZero():
			wait, pause = min(res.WaitUntil.Sub(p.clock.Now()), p.cfg.IdlePoll), p.cfg.BackoffBase
		case !res.More && !res.Failed:
			// The batch took the whole head run: what was ingested since comes with a wake-up
			// (kept while this batch ran), so no head read is spent finding nothing.
			wait, pause = p.cfg.IdlePoll, p.cfg.BackoffBase
		default:
			pause = p.cfg.BackoffBase
			continue
		}
		if wait > 0 && !inbox.Wait(ctx, wait) {
			return nil
		}
	}
}
