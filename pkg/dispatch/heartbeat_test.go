package dispatch_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/contract"
	"github.com/msgx/msgx/pkg/dev/kafkatest"
	"github.com/msgx/msgx/pkg/dispatch"
	"github.com/msgx/msgx/pkg/event"
)

// TestHeartbeatAtItsPeriodUntilTheDispatcherStops: a running dispatcher sends a heartbeat at
// once and then one each period of its clock, each telling the watermark, the newest event id
// sent and what waits; once Run has returned (the dispatcher stopped) none follows, however much
// time passes. Its age gauge counts from the last acknowledged heartbeat, and is 0 once it no
// longer leads.
func TestHeartbeatAtItsPeriodUntilTheDispatcherStops(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	const period = 10 * time.Second
	ctx := context.Background()
	_, err := b.db.Pool.Exec(ctx, `UPDATE inbox_cursor SET watermark = 41`)
	require.NoError(t, err)
	reg := prometheus.NewRegistry()
	disp := b.dispatcher(t, dispatch.Config{
		TopicHeartbeat: b.kcfg.TopicHeartbeat, HeartbeatKey: b.kcfg.TxnIDPrefix, HeartbeatPeriod: period,
	}, reg, zerolog.Nop())
	require.Equal(t, period.Seconds(), gauge(t, reg, "msgx_dispatch_heartbeat_period_seconds"))
	require.Zero(t, gauge(t, reg, "msgx_dispatch_heartbeat_age_seconds"), "not leading: no silence")
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- disp.Leading(runCtx, func(ctx context.Context) error { return disp.Run(ctx, b.lease) })
	}()

	schemas, err := contract.NewValidator()
	require.NoError(t, err)
	beats := func(n int) []event.Beat {
		t.Helper()
		var out []event.Beat
		for _, r := range kafkatest.Consume(t, b.broker.Addrs(), b.kcfg.TopicHeartbeat, n, 30*time.Second) {
			require.Equal(t, b.kcfg.TxnIDPrefix, r.Key)
			var hs []event.Header
			for k, v := range r.Headers {
				hs = append(hs, event.Header{Key: k, Value: v})
			}
			require.NoError(t, schemas.Record(contract.TopicHeartbeat, r.Key, hs, r.Value), "the heartbeat follows its schema")
			out = append(out, r.Heartbeat(t))
		}
		return out
	}
	first := beats(1)[0]
	require.Equal(t, event.Beat{Time: t0, Period: period, Epoch: b.lease.Epoch, Watermark: 41,
		Changes: event.BeatTopic{Topic: b.kcfg.TopicChanges}, State: event.BeatTopic{Topic: b.kcfg.TopicState}}, first,
		"the first heartbeat at once: nothing sent, nothing waiting")

	// A change committed and sent between two heartbeats is in the next one.
	enqueueEach(t, b, event.Event{Target: event.TargetMsg, FLID: 100, Type: event.Upsert, StateVersion: 1, MsgID: 5, Payload: []byte(`{"flid":100}`)})
	sentID := kafkatest.Consume(t, b.broker.Addrs(), b.kcfg.TopicChanges, 1, 30*time.Second)[0].Event(t).EventID
	require.Eventually(t, func() bool {
		var sent bool
		return b.db.Pool.QueryRow(ctx, `SELECT status = 'SENT' FROM msg_event_delivery WHERE event_id = $1`, sentID).Scan(&sent) == nil && sent
	}, 30*time.Second, 5*time.Millisecond, "the change is recorded as sent")
	for i := 1; i <= 3; i++ {
		require.Eventually(t, b.clock.Waiting, 30*time.Second, 5*time.Millisecond, "the heartbeat waits for its period")
		b.clock.Advance(period / 2)
		require.Equal(t, (period / 2).Seconds(), gauge(t, reg, "msgx_dispatch_heartbeat_age_seconds"), "half a period after heartbeat %d", i-1)
		b.clock.Advance(period / 2)
		got := beats(i + 1)
		require.Len(t, got, i+1, "one heartbeat per period")
		require.Equal(t, t0.Add(time.Duration(i)*period), got[i].Time, "heartbeat %d at its period", i)
		require.Equal(t, sentID, got[i].Changes.LastSent, "the newest event id sent on the changes topic")
		require.Zero(t, got[i].Changes.OldestUnsent, "nothing waits")
	}

	stop()
	require.NoError(t, <-done)
	require.Zero(t, gauge(t, reg, "msgx_dispatch_heartbeat_age_seconds"), "not leading: no silence")
	b.clock.Advance(10 * period)
	require.Len(t, kafkatest.ConsumeAll(t, b.broker.Addrs(), b.kcfg.TopicHeartbeat, 30*time.Second), 4,
		"no heartbeat once the dispatcher stopped")
}

// TestHeartbeatSilenceCountsFromTheTermStart: a leader whose term sends no heartbeat (it cannot
// dial Kafka, say) shows its silence growing from the start of its leadership, and 0 once it
// no longer leads; with no heartbeat topic there is no silence to show.
func TestHeartbeatSilenceCountsFromTheTermStart(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	for _, topic := range []string{b.kcfg.TopicHeartbeat, ""} {
		reg := prometheus.NewRegistry()
		disp := b.dispatcher(t, dispatch.Config{TopicHeartbeat: topic, HeartbeatKey: b.kcfg.TxnIDPrefix, HeartbeatPeriod: 10 * time.Second},
			reg, zerolog.Nop())
		var during float64
		require.NoError(t, disp.Leading(context.Background(), func(context.Context) error {
			b.clock.Advance(45 * time.Second) // no term ever runs: Kafka out of reach
			during = gauge(t, reg, "msgx_dispatch_heartbeat_age_seconds")
			return nil
		}))
		if topic == "" {
			require.Zero(t, during, "no heartbeat topic")
			continue
		}
		require.Equal(t, 45.0, during, "silent since the leadership started")
		require.Zero(t, gauge(t, reg, "msgx_dispatch_heartbeat_age_seconds"), "not leading: no silence")
	}
}
