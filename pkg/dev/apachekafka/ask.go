package apachekafka

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Polling the cluster: how often, and how long one question may take (a frozen node never
// answers).
const (
	pollInterval = 200 * time.Millisecond
	askTimeout   = 5 * time.Second
)

// errExited marks a node that died while it was expected to come up: waiting longer is useless.
var errExited = errors.New("node exited")

// poll asks f until it answers nil, a node it waits for exits, or ctx ends; the error then says
// what f last reported.
func poll(ctx context.Context, what string, f func(context.Context) error) error {
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		actx, cancel := context.WithTimeout(ctx, askTimeout)
		err := f(actx)
		cancel()
		if err == nil || errors.Is(err, errExited) {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w (last: %v)", what, ctx.Err(), err)
		case <-tick.C:
		}
	}
}

// waitReady waits until every live node (running, not frozen) answers a metadata request listing
// every live node as a broker (a broker joins the list once it has caught up with the metadata
// log and been unfenced), and the controller quorum answers with a leader. must are nodes just
// started: their exit ends the wait.
func (c *Cluster) waitReady(ctx context.Context, must ...*Node) error {
	return poll(ctx, "wait for the cluster", func(ctx context.Context) error {
		for _, n := range must {
			if done, ok := n.exited(); ok {
				select {
				case <-done:
					return fmt.Errorf("%w: %w", errExited, n.exitError())
				default:
				}
			}
		}
		var live []*Node
		for _, n := range c.nodes {
			if n.Running() && !n.Frozen() {
				live = append(live, n)
			}
		}
		for _, n := range live {
			if err := c.lists(ctx, n, live); err != nil {
				return err
			}
		}
		_, err := c.QuorumLeader(ctx)
		return err
	})
}

// lists checks that node n answers metadata naming every node of want as a broker.
func (c *Cluster) lists(ctx context.Context, n *Node, want []*Node) error {
	req := kmsg.NewPtrMetadataRequest()
	req.Topics = []kmsg.MetadataRequestTopic{} // brokers only
	resp, err := c.admin.SeedBrokers()[n.ID-1].Request(ctx, req)
	if err != nil {
		return fmt.Errorf("node %d metadata: %w", n.ID, err)
	}
	listed := map[int32]bool{}
	for _, b := range resp.(*kmsg.MetadataResponse).Brokers {
		listed[b.NodeID] = true
	}
	for _, w := range want {
		if !listed[w.ID] {
			return fmt.Errorf("node %d does not list node %d as a broker yet", n.ID, w.ID)
		}
	}
	return nil
}

// QuorumLeader is the node leading the controller quorum (the active controller), as the
// cluster reports it now.
func (c *Cluster) QuorumLeader(ctx context.Context) (*Node, error) {
	req := kmsg.NewPtrDescribeQuorumRequest()
	topic := kmsg.NewDescribeQuorumRequestTopic()
	topic.Topic = "__cluster_metadata"
	topic.Partitions = []kmsg.DescribeQuorumRequestTopicPartition{kmsg.NewDescribeQuorumRequestTopicPartition()}
	req.Topics = append(req.Topics, topic)
	kresp, err := c.admin.Request(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("describe quorum: %w", err)
	}
	resp := kresp.(*kmsg.DescribeQuorumResponse)
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return nil, fmt.Errorf("describe quorum: %w", err)
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return nil, fmt.Errorf("describe quorum: no metadata partition in the answer")
	}
	p := resp.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
		return nil, fmt.Errorf("describe quorum: %w", err)
	}
	return c.node("quorum leader", p.LeaderID)
}

// node maps a node id the cluster reported to its Node.
func (c *Cluster) node(role string, id int32) (*Node, error) {
	if id < 1 || int(id) > len(c.nodes) {
		return nil, fmt.Errorf("%s: no node (id %d)", role, id)
	}
	return c.nodes[id-1], nil
}

