package apachekafka_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/msgx/msgx/pkg/dev/apachekafka"
	"github.com/msgx/msgx/pkg/dev/tlsenv"
)

// opTimeout bounds each step of a test against the broker; failover after a kill takes up to
// the broker session timeout.
const opTimeout = 90 * time.Second

func TestSingleNode(t *testing.T) {
	t.Parallel()
	began := time.Now()
	c := apachekafka.Start(t, apachekafka.Options{})
	t.Logf("single node ready after %s", time.Since(began).Round(time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	require.NoError(t, c.CreateTopic(ctx, "txn", 1, nil))

	p := client(t, c, kgo.TransactionalID("msgx-test-txn"), kgo.DefaultProduceTopic("txn"))
	// One partition: an aborted record that leaked would come before committed-3 and be read.
	produceTxn(ctx, t, p, kgo.TryCommit, "committed-1", "committed-2")
	produceTxn(ctx, t, p, kgo.TryAbort, "aborted")
	produceTxn(ctx, t, p, kgo.TryCommit, "committed-3")
	coord, err := c.TxnCoordinator(ctx, "msgx-test-txn")
	require.NoError(t, err)
	require.Equal(t, int32(1), coord.ID)

	committed := []string{"committed-1", "committed-2", "committed-3"}
	require.ElementsMatch(t, committed, consume(ctx, t, c, "txn", 3))
	logPeakRSS(t, c)

	node := c.Node(1)
	require.NoError(t, node.Freeze())
	require.True(t, node.Frozen())
	short, cancelShort := context.WithTimeout(ctx, 2*time.Second)
	defer cancelShort()
	require.Error(t, p.Ping(short), "a frozen broker answers nothing")
	require.NoError(t, node.Thaw())
	require.NoError(t, p.Ping(ctx))

	began = time.Now()
	require.NoError(t, node.Restart(ctx)) // SIGTERM, then the same data and ports
	t.Logf("graceful restart took %s", time.Since(began).Round(time.Millisecond))
	require.ElementsMatch(t, committed, consume(ctx, t, c, "txn", 3))
}

// TestClusterSurvivesKill: three nodes, one killed; only with apachekafka.ClusterEnv=1 (the
// single-node tests and the conformance suite cover a broker in make test).
func TestClusterSurvivesKill(t *testing.T) {
	t.Parallel()
	if os.Getenv(apachekafka.ClusterEnv) != "1" {
		t.Skipf("%s=1 runs the three-node Apache Kafka tests", apachekafka.ClusterEnv)
	}
	began := time.Now()
	c := apachekafka.StartCluster(t, 3, apachekafka.Options{})
	t.Logf("three nodes ready after %s", time.Since(began).Round(time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 3*opTimeout)
	defer cancel()
	require.NoError(t, c.CreateTopic(ctx, "rf3", 1, nil))
	leader, err := c.QuorumLeader(ctx)
	require.NoError(t, err)
	t.Logf("quorum leader: node %d", leader.ID)

	p := client(t, c, kgo.DefaultProduceTopic("rf3"), kgo.RequiredAcks(kgo.AllISRAcks()))
	produce(ctx, t, p, "before")
	victim, err := c.Leader(ctx, "rf3", 0)
	require.NoError(t, err)
	require.NoError(t, victim.Kill())
	require.False(t, victim.Running())
	killed := time.Now()
	produce(ctx, t, p, "two-nodes") // the remaining two are min.insync.replicas
	t.Logf("acks=all produce with node %d killed took %s", victim.ID, time.Since(killed).Round(time.Millisecond))
	now, err := c.Leader(ctx, "rf3", 0)
	require.NoError(t, err)
	require.NotEqual(t, victim.ID, now.ID, "leadership moved off the killed node")

	began = time.Now()
	require.NoError(t, victim.Restart(ctx))
	t.Logf("node %d back after %s", victim.ID, time.Since(began).Round(time.Millisecond))
	produce(ctx, t, p, "after")
	require.ElementsMatch(t, []string{"before", "two-nodes", "after"}, consume(ctx, t, c, "rf3", 3))
	logPeakRSS(t, c)
}

// client is a franz-go client of the cluster, closed with the test.
func client(t *testing.T, c *apachekafka.Cluster, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append(c.ClientOpts(), opts...)...)
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	return cl
}

// produce sends values synchronously, each acknowledged as the client is configured.
func produce(ctx context.Context, t *testing.T, cl *kgo.Client, values ...string) {
	t.Helper()
	for _, v := range values {
		require.NoError(t, cl.ProduceSync(ctx, kgo.StringRecord(v)).FirstErr(), "produce %q", v)
	}
}

// produceTxn sends values in one transaction and ends it with commit (TryCommit or TryAbort).
func produceTxn(ctx context.Context, t *testing.T, cl *kgo.Client, commit kgo.TransactionEndTry, values ...string) {
	t.Helper()
	require.NoError(t, cl.BeginTransaction())
	produce(ctx, t, cl, values...)
	require.NoError(t, cl.EndTransaction(ctx, commit))
}

// consume reads topic from the start, read_committed, until it has at least n values.
func consume(ctx context.Context, t *testing.T, c *apachekafka.Cluster, topic string, n int) []string {
	t.Helper()
	cl := client(t, c, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.FetchMaxWait(200*time.Millisecond))
	var got []string
	for len(got) < n {
		fs := cl.PollFetches(ctx)
		require.NoError(t, ctx.Err(), "consume %s: have %v, want %d values", topic, got, n)
		fs.EachError(func(topic string, p int32, err error) { require.NoError(t, err, "fetch %s/%d", topic, p) })
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	return got
}

// logPeakRSS logs each running JVM's peak resident memory.
func logPeakRSS(t *testing.T, c *apachekafka.Cluster) {
	t.Helper()
	for _, n := range c.Nodes() {
		rss, err := n.PeakRSS()
		require.NoError(t, err)
		t.Logf("node %d peak RSS %s", n.ID, fmt.Sprintf("%.0f MiB", float64(rss)/(1<<20)))
	}
}

func TestSCRAMOverTLS(t *testing.T) {
	t.Parallel()
	ca, err := tlsenv.NewCA(t.TempDir())
	require.NoError(t, err)
	c := apachekafka.Start(t, apachekafka.Options{
		SCRAM: &apachekafka.SCRAM{User: "msgx", Password: "pass,with=odd]chars\""},
		TLS:   &apachekafka.TLS{CertFile: ca.CertFile, KeyFile: ca.KeyFile, Client: ca.ClientTLS()},
	})
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	require.NoError(t, c.CreateTopic(ctx, "secure", 1, nil))
	produce(ctx, t, client(t, c, kgo.DefaultProduceTopic("secure")), "over-tls")
	require.Equal(t, []string{"over-tls"}, consume(ctx, t, c, "secure", 1))

	wrong, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.DialTLSConfig(ca.ClientTLS()),
		kgo.SASL(scram.Auth{User: "msgx", Pass: "wrong"}.AsSha512Mechanism()))
	require.NoError(t, err)
	defer wrong.Close()
	require.Error(t, wrong.Ping(ctx), "a wrong password is refused")
}
