package dispatch_test

import (
	"context"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/clock"
	"github.com/msgx/msgx/pkg/dev/apachekafka"
	"github.com/msgx/msgx/pkg/dev/kafkatest"
	"github.com/msgx/msgx/pkg/dev/testdb"
	"github.com/msgx/msgx/pkg/dispatch"
	"github.com/msgx/msgx/pkg/kafka"
	"github.com/msgx/msgx/pkg/leader"
	"github.com/msgx/msgx/pkg/outbox"
)

// clusterStage is a dispatcher running a leadership term against a three-node cluster.
type clusterStage struct {
	c    *apachekafka.Cluster
	kcfg kafka.Config
	b    *bundle
	link *dispatch.Link
	done chan error
}

// startClusterStage starts three nodes (a short broker session, so a dead node is fenced within
// seconds), the topics (three replicas, two in sync), and a dispatcher term that runs until the
// test ends. Outbox attempts are few, so an outage charged to the events shows as DEAD. prepare,
// when set, adjusts the dispatcher's settings once the topics exist.
func startClusterStage(t *testing.T, prepare func(context.Context, *apachekafka.Cluster, *kafka.Config) error) *clusterStage {
	t.Helper()
	if os.Getenv(apachekafka.ClusterEnv) != "1" {
		t.Skipf("%s=1 runs the three-node Apache Kafka tests", apachekafka.ClusterEnv)
	}
	c := apachekafka.StartCluster(t, 3, apachekafka.Options{Config: map[string]string{
		"broker.session.timeout.ms":    "6000",
		"broker.heartbeat.interval.ms": "1000",
	}})
	kcfg := kafkatest.Config(c.Addrs())
	ctx := context.Background()
	require.NoError(t, c.CreateTopic(ctx, kcfg.TopicChanges, kafkatest.Partitions, nil))
	require.NoError(t, c.CreateTopic(ctx, kcfg.TopicState, kafkatest.Partitions, map[string]string{"cleanup.policy": "compact"}))
	if prepare != nil {
		require.NoError(t, prepare(ctx, c, &kcfg))
	}
	policy := outbox.Policy{MaxAttempts: 3, BackoffBase: 100 * time.Millisecond, BackoffMax: time.Second}
	b := &bundle{db: testdb.New(t), clock: clock.NewFake(t0), reg: prometheus.NewRegistry(), policy: policy}
	var err error
	b.store, err = outbox.New(b.db.Pool, policy)
	require.NoError(t, err)
	_, err = b.db.Pool.Exec(ctx, `INSERT INTO leader_lease (role, epoch, holder, backend_pid, acquired_at, renewed_at) VALUES ('dispatcher', 7, 'test', 0, $1, $1)`, t0)
	require.NoError(t, err)
	b.lease = leader.Lease{Role: "dispatcher", Epoch: 7}
	link, err := dispatch.NewLink(kcfg, 100*time.Millisecond, zerolog.New(zerolog.NewTestWriter(t)))
	require.NoError(t, err)
	// The system clock: the loops' backoffs are real waits here.
	b.disp, err = dispatch.New(dispatch.Config{Batch: 10, FlushPeriod: 200 * time.Millisecond, FlushLimit: 50,
		TopicChanges: kcfg.TopicChanges, TopicState: kcfg.TopicState, ErrorWait: 2 * time.Second},
		b.store, link, clock.System{}, b.reg, zerolog.New(zerolog.NewTestWriter(t)))
	require.NoError(t, err)
	s := &clusterStage{c: c, kcfg: kcfg, b: b, link: link, done: make(chan error, 1)}
	runCtx, cancel := context.WithCancel(ctx)
	go func() {
		s.done <- link.Term(runCtx, func(context.Context) error { return nil },
			func(ctx context.Context) error { return b.disp.Run(ctx, b.lease) })
	}()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-s.done)
	})
	return s
}

// waitSent waits until n events are SENT, failing the test if any goes DEAD meanwhile.
func (s *clusterStage) waitSent(t *testing.T, n int, within time.Duration) {
	t.Helper()
	require.Eventually(t, func() bool {
		require.Zero(t, countStatus(t, s.b, outbox.StatusDead), "an event went DEAD")
		return countStatus(t, s.b, outbox.StatusSent) >= n
	}, within, 100*time.Millisecond)
}

// attempts is the number of failed sends charged to events.
func (s *clusterStage) attempts(t *testing.T) int {
	t.Helper()
	var n int
	require.NoError(t, s.b.db.Pool.QueryRow(context.Background(), `SELECT coalesce(sum(attempts), 0) FROM msg_event`).Scan(&n))
	return n
}

// checkChanges reads the changes topic: every FLID's versions once each (duplicates allowed
// only as redeliveries), in order.
func (s *clusterStage) checkChanges(t *testing.T, flids, per int) {
	t.Helper()
	want := map[string]int64{}
	for f := 1; f <= flids; f++ {
		want[strconv.Itoa(f)] = int64(per)
	}
	checkStream(t, kafkatest.ConsumeAll(t, s.c.Addrs(), s.kcfg.TopicChanges, 2*time.Minute), want)
}

// killAndRestart kills the node who names once a fifth of n events are SENT, waits until who
// names another node (the controller fenced the dead one and moved its work), and starts it
// again.
func (s *clusterStage) killAndRestart(t *testing.T, who func(context.Context) (*apachekafka.Node, error), n int) {
	t.Helper()
	ctx := context.Background()
	s.waitSent(t, n/5, time.Minute)
	victim, err := who(ctx)
	require.NoError(t, err)
	require.NoError(t, victim.Kill())
	t.Logf("node %d killed with %d of %d events sent", victim.ID, countStatus(t, s.b, outbox.StatusSent), n)
	require.Eventually(t, func() bool {
		now, err := who(ctx)
		return err == nil && now.ID != victim.ID
	}, time.Minute, 200*time.Millisecond, "moved off node %d", victim.ID)
	t.Logf("moved off node %d with %d events sent", victim.ID, countStatus(t, s.b, outbox.StatusSent))
	rctx, cancel := context.WithTimeout(ctx, apachekafka.StartTimeout)
	defer cancel()
	require.NoError(t, victim.Restart(rctx))
}

