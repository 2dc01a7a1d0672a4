package dispatch_test

import (
	"bytes"
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/msgx/msgx/pkg/dev/kafkatest"
	"github.com/msgx/msgx/pkg/dispatch"
	"github.com/msgx/msgx/pkg/event"
	"github.com/msgx/msgx/pkg/kafka"
	"github.com/msgx/msgx/pkg/outbox"
)

// syncBuffer is a log sink safe for concurrent writers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestHungBroker: a broker that holds a produce request (its request loop frozen, as
// a SIGSTOPped broker's is) fails the readiness probe within its timeout, the blocked send is
// logged as a warning, and the oldest-unacknowledged-send gauge grows; once the broker answers
// the batch is delivered, nothing lost.
func TestHungBroker(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	ctx := context.Background()
	logs := &syncBuffer{}
	reg := prometheus.NewRegistry()
	disp := b.dispatcher(t, dispatch.Config{SendWarn: 50 * time.Millisecond}, reg, zerolog.New(logs))
	var evs []event.Event
	for f := int64(1); f <= 10; f++ {
		evs = append(evs, msgEvent(f, 1))
	}
	require.NoError(t, outbox.Enqueue(ctx, b.db.Pool, t0, evs...))
	require.NoError(t, kafka.Probe(ctx, b.kcfg, 500*time.Millisecond), "a healthy broker answers the probe")

	release := make(chan struct{})
	held := make(chan struct{})
	b.broker.Cluster().ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		b.broker.Cluster().DropControl() // one request only: a retry after a client timeout passes
		close(held)
		<-release // the broker's request loop is frozen
		return nil, nil, false
	})
	type stepped struct {
		res dispatch.Result
		err error
	}
	done := make(chan stepped, 1)
	go func() {
		res, err := disp.StepMsg(ctx, b.lease)
		done <- stepped{res, err}
	}()
	<-held

	start := time.Now()
	perr := kafka.Probe(ctx, b.kcfg, 300*time.Millisecond)
	require.Error(t, perr, "a hung broker fails the readiness probe")
	require.Less(t, time.Since(start), 3*time.Second, "within the check timeout (dial, write, read)")
	waited := time.Duration(0)
	require.Eventually(t, func() bool {
		b.clock.Advance(50 * time.Millisecond) // SendWarn on the dispatcher's clock
		waited += 50 * time.Millisecond
		return bytes.Contains([]byte(logs.String()), []byte("kafka send blocked"))
	}, 10*time.Second, 10*time.Millisecond, "a warning while the send waits")
	b.clock.Advance(7 * time.Second)
	waited += 7 * time.Second
	age := strconv.FormatFloat(waited.Seconds(), 'g', -1, 64)
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(unackedAge+"msgx_dispatch_oldest_unacked_send_age_seconds "+age+"\n"),
		"msgx_dispatch_oldest_unacked_send_age_seconds"))

	close(release)
	r := <-done
	require.NoError(t, r.err)
	require.Equal(t, 10, r.res.Sent)
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(unackedAge+"msgx_dispatch_oldest_unacked_send_age_seconds 0\n"),
		"msgx_dispatch_oldest_unacked_send_age_seconds"))
	require.NoError(t, kafka.Probe(ctx, b.kcfg, 500*time.Millisecond), "ready again")
	require.Len(t, kafkatest.ConsumeAll(t, b.broker.Addrs(), b.kcfg.TopicChanges, time.Minute), 10)
}

const unackedAge = `# HELP msgx_dispatch_oldest_unacked_send_age_seconds Age of the oldest send still waiting for the broker's answer (0 when none): grows while a broker hangs.
# TYPE msgx_dispatch_oldest_unacked_send_age_seconds gauge
`

// TestReplayOfDeadStateAfterNewerPublishesNothingOlder: v5 of a FLID dies, v6 replaces it and
// is sent; a replay finds nothing: the state topic holds v6 only.
func TestReplayOfDeadStateAfterNewerPublishesNothingOlder(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	ctx := context.Background()
	b.sender.setPoison(func(r kafka.Record) error {
		if header(r, "state_version") == "5" {
			return &kafka.Error{Op: "produce", Err: errors.New("kafka server: Message was too large")}
		}
		return nil
	})
	require.NoError(t, outbox.Enqueue(ctx, b.db.Pool, t0, stateEvent(9, 5, event.Upsert)))
	res, err := b.disp.FlushStates(ctx, b.lease)
	require.NoError(t, err)
	require.Equal(t, 1, res.Retried)
	for i := 0; i < 3 && res.Dead == 0; i++ {
		b.clock.Advance(time.Minute)
		res, err = b.disp.FlushStates(ctx, b.lease)
		require.NoError(t, err)
	}
	require.Equal(t, 1, res.Dead)
	b.sender.setPoison(nil)

	require.NoError(t, outbox.Enqueue(ctx, b.db.Pool, t0, stateEvent(9, 6, event.Upsert)))
	res, err = b.disp.FlushStates(ctx, b.lease)
	require.NoError(t, err)
	require.Equal(t, 1, res.Sent, "v6 sent: it replaced the dead v5")
	replayed, err := b.store.Replay(ctx, outbox.Selector{FLID: "9"}, outbox.Admin{Actor: "ops"}, t0)
	require.NoError(t, err)
	require.Empty(t, replayed)
	require.Zero(t, countStatus(t, b, outbox.StatusPending)+countStatus(t, b, outbox.StatusDead))

	recs := kafkatest.ConsumeAll(t, b.broker.Addrs(), b.kcfg.TopicState, time.Minute)
	var versions []string
	for _, r := range recs {
		versions = append(versions, strconv.FormatInt(r.Event(t).StateVersion, 10))
	}
	require.Equal(t, []string{"6"}, versions)
}
