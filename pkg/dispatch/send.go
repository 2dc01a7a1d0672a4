package dispatch

import (
	"context"
	"os"
	"time"

	"github.com/msgx/msgx/pkg/clock"
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
	start := d.clock.Now()
	d.mu.Lock()
	d.nextSend++
	id := d.nextSend
	d.inflight[id] = start
	d.mu.Unlock()
	defer func() {
		d.mu.Lock()
		delete(d.inflight, id)
		d.mu.Unlock()
	}()
	stopWarning := d.warnWhileBlocked(target, len(recs), start)
	errs := d.sender.Send(ctx, recs)
	stopWarning()
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
	return errs
}

// warnWhileBlocked logs a warning each time SendWarn passes on the dispatcher's clock until the
// returned stop is called. The loop belongs to the send: stop returns only once it has ended,
// so no warning can follow the send.
func (d *Dispatcher) warnWhileBlocked(target string, records int, start time.Time) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		for clock.Sleep(ctx, d.clock, d.cfg.SendWarn) && ctx.Err() == nil {
			d.log.Warn().Str("target", target).Int("records", records).
				Dur("waiting", d.clock.Now().Sub(start).Round(time.Millisecond)).
				Msg("kafka send blocked: the broker has not answered")
		}
	}()
	return func() {
		cancel()
		<-ended
	}
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
