package dispatch_test

import (
	"context"
	"strconv"
	"sync"
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

// holdSender holds every send (after the batch was read, before it reaches Kafka) until
// released: a leader paused between its claim and its send.
type holdSender struct {
	dispatch.Sender
	held    chan string
	release chan struct{}
}

func (h holdSender) Send(ctx context.Context, recs []kafka.Record) []error {
	h.held <- recs[0].Topic
	<-h.release
	return h.Sender.Send(ctx, recs)
}

// TestZombieLeaderFencedInKafka, in process: leader A reads a batch of both targets
// and is held before sending; B takes the lease, initialises its producers (fencing A's), sends
// the batch and newer versions; A resumes and tries to send its stale batch. A's send is fenced
// (its step ends with leader.ErrFenced), and a read_committed consumer sees, per FLID and on
// both topics, versions that never decrease and no record of A's epoch after one of B's. Run
// 20 times. (e2e/zombie_test.go runs the same with real processes and SIGSTOP.)
func TestZombieLeaderFencedInKafka(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	br, kcfg := kafkatest.Broker(t)
	ctx := context.Background()
	store, err := outbox.New(db.Pool, outbox.Policy{MaxAttempts: 3, BackoffBase: time.Second, BackoffMax: 4 * time.Second})
	require.NoError(t, err)
	_, err = db.Pool.Exec(ctx, `INSERT INTO leader_lease (role, epoch, holder, backend_pid, acquired_at, renewed_at) VALUES ('dispatcher', 1, 'test', 0, $1, $1)`, t0)
	require.NoError(t, err)
	newDispatcher := func(s dispatch.Sender) *dispatch.Dispatcher {
		d, err := dispatch.New(dispatch.Config{Batch: 500, FlushPeriod: time.Second, FlushLimit: 500,
			TopicChanges: kcfg.TopicChanges, TopicState: kcfg.TopicState}, store, s, clock.System{}, prometheus.NewRegistry(), zerolog.Nop())
		require.NoError(t, err)
		return d
	}
	takeOver := func() leader.Lease {
		var epoch int64
		require.NoError(t, db.Pool.QueryRow(ctx, `UPDATE leader_lease SET epoch = epoch + 1 WHERE role = 'dispatcher' RETURNING epoch`).Scan(&epoch))
		return leader.Lease{Role: "dispatcher", Epoch: epoch}
	}
	const flids = 5
	for run := 0; run < 20; run++ {
		base := int64(1000 * (run + 1))
		var evs []event.Event
		for f := base; f < base+flids; f++ {
			evs = append(evs, msgEvent(f, 1), stateEvent(f, 1, event.Upsert))
		}
		require.NoError(t, outbox.Enqueue(ctx, db.Pool, t0, evs...))

		// A leads, reads a batch of each target and is held before sending.
		leaseA := takeOver()
		linkA, err := dispatch.NewLink(kcfg, 10*time.Millisecond, zerolog.Nop())
		require.NoError(t, err)
		hold := holdSender{Sender: linkA, held: make(chan string, 2), release: make(chan struct{})}
		dispA := newDispatcher(hold)
		aErrs := make(chan error, 2)
		aDone := make(chan error, 1)
		go func() {
			aDone <- linkA.Term(ctx, func(ctx context.Context) error { return store.CheckLease(ctx, leaseA) }, func(ctx context.Context) error {
				var wg sync.WaitGroup
				wg.Add(2)
				go func() { defer wg.Done(); _, err := dispA.StepMsg(ctx, leaseA); aErrs <- err }()
				go func() { defer wg.Done(); _, err := dispA.FlushStates(ctx, leaseA); aErrs <- err }()
				wg.Wait()
				return nil
			})
		}()
		<-hold.held
		<-hold.held

		// B takes over, sends the batch and newer versions.
		leaseB := takeOver()
		linkB, err := dispatch.NewLink(kcfg, 10*time.Millisecond, zerolog.Nop())
		require.NoError(t, err)
		dispB := newDispatcher(linkB)
		require.NoError(t, linkB.Term(ctx, func(ctx context.Context) error { return store.CheckLease(ctx, leaseB) }, func(ctx context.Context) error {
			for v := int64(2); v <= 3; v++ {
				for {
					res, err := dispB.StepMsg(ctx, leaseB)
					require.NoError(t, err)
					if res.Claimed == 0 {
						break
					}
				}
				_, err := dispB.FlushStates(ctx, leaseB)
				require.NoError(t, err)
				var more []event.Event
				for f := base; f < base+flids; f++ {
					more = append(more, msgEvent(f, v), stateEvent(f, v, event.Upsert))
				}
				require.NoError(t, outbox.Enqueue(ctx, db.Pool, t0, more...))
			}
			return nil
		}))

		// A resumes and tries to send its stale batch: fenced.
		close(hold.release)
		for i := 0; i < 2; i++ {
			require.ErrorIs(t, <-aErrs, leader.ErrFenced, "run %d", run)
		}
		require.NoError(t, <-aDone)

		for _, topic := range []string{kcfg.TopicChanges, kcfg.TopicState} {
			recs := kafkatest.ConsumeAll(t, br.Addrs(), topic, time.Minute)
			last := map[string]kafkatest.Record{}
			seen := 0
			for _, r := range recs {
				f, _ := strconv.ParseInt(r.Key, 10, 64)
				if f < base || f >= base+flids {
					continue
				}
				seen++
				if prev, ok := last[r.Key]; ok {
					require.GreaterOrEqual(t, r.Event(t).StateVersion, prev.Event(t).StateVersion, "run %d FLID %s on %s: versions never decrease", run, r.Key, topic)
					require.GreaterOrEqual(t, r.Event(t).Epoch, prev.Event(t).Epoch, "run %d FLID %s on %s: no record of A's epoch after B's", run, r.Key, topic)
				}
				require.NotEqual(t, leaseA.Epoch, r.Event(t).Epoch, "run %d: nothing of the fenced leader is committed", run)
				last[r.Key] = r
			}
			require.Positive(t, seen, "run %d: B delivered on %s", run, topic)
		}
	}
}
