package dispatch_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/clock"
	"github.com/msgx/msgx/pkg/dev/kafkatest"
	"github.com/msgx/msgx/pkg/dev/testdb"
	"github.com/msgx/msgx/pkg/dispatch"
	"github.com/msgx/msgx/pkg/event"
	"github.com/msgx/msgx/pkg/kafka"
	"github.com/msgx/msgx/pkg/leader"
	"github.com/msgx/msgx/pkg/outbox"
)

// realKafka is the adapter's configuration for the package's shared real broker with topics of
// its own (prefix), the topics created.
func realKafka(t *testing.T, prefix string) kafka.Config {
	t.Helper()
	_, cfg := kafkatest.ApacheConfig(t, prefix)
	return cfg
}

// TestRealBrokerDrain: a leadership term against Apache Kafka (the Link dials the transactional
// producers, checks the topics and sends) drains a backlog of both targets: every event SENT,
// every FLID's versions once and in order on the changes topic, the newest state of each FLID
// on the state topic.
func TestRealBrokerDrain(t *testing.T) {
	t.Parallel()
	kcfg := realKafka(t, "drain")
	db := testdb.New(t)
	ctx := context.Background()
	store, err := outbox.New(db.Pool, outbox.Policy{MaxAttempts: 3, BackoffBase: time.Second, BackoffMax: 4 * time.Second})
	require.NoError(t, err)
	_, err = db.Pool.Exec(ctx, `INSERT INTO leader_lease (role, epoch, holder, backend_pid, acquired_at, renewed_at) VALUES ('dispatcher', 7, 'test', 0, $1, $1)`, t0)
	require.NoError(t, err)
	lease := leader.Lease{Role: "dispatcher", Epoch: 7}
	link, err := dispatch.NewLink(kcfg, 10*time.Millisecond, zerolog.Nop())
	require.NoError(t, err)
	b := &bundle{db: db, store: store, clock: clock.NewFake(t0)}
	disp, err := dispatch.New(dispatch.Config{Batch: 100, FlushPeriod: time.Second, FlushLimit: 50,
		TopicChanges: kcfg.TopicChanges, TopicState: kcfg.TopicState}, store, link, b.clock, prometheus.NewRegistry(), zerolog.Nop())
	require.NoError(t, err)

	const flids, per = 100, 10
	n := enqueueSpread(t, b, flids, per)
	for f := int64(1); f <= 20; f++ {
		enqueueEach(t, b, stateEvent(f, 1, event.Upsert), stateEvent(f, 2, event.Upsert))
	}
	require.NoError(t, link.Term(ctx, func(context.Context) error { return nil }, func(ctx context.Context) error {
		for {
			res, err := disp.StepMsg(ctx, lease)
			require.NoError(t, err)
			require.Zero(t, res.Retried+res.Dead, "%+v", res)
			if res.Claimed == 0 {
				break
			}
		}
		for more := true; more; {
			res, err := disp.FlushStates(ctx, lease)
			require.NoError(t, err)
			require.Zero(t, res.Retried+res.Dead, "%+v", res)
			more = res.More
		}
		return nil
	}))
	require.Equal(t, n+20, countStatus(t, b, outbox.StatusSent), "every change, and one state per flight (its newest)")

	addrs := kafkatest.Apache(t).Addrs()
	want := map[string]int64{}
	for f := 1; f <= flids; f++ {
		want[strconv.Itoa(f)] = per
	}
	require.Empty(t, checkStream(t, kafkatest.ConsumeAll(t, addrs, kcfg.TopicChanges, time.Minute), want), "no duplicates")
	states := kafkatest.ConsumeAll(t, addrs, kcfg.TopicState, time.Minute)
	require.Len(t, states, 20, "one record per FLID: the newest state")
	for _, r := range states {
		require.Equal(t, int64(2), r.Event(t).StateVersion)
	}
}