// TestClusterKillCoordinator: the transaction coordinator of the changes producer is killed
// while the dispatcher sends. The producer that cannot finish its transaction is replaced, the
// dispatcher sends on, no event is charged an attempt for the outage or goes DEAD, and every
// FLID's versions reach the topic in order.
func TestClusterKillCoordinator(t *testing.T) {
	s := startClusterStage(t, nil)
	const flids, per = 50, 60
	n := enqueueSpread(t, s.b, flids, per)
	s.killAndRestart(t, func(ctx context.Context) (*apachekafka.Node, error) {
		return s.c.TxnCoordinator(ctx, s.kcfg.TransactionalID(s.kcfg.TopicChanges))
	}, n)
	s.waitSent(t, n, 3*time.Minute)
	require.Zero(t, s.attempts(t), "an outage is not charged to the events")
	s.checkChanges(t, flids, per)
}

// TestClusterKillLeader: as TestClusterKillCoordinator, the leader of a changes partition killed.
func TestClusterKillLeader(t *testing.T) {
	s := startClusterStage(t, nil)
	const flids, per = 50, 60
	n := enqueueSpread(t, s.b, flids, per)
	s.killAndRestart(t, func(ctx context.Context) (*apachekafka.Node, error) {
		return s.c.Leader(ctx, s.kcfg.TopicChanges, 0)
	}, n)
	s.waitSent(t, n, 3*time.Minute)
	require.Zero(t, s.attempts(t), "an outage is not charged to the events")
	s.checkChanges(t, flids, per)
}

// TestClusterFreezeCoordinator: the transaction coordinator of the changes producer, the first
// broker of the dispatcher's list, is frozen (SIGSTOP) while the dispatcher sends. Once the
// controller has moved the coordinator and the frozen node's partitions, the dispatcher sends
// again while the node is still frozen: a frozen broker costs bounded request timeouts, not the
// length of the freeze, wherever it stands in the broker list.
func TestClusterFreezeCoordinator(t *testing.T) {
	freezeCoordinator(t, 0)
}

// TestClusterFreezeCoordinatorSendTimeout: as TestClusterFreezeCoordinator with a send timeout
// below the read timeout, so every send the freeze catches is abandoned and its producer
// replaced while the node is still frozen.
func TestClusterFreezeCoordinatorSendTimeout(t *testing.T) {
	freezeCoordinator(t, 6*time.Second)
}

// freezeCoordinator runs the freeze tests; sendTimeout, when not 0, replaces the send timeout.
func freezeCoordinator(t *testing.T, sendTimeout time.Duration) {
	s := startClusterStage(t, func(ctx context.Context, c *apachekafka.Cluster, kcfg *kafka.Config) error {
		n, err := c.TxnCoordinator(ctx, kcfg.TransactionalID(kcfg.TopicChanges))
		if err != nil {
			return err
		}
		others := slices.DeleteFunc(slices.Clone(kcfg.Brokers), func(a string) bool { return a == n.Addr() })
		kcfg.Brokers = append([]string{n.Addr()}, others...)
		if sendTimeout > 0 {
			kcfg.SendTimeout = sendTimeout
		}
		return nil
	})
	const flids, per = 50, 100
	n := enqueueSpread(t, s.b, flids, per)
	ctx := context.Background()
	s.waitSent(t, n/10, time.Minute)
	who := func(ctx context.Context) (*apachekafka.Node, error) {
		return s.c.TxnCoordinator(ctx, s.kcfg.TransactionalID(s.kcfg.TopicChanges))
	}
	victim, err := who(ctx)
	require.NoError(t, err)
	require.NoError(t, victim.Freeze())
	thawed := false
	defer func() {
		if !thawed {
			require.NoError(t, victim.Thaw())
		}
	}()
	frozenAt := time.Now()
	require.Eventually(t, func() bool {
		now, err := who(ctx)
		return err == nil && now.ID != victim.ID
	}, time.Minute, 200*time.Millisecond, "coordinator moved off node %d", victim.ID)
	moved := countStatus(t, s.b, outbox.StatusSent)
	t.Logf("coordinator moved off frozen node %d after %s with %d events sent", victim.ID, time.Since(frozenAt).Round(100*time.Millisecond), moved)
	// A send stuck on the frozen node ends by the send timeout at the latest; then the dispatcher
	// has resumeSlack to send again (a redial included), counted from the coordinator's move when
	// the cluster was slower than that.
	const resumeSlack = 15 * time.Second
	deadline := max(time.Until(frozenAt.Add(s.kcfg.SendTimeout+resumeSlack)), resumeSlack)
	require.Eventually(t, func() bool { return countStatus(t, s.b, outbox.StatusSent) > moved+100 },
		deadline, 100*time.Millisecond, "sending again while node %d is frozen", victim.ID)
	t.Logf("sending again %s after the freeze", time.Since(frozenAt).Round(100*time.Millisecond))
	require.NoError(t, victim.Thaw())
	thawed = true
	s.waitSent(t, n, 3*time.Minute)
	require.Zero(t, s.attempts(t), "an outage is not charged to the events")
	s.checkChanges(t, flids, per)
}
