package dispatch

import (
	"context"
	"os"
	"sync"
	"time"

	"github.com/msgx/msgx/pkg/kafka"
)

// send sends recs, tracking the send for the unacknowledged-age gauge and warning each
// SendWarn while it waits.
func (d *Dispatcher) send(ctx context.Context, target string, recs []kafka.Record) []error {
	held := d.hold(ctx, target, len(recs))
	if held {
		// The held batch goes out even if the lease loss was noticed meanwhile: the hook stands
		// for a send already on its way when the process was paused, the case Kafka must fence.
		ctx = context.WithoutCancel(ctx)
	}
	d.mu.Lock()
	d.nextSend++
	id := d.nextSend
	d.inflight[id] = d.clock.Now()
	d.mu.Unlock()
	defer func() {
		d.mu.Lock()
		delete(d.inflight, id)
		d.mu.Unlock()
	}()
	start := time.Now()
	var warn *time.Timer
	var wmu sync.Mutex
	var arm func()
	arm = func() {
		wmu.Lock()
		defer wmu.Unlock()
		warn = time.AfterFunc(d.cfg.SendWarn, func() {
			d.log.Warn().Str("target", target).Int("records", len(recs)).Dur("waiting", time.Since(start).Round(time.Millisecond)).
				Msg("kafka send blocked: the broker has not answered")
			arm()
		})
	}
	arm()
	errs := d.sender.Send(ctx, recs)
	if held {
		ev := d.log.Warn().Str("target", target).Int("records", len(recs))
		for _, err := range errs {
			if err != nil {
				ev = ev.AnErr("answer", err)
				break
			}
		}
		ev.Msg("dev hold: the held send was answered")
	}
	wmu.Lock()
	warn.Stop()
	wmu.Unlock()
	return errs
}

// holdPoll is how often a held send looks at its hold file.
const holdPoll = 20 * time.Millisecond

// hold is the HoldFile test hook: while the file exists it waits (ctx ending releases it too),
// then the send goes on whatever the reason, as a paused process that resumes would. It reports
// whether it held.
func (d *Dispatcher) hold(ctx context.Context, target string, records int) bool {
	if d.cfg.HoldFile == "" {
		return false
	}
	if _, err := os.Stat(d.cfg.HoldFile); err != nil {
		return false
	}
	d.log.Warn().Str("target", target).Int("records", records).Str("hold_file", d.cfg.HoldFile).Msg("dev hold: send held")
	t := time.NewTicker(holdPoll)
	defer t.Stop()
	reason := "hold file removed"
	for {
		if _, err := os.Stat(d.cfg.HoldFile); err != nil {
			break
		}
		select {
		case <-ctx.Done():
			reason = "context ended"
		case <-t.C:
			continue
		}
		break
	}
	d.log.Warn().Str("target", target).Int("records", records).Str("reason", reason).Msg("dev hold: released; sending")
	return true
}
