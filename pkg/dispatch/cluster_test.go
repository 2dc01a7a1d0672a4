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
	"github.com/msgx/msgx/pkg/envconf"
	"github.com/msgx/msgx/pkg/kafka"
	"github.com/msgx/msgx/pkg/leader"
	"github.com/msgx/msgx/pkg/outbox"
	"github.com/msgx/msgx/pkg/settings"
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
	return startCluster(t, clusterOptions{prepare: prepare})
}

// clusterOptions adjust a cluster stage.
type clusterOptions struct {
	// prepare, when set, adjusts the dispatcher's Kafka settings once the topics exist.
	prepare func(context.Context, *apachekafka.Cluster, *kafka.Config) error
	// production runs the dispatcher as the binary does by default: the Kafka timeouts of
	// kafka.Config's defaults, the outage backoff capped by MSGX_BACKOFF_MAX, the redial wait of
	// MSGX_LEADER_RETRY, and the topics' tail read at the start of every term. Otherwise the
	// test settings (kafkatest.Config, short waits) apply.
	production bool
}

// startCluster is startClusterStage with options.
func startCluster(t *testing.T, o clusterOptions) *clusterStage {
	t.Helper()
	if os.Getenv(apachekafka.ClusterEnv) != "1" {
		t.Skipf("%s=1 runs the three-node Apache Kafka tests", apachekafka.ClusterEnv)
	}
	c := apachekafka.StartCluster(t, 3, apachekafka.Options{Config: map[string]string{
		"broker.session.timeout.ms":    "6000",
		"broker.heartbeat.interval.ms": "1000",
	}})
	kcfg := kafkatest.Config(c.Addrs())
	errorWait, linkRetry := 2*time.Second, 100*time.Millisecond
	if o.production {
		test := kcfg
		envconf.Defaults(&kcfg)
		kcfg.Brokers, kcfg.ClientID, kcfg.TxnIDPrefix = test.Brokers, test.ClientID, test.TxnIDPrefix
		kcfg.TopicChanges, kcfg.TopicState = test.TopicChanges, test.TopicState
		var retry settings.Retry
		var lc leader.Config
		envconf.Defaults(&retry)
		envconf.Defaults(&lc)
		errorWait, linkRetry = retry.BackoffMax, lc.Retry
	}
	ctx := context.Background()
	require.NoError(t, c.CreateTopic(ctx, kcfg.TopicChanges, kafkatest.Partitions, nil))
	require.NoError(t, c.CreateTopic(ctx, kcfg.TopicState, kafkatest.Partitions, map[string]string{"cleanup.policy": "compact"}))
	if o.prepare != nil {
		require.NoError(t, o.prepare(ctx, c, &kcfg))
	}
	policy := outbox.Policy{MaxAttempts: 3, BackoffBase: 100 * time.Millisecond, BackoffMax: time.Second}
	b := &bundle{db: testdb.New(t), clock: clock.NewFake(t0), reg: prometheus.NewRegistry(), policy: policy}
	var err error
	b.store, err = outbox.New(b.db.Pool, policy)
	require.NoError(t, err)
	_, err = b.db.Pool.Exec(ctx, `INSERT INTO leader_lease (role, epoch, holder, backend_pid, acquired_at, renewed_at) VALUES ('dispatcher', 7, 'test', 0, $1, $1)`, t0)
	require.NoError(t, err)
	b.lease = leader.Lease{Role: "dispatcher", Epoch: 7}
	link, err := dispatch.NewLink(kcfg, linkRetry, zerolog.New(zerolog.NewTestWriter(t)).With().Timestamp().Logger())
	require.NoError(t, err)
	dcfg := dispatch.Config{Batch: 10, FlushPeriod: 200 * time.Millisecond, FlushLimit: 50,
		TopicChanges: kcfg.TopicChanges, TopicState: kcfg.TopicState, ErrorWait: errorWait}
	if o.production {
		// As cmd/dispatcher: every term starts by reading what the topics took lately.
		dcfg.TailReader = func(ctx context.Context, topic string, since time.Time, fn func(kafka.ConsumedRecord) error) error {
			_, err := kafka.ReadCommittedSince(ctx, kcfg, topic, since, fn)
			return err
		}
	}
	// The system clock: the loops' backoffs are real waits here.
	b.disp, err = dispatch.New(dcfg, b.store, link, clock.System{}, b.reg, zerolog.New(zerolog.NewTestWriter(t)).With().Timestamp().Logger())
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

// coordinatorFirst is a cluster stage's prepare that puts the transaction coordinator of the
// changes producer first in the dispatcher's broker list (sarama starts from it, the probe and
// the dial ask it first); sendTimeout, when not 0, replaces the send timeout.
func coordinatorFirst(sendTimeout time.Duration) func(context.Context, *apachekafka.Cluster, *kafka.Config) error {
	return func(ctx context.Context, c *apachekafka.Cluster, kcfg *kafka.Config) error {
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
	}
}

// freezeCoordinator runs the freeze tests; sendTimeout, when not 0, replaces the send timeout.
func freezeCoordinator(t *testing.T, sendTimeout time.Duration) {
	s := startClusterStage(t, coordinatorFirst(sendTimeout))
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

// resumeAfterMove is how soon after the controller moved the coordinator off a frozen broker
// the dispatcher must send again.
const resumeAfterMove = 5 * time.Second

// TestClusterFreezeCoordinatorResumesAfterMove: the dispatcher as the binary runs it by default
// (the adapter's default timeouts, MSGX_BACKOFF_MAX, MSGX_LEADER_RETRY, the topics' tail read at
// each term) sends while the transaction coordinator of its changes producer, the first broker
// of its list, is frozen (SIGSTOP). Once the other nodes name another coordinator (the
// controller fenced the frozen node and moved its work), the dispatcher sends again within
// resumeAfterMove, the node still frozen. Nothing is charged to the events, nothing is lost.
func TestClusterFreezeCoordinatorResumesAfterMove(t *testing.T) {
	s := startCluster(t, clusterOptions{production: true, prepare: coordinatorFirst(0)})
	const flids, per = 50, 100
	n := enqueueSpread(t, s.b, flids, per)
	ctx := context.Background()
	s.waitSent(t, n/10, time.Minute)
	txnID := s.kcfg.TransactionalID(s.kcfg.TopicChanges)
	victim, err := s.c.TxnCoordinator(ctx, txnID)
	require.NoError(t, err)
	require.Equal(t, s.kcfg.Brokers[0], victim.Addr(), "the coordinator is the first broker of the list")

	require.NoError(t, victim.Freeze())
	frozenAt := time.Now()
	thawed := false
	defer func() {
		if !thawed {
			require.NoError(t, victim.Thaw())
		}
	}()
	movedAt := s.coordinatorMoved(t, victim, txnID, time.Minute)
	// The chaos scenario freezes for 60 s, the move comes after about 10 s: wait that long for a
	// send before calling it lost in the freeze.
	resumedAt, ok := s.sentAfter(t, movedAt, 50*time.Second)
	lastBefore := s.lastSentBefore(t, movedAt)
	t.Logf("node %d frozen; coordinator moved after %s; last send before the move %s after the freeze; first send after the move %s after it (%s after the freeze)",
		victim.ID, movedAt.Sub(frozenAt).Round(100*time.Millisecond), lastBefore.Sub(frozenAt).Round(100*time.Millisecond),
		resumedAt.Sub(movedAt).Round(100*time.Millisecond), resumedAt.Sub(frozenAt).Round(100*time.Millisecond))
	require.True(t, ok, "no send within 50s of the coordinator's move off frozen node %d", victim.ID)
	require.LessOrEqual(t, resumedAt.Sub(movedAt), resumeAfterMove,
		"sending again %s after the coordinator moved off frozen node %d", resumedAt.Sub(movedAt).Round(100*time.Millisecond), victim.ID)

	require.NoError(t, victim.Thaw())
	thawed = true
	s.waitSent(t, n, 3*time.Minute)
	require.Zero(t, s.attempts(t), "an outage is not charged to the events")
	s.checkChanges(t, flids, per)
}

// coordinatorMoved asks the live nodes, every 100 ms, which node coordinates txnID, and returns
// when the first answer names another node than frozen.
func (s *clusterStage) coordinatorMoved(t *testing.T, frozen *apachekafka.Node, txnID string, within time.Duration) time.Time {
	t.Helper()
	require.Eventually(t, func() bool {
		c, err := s.c.TxnCoordinatorLive(context.Background(), txnID)
		return err == nil && c.ID != frozen.ID
	}, within, 100*time.Millisecond, "the coordinator of %s did not move off frozen node %d within %s", txnID, frozen.ID, within)
	return time.Now()
}

// sentAfter waits up to within for an event marked SENT after at and returns the first such
// time (false: none in time).
func (s *clusterStage) sentAfter(t *testing.T, at time.Time, within time.Duration) (time.Time, bool) {
	t.Helper()
	deadline := at.Add(within)
	for {
		var first *time.Time
		require.NoError(t, s.b.db.Pool.QueryRow(context.Background(),
			`SELECT min(sent_at) FROM msg_event_delivery WHERE status = 'SENT' AND sent_at > $1`, at).Scan(&first))
		if first != nil {
			return *first, true
		}
		if time.Now().After(deadline) {
			return time.Now(), false
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// lastSentBefore is the last time an event was marked SENT before at.
func (s *clusterStage) lastSentBefore(t *testing.T, at time.Time) time.Time {
	t.Helper()
	var last time.Time
	require.NoError(t, s.b.db.Pool.QueryRow(context.Background(),
		`SELECT max(sent_at) FROM msg_event_delivery WHERE status = 'SENT' AND sent_at <= $1`, at).Scan(&last))
	return last
}
