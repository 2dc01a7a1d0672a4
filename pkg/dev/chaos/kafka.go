package chaos

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/msgx/msgx/pkg/dev/apachekafka"
	"github.com/msgx/msgx/pkg/dev/broker"
	"github.com/msgx/msgx/pkg/dev/verify"
)

// RealKafka is an Apache Kafka cluster scenarios share, its client listener TLS with
// SASL/SCRAM-SHA-512 as production's: the three nodes of the Kafka scenarios (every node broker
// and controller, three replicas, two in sync), or the single node of the suite's other
// scenarios that need no fault of the development broker. It is launched on first use and
// launched anew when a scenario left a node down, frozen or a partition short of replicas; each
// scenario gets the two topics fresh. Close stops it.
type RealKafka struct {
	root     string // one directory per launch below it (.chaos is cleared by hand)
	nodes    int
	launches int
	dir      string // the current cluster's directory: its nodes' configuration, data and logs
	c        *apachekafka.Cluster
}

// NewRealKafka returns the handle of a three-node cluster kept under dir (launched on first use).
func NewRealKafka(dir string) *RealKafka { return &RealKafka{root: dir, nodes: kafkaNodes} }

// NewKafkaNode returns the handle of a single-node cluster kept under dir (launched on first
// use): Config.Kafka, the broker of the scenarios that do not fault the development broker.
func NewKafkaNode(dir string) *RealKafka { return &RealKafka{root: dir, nodes: 1} }

// Name is the cluster in the report's configuration column.
func (k *RealKafka) Name() string { return fmt.Sprintf("%d-node Apache Kafka", k.nodes) }

// Close stops the cluster; its directory stays for the logs.
func (k *RealKafka) Close() error {
	if k.c == nil {
		return nil
	}
	err := k.c.Close()
	k.c = nil
	return err
}

// kafkaNodes is the Kafka scenarios' cluster size: production's three brokers.
const kafkaNodes = 3

// kafkaOptions shorten the broker session (default 9 s) so the controller fences a dead or
// frozen broker, and moves its partitions, within seconds.
var kafkaOptions = apachekafka.Options{Config: map[string]string{
	"broker.session.timeout.ms":    "6000",
	"broker.heartbeat.interval.ms": "1000",
}}

// kafkaTxnPrefix is the dispatchers' transactional id prefix in the Kafka scenarios.
const kafkaTxnPrefix = "msgx-chaos"

// scenarioKafkaEnv are the Kafka scenarios' extra settings of every binary.
var scenarioKafkaEnv = []string{"MSGX_KAFKA_TRANSACTIONAL_ID_PREFIX=" + kafkaTxnPrefix}

// changesTxnID is the transactional id of the dispatcher's producer of msgx.flight.changes.
const changesTxnID = kafkaTxnPrefix + "." + verify.TopicChanges

