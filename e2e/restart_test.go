package e2e_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/dev/simulate"
	"github.com/msgx/msgx/pkg/status"
)

// TestRestartOneStage: during a steady feed the dispatcher is stopped (SIGTERM) for
// a while and started again. Ingest and the processor never pause (their watermark and
// processed count grow at every one-second sample while the dispatcher is down), the outbox
// backlog drains afterwards, and msgx.flight.changes holds, per FLID and once duplicates by
// (flid, state_version) are dropped, every version from 1 to the stored one, in order.
func TestRestartOneStage(t *testing.T) {
	t.Parallel()
	const (
		rate     = 50.0             // messages per second
		feed     = 45 * time.Second // length of the feed
		stopAt   = 8 * time.Second  // dispatcher stopped this long after the feed started …
		stopFor  = 30 * time.Second // … for this long
		sampling = time.Second
	)
	b := setup(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel) // ends the feed before the stack stops if the test fails early

	cfg := simulate.DefaultConfig()
	cfg.Seed, cfg.Flights, cfg.Additions = 5, 260, 2
	cfg.Date = airportToday(t)
	day := simulate.Generate(cfg)
	msgs := day.Messages[:min(len(day.Messages), int(rate*feed.Seconds()))]
	require.Greater(t, len(msgs), int(rate*(stopAt+stopFor).Seconds()), "the feed must outlast the stop")

	type result struct {
		w   simulate.Written
		err error
	}
	written := make(chan result, 1)
	start := time.Now()
	go func() {
		db, err := simulate.OpenMailbox(b.mailbox.DSN)
		if err != nil {
			written <- result{err: err}
			return
		}
		defer db.Close()
		w, err := simulate.NewWriter(db, simulate.WriterConfig{Conns: 4, Pace: simulate.PaceSteady, Rate: rate, HoldShare: 0.02, Seed: cfg.Seed})
		if err != nil {
			written <- result{err: err}
			return
		}
		wr, err := w.Write(ctx, msgs)
		written <- result{wr, err}
	}()

	select {
	case <-time.After(time.Until(start.Add(stopAt))):
	case r := <-written:
		require.FailNow(t, "the feed ended before the stop", "%v", r.err)
	}
	require.NoError(t, b.stack.StopProc("dispatcher"), "graceful stop of the dispatcher (log %s)", b.logPath("dispatcher"))
	stopped := time.Now()
	// What the dispatcher sent before it stopped may still be on its way to the consumer: the
	// count at the stop is taken once every record marked SENT has arrived.
	var sentAtStop int
	require.NoError(t, b.pg.Pool.QueryRow(ctx, `SELECT count(*) FROM msg_event_delivery WHERE target = 'KAFKA:msg' AND status = 'SENT'`).Scan(&sentAtStop))
	require.Eventually(t, func() bool { return b.consumer.Count(topicChanges) >= sentAtStop }, 30*time.Second, 50*time.Millisecond,
		"the records sent before the stop reach the consumer")
	deliveredAtStop := b.consumer.Count(topicChanges)

	// Sample the pipeline every second while the dispatcher is down.
	type sample struct {
		at        time.Duration
		watermark int64
		processed int64
		pending   int64
	}
	read := func() sample {
		s, err := status.Read(ctx, b.pg.Pool, time.Now())
		require.NoError(t, err)
		var pending int64
		for _, tg := range s.Outbox {
			if tg.Target == "KAFKA:msg" {
				pending = tg.Pending
			}
		}
		return sample{time.Since(start).Round(10 * time.Millisecond), s.Watermark,
			s.ByStatus["SUCCEEDED"] + s.ByStatus["SKIPPED"] + s.ByStatus["DEAD"], pending}
	}
	samples := []sample{read()}
	tick := time.NewTicker(sampling)
	for time.Since(stopped) < stopFor {
		<-tick.C
		samples = append(samples, read())
	}
	tick.Stop()
	deliveredDuringStop := b.consumer.Count(topicChanges) - deliveredAtStop
	_, err := b.stack.StartProc(ctx, "dispatcher")
	require.NoError(t, err)
	restarted := time.Now()

	var stalls []string
	for i := 1; i < len(samples); i++ {
		p, s := samples[i-1], samples[i]
		if s.watermark <= p.watermark {
			stalls = append(stalls, fmt.Sprintf("watermark did not grow between %s and %s: %d → %d", p.at, s.at, p.watermark, s.watermark))
		}
		if s.processed <= p.processed {
			stalls = append(stalls, fmt.Sprintf("processed count did not grow between %s and %s: %d → %d", p.at, s.at, p.processed, s.processed))
		}
	}
	for _, s := range samples {
		t.Logf("dispatcher down, t=%s: watermark %d, processed %d, KAFKA:msg pending %d", s.at, s.watermark, s.processed, s.pending)
	}
	noProblems(t, stalls, "ingest or the processor paused while the dispatcher was down")
	first, last := samples[0], samples[len(samples)-1]
	require.Greater(t, last.pending, first.pending, "the KAFKA:msg backlog should grow while the dispatcher is down")
	require.Zero(t, deliveredDuringStop, "records arrived on %s while the dispatcher was down", topicChanges)

	r := <-written
	require.NoError(t, r.err)
	b.waitDrained(t, maxOf(r.w.IDs), 90*time.Second)
	t.Logf("feed of %d messages at %.0f/s ended after %s; dispatcher down %s; backlog drained %s after the restart",
		len(msgs), rate, time.Since(start).Round(time.Second), restarted.Sub(stopped).Round(100*time.Millisecond),
		time.Since(restarted).Round(100*time.Millisecond))

	states := loadAll(t, b)
	checkChangesComplete(t, b.consumer, states)
	checkStateTopic(t, b.consumer, states)

	seen := map[string]bool{}
	dups := 0
	for _, rec := range b.consumer.Records() {
		if rec.Topic != topicChanges {
			continue
		}
		k := rec.FLID + "/" + strconv.FormatInt(rec.StateVersion, 10)
		if seen[k] {
			dups++
		}
		seen[k] = true
	}
	t.Logf("%s: %d records, %d distinct (flid, state_version), %d duplicates dropped; %d flights",
		topicChanges, b.consumer.Count(topicChanges), len(seen), dups, len(states))
}