// Leader waits until the partition has a leader and returns its node.
func (c *Cluster) Leader(ctx context.Context, topic string, partition int32) (*Node, error) {
	var leader *Node
	err := poll(ctx, fmt.Sprintf("leader of %s/%d", topic, partition), func(ctx context.Context) error {
		req := kmsg.NewPtrMetadataRequest()
		t := kmsg.NewMetadataRequestTopic()
		t.Topic = kmsg.StringPtr(topic)
		req.Topics = append(req.Topics, t)
		kresp, err := c.admin.Request(ctx, req)
		if err != nil {
			return fmt.Errorf("metadata: %w", err)
		}
		resp := kresp.(*kmsg.MetadataResponse)
		if len(resp.Topics) != 1 {
			return fmt.Errorf("metadata: %d topics in the answer", len(resp.Topics))
		}
		if err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil {
			return fmt.Errorf("metadata: %w", err)
		}
		for _, p := range resp.Topics[0].Partitions {
			if p.Partition == partition {
				if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
					return fmt.Errorf("metadata: %w", err)
				}
				leader, err = c.node("partition leader", p.Leader)
				return err
			}
		}
		return fmt.Errorf("metadata: no partition %d", partition)
	})
	return leader, err
}

// TxnCoordinator waits until the transaction coordinator of transactional id txnID is known
// (the first question creates the transaction state topic) and returns its node.
func (c *Cluster) TxnCoordinator(ctx context.Context, txnID string) (*Node, error) {
	var coord *Node
	err := poll(ctx, "transaction coordinator of "+txnID, func(ctx context.Context) error {
		var err error
		coord, err = c.askCoordinator(ctx, c.admin, txnID)
		return err
	})
	return coord, err
}

// TxnCoordinatorSeenBy asks node n alone, once, which node coordinates transactional id txnID.
// While a node is frozen, a question to the cluster may wait on it; the other nodes' answers
// show the moment the controller moved the coordinator off it.
func (c *Cluster) TxnCoordinatorSeenBy(ctx context.Context, n *Node, txnID string) (*Node, error) {
	return c.askCoordinator(ctx, c.admin.SeedBrokers()[n.ID-1], txnID)
}

// TxnCoordinatorLive asks the nodes that run and are not frozen, one after another, which node
// coordinates transactional id txnID, and returns the first answer. Unlike TxnCoordinator it
// never waits on a frozen node (a question the cluster's client sends there waits out its
// timeout), so it times the coordinator's move off a frozen node to the caller's poll.
func (c *Cluster) TxnCoordinatorLive(ctx context.Context, txnID string) (*Node, error) {
	var errs []error
	for _, n := range c.nodes {
		if !n.Running() || n.Frozen() {
			continue
		}
		actx, cancel := context.WithTimeout(ctx, askTimeout)
		coord, err := c.TxnCoordinatorSeenBy(actx, n, txnID)
		cancel()
		if err == nil {
			return coord, nil
		}
		errs = append(errs, fmt.Errorf("node %d: %w", n.ID, err))
	}
	return nil, fmt.Errorf("transaction coordinator of %s: no live node answered: %w", txnID, errors.Join(errs...))
}

// requester is a franz-go client or one of its brokers.
type requester interface {
	Request(context.Context, kmsg.Request) (kmsg.Response, error)
}

// askCoordinator asks r for the transaction coordinator of txnID.
func (c *Cluster) askCoordinator(ctx context.Context, r requester, txnID string) (*Node, error) {
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorType = 1 // transaction
	req.CoordinatorKey = txnID
	req.CoordinatorKeys = []string{txnID}
	kresp, err := r.Request(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("find coordinator: %w", err)
	}
	resp := kresp.(*kmsg.FindCoordinatorResponse)
	code, id := resp.ErrorCode, resp.NodeID
	if len(resp.Coordinators) > 0 {
		code, id = resp.Coordinators[0].ErrorCode, resp.Coordinators[0].NodeID
	}
	if err := kerr.ErrorForCode(code); err != nil {
		return nil, fmt.Errorf("find coordinator: %w", err)
	}
	return c.node("transaction coordinator", id)
}