// prepare returns a whole cluster with both topics empty: the current one when every node runs
// and every partition is in sync, otherwise a new one.
func (k *RealKafka) prepare(ctx context.Context, shape *productionShape, logf func(string, ...any)) (*apachekafka.Cluster, error) {
	if k.c != nil {
		err := k.whole(ctx)
		if err == nil {
			err = k.recreateTopics(ctx)
		}
		if err == nil {
			return k.c, nil
		}
		logf("the Apache Kafka cluster is not whole (%v): launching a new one", err)
		_ = k.Close()
	}
	k.launches++
	// Named by the time too: the logs of an earlier suite run's cluster stay.
	k.dir = filepath.Join(k.root, fmt.Sprintf("cluster-%s-%d", time.Now().Format("20060102-150405"), k.launches))
	opts := shape.apacheKafka(kafkaOptions) // the client listener: TLS and SCRAM-SHA-512, as production's brokers
	opts.Dir = k.dir
	lctx, cancel := context.WithTimeout(ctx, apachekafka.StartTimeout)
	defer cancel()
	began := time.Now()
	c, err := apachekafka.Launch(lctx, k.nodes, opts)
	if err != nil {
		return nil, err
	}
	k.c = c
	logf("%s ready after %s (%s)", k.Name(), time.Since(began).Round(100*time.Millisecond), k.dir)
	if err := k.recreateTopics(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// whole checks that every node runs unfrozen and every partition has all its replicas in sync.
func (k *RealKafka) whole(ctx context.Context) error {
	for _, n := range k.c.Nodes() {
		if !n.Running() || n.Frozen() {
			return fmt.Errorf("node %d is down or frozen", n.ID)
		}
	}
	return waitInSync(ctx, k.c, 2*time.Minute)
}

// recreateTopics deletes both topics (a scenario reads them from the start) and creates them
// again: broker.Partitions partitions, a replica on every node, min.insync.replicas 2 (1 on a
// single node), the state topic compacted, as production's are.
func (k *RealKafka) recreateTopics(ctx context.Context) error {
	cl, err := kgo.NewClient(k.c.ClientOpts()...)
	if err != nil {
		return fmt.Errorf("admin client: %w", err)
	}
	defer cl.Close()
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.TimeoutMillis = 30_000
	for _, name := range []string{verify.TopicChanges, verify.TopicState, broker.TopicHeartbeat} {
		t := kmsg.NewDeleteTopicsRequestTopic()
		t.Topic = kmsg.StringPtr(name)
		req.Topics = append(req.Topics, t)
		req.TopicNames = append(req.TopicNames, name)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("delete topics: %w", err)
	}
	for _, t := range resp.Topics {
		if err := kerr.ErrorForCode(t.ErrorCode); err != nil && !errors.Is(err, kerr.UnknownTopicOrPartition) {
			return fmt.Errorf("delete topic %s: %w", *t.Topic, err)
		}
	}
	isr := strconv.Itoa(min(2, k.nodes))
	for _, t := range []struct {
		name    string
		configs map[string]string
	}{
		{verify.TopicChanges, map[string]string{"min.insync.replicas": isr}},
		{verify.TopicState, map[string]string{"min.insync.replicas": isr, "cleanup.policy": "compact"}},
		{broker.TopicHeartbeat, map[string]string{"min.insync.replicas": isr}},
	} {
		err := poll(ctx, time.Minute, func() error { return k.c.CreateTopic(ctx, t.name, broker.Partitions, t.configs) },
			func(err error) bool { return errors.Is(err, kerr.TopicAlreadyExists) })
		if err != nil {
			return err
		}
	}
	return waitInSync(ctx, k.c, 2*time.Minute)
}

// poll calls f until it succeeds, fails with an error retry does not accept, or d passes.
func poll(ctx context.Context, d time.Duration, f func() error, retry func(error) bool) error {
	deadline := time.Now().Add(d)
	for {
		err := f()
		if err == nil || !retry(err) || time.Now().After(deadline) {
			return err
		}
		if err := Sleep(ctx, 200*time.Millisecond); err != nil {
			return err
		}
	}
}

// waitInSync waits until every partition of every topic (the internal ones included) has a
// leader and all its replicas in sync: before the next broker of a rolling restart goes down,
// and before a scenario starts. It gives up after d.
func waitInSync(ctx context.Context, c *apachekafka.Cluster, d time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	cl, err := kgo.NewClient(c.ClientOpts()...)
	if err != nil {
		return fmt.Errorf("admin client: %w", err)
	}
	defer cl.Close()
	var last error
	for {
		if last = outOfSync(ctx, cl); last == nil {
			return nil
		}
		if err := Sleep(ctx, 250*time.Millisecond); err != nil {
			return fmt.Errorf("wait for in-sync replicas: %w (last: %v)", err, last)
		}
	}
}

// outOfSync names the first partition without a leader or with a replica out of sync.
func outOfSync(ctx context.Context, cl *kgo.Client) error {
	actx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	resp, err := kmsg.NewPtrMetadataRequest().RequestWith(actx, cl) // nil Topics: every topic
	if err != nil {
		return fmt.Errorf("metadata: %w", err)
	}
	for _, t := range resp.Topics {
		if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
			return fmt.Errorf("topic %s: %w", *t.Topic, err)
		}
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return fmt.Errorf("%s/%d: %w", *t.Topic, p.Partition, err)
			}
			if len(p.ISR) < len(p.Replicas) {
				return fmt.Errorf("%s/%d: in sync %v of replicas %v", *t.Topic, p.Partition, p.ISR, p.Replicas)
			}
		}
	}
	return nil
}

// busiestPartition is the msgx.flight.changes partition with the most records read so far.
func (r *Run) busiestPartition() (int32, int) {
	per := map[int32]int{}
	for _, rec := range r.Consumer.Records() {
		if rec.Topic == verify.TopicChanges {
			per[rec.Partition]++
		}
	}
	var best int32
	for p, n := range per {
		if n > per[best] || (n == per[best] && p < best) {
			best = p
		}
	}
	return best, per[best]
}

// sendPause is the longest time between from and to in which the dispatcher marked no event
// SENT (from and to count as marks): how long sending stood still around a fault.
func (r *Run) sendPause(ctx context.Context, from, to time.Time) (time.Duration, error) {
	var secs float64
	err := r.Pool.QueryRow(ctx, `
WITH t AS (SELECT sent_at AS at FROM msg_event_delivery WHERE sent_at > $1 AND sent_at < $2 UNION ALL SELECT $1 UNION ALL SELECT $2)
SELECT coalesce(max(extract(epoch FROM at - prev)), 0)::float8 FROM (SELECT at, lag(at) OVER (ORDER BY at) AS prev FROM t) g`,
		from, to).Scan(&secs)
	if err != nil {
		return 0, fmt.Errorf("longest pause in sends: %w", err)
	}
	return time.Duration(secs * float64(time.Second)), nil
}

// sentCount counts the events marked SENT.
func sentCount(ctx context.Context, r *Run) (int64, error) {
	var n int64
	err := r.Pool.QueryRow(ctx, `SELECT count(*) FROM msg_event_delivery WHERE status = 'SENT'`).Scan(&n)
	return n, err
}

// waitSending waits (bounded by d) until the dispatcher marks an event SENT beyond the count
// n, and returns how long that took from since.
func waitSending(ctx context.Context, r *Run, n int64, since time.Time, d time.Duration) (time.Duration, error) {
	deadline := time.Now().Add(d)
	for {
		m, err := sentCount(ctx, r)
		if err == nil && m > n {
			return time.Since(since), nil
		}
		if time.Now().After(deadline) {
			return time.Since(since), fmt.Errorf("no event sent within %s (last error: %v)", d, err)
		}
		if err := Sleep(ctx, 100*time.Millisecond); err != nil {
			return 0, err
		}
	}
}
