package apachekafka

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"
	"golang.org/x/sync/errgroup"
)

// Cluster is a KRaft cluster of nodes on 127.0.0.1, each broker and controller in one JVM, the
// controllers a static quorum of all nodes. Node ids are 1..n.
type Cluster struct {
	nodes []*Node
	dir   string
	owned bool // dir was made by Launch and is removed by Close
	opts  Options
	admin *kgo.Client // asks the cluster about itself (readiness, leaders, coordinators)
}

// Launch formats and starts a cluster of n nodes and returns once every node serves clients,
// lists every other one, and the controller quorum has a leader. Close stops and removes it.
func Launch(ctx context.Context, n int, o Options) (*Cluster, error) {
	if n < 1 {
		return nil, fmt.Errorf("launch: %d nodes", n)
	}
	if err := o.Validate(); err != nil {
		return nil, fmt.Errorf("launch: %w", err)
	}
	lib, err := Jars(ctx)
	if err != nil {
		return nil, fmt.Errorf("launch: %w", err)
	}
	java, err := exec.LookPath("java")
	if err != nil {
		return nil, fmt.Errorf("launch: %w (run %s)", err, EnsureScript)
	}
	c := &Cluster{dir: o.Dir, opts: o}
	if c.dir == "" {
		if c.dir, err = os.MkdirTemp("", "msgx-kafka-"); err != nil {
			return nil, fmt.Errorf("launch: %w", err)
		}
		c.owned = true
	}
	if err := c.prepare(ctx, n, java, lib); err != nil {
		return nil, errors.Join(fmt.Errorf("launch: %w", err), c.Close())
	}
	if c.admin, err = kgo.NewClient(c.ClientOpts()...); err != nil {
		return nil, errors.Join(fmt.Errorf("launch: admin client: %w", err), c.Close())
	}
	for _, node := range c.nodes {
		if err := node.start(); err != nil {
			return nil, errors.Join(fmt.Errorf("launch: %w", err), c.Close())
		}
	}
	if err := c.waitReady(ctx, c.nodes...); err != nil {
		err = fmt.Errorf("launch: %w\n%s", err, c.LogTails(40))
		return nil, errors.Join(err, c.Close())
	}
	return c, nil
}

// prepare writes every node's files and formats its storage with a new cluster id.
func (c *Cluster) prepare(ctx context.Context, n int, java, lib string) error {
	all, err := freePorts(n)
	if err != nil {
		return err
	}
	for i := range n {
		id := int32(i + 1)
		dir := filepath.Join(c.dir, fmt.Sprintf("node%d", id))
		if err := writeNodeFiles(c.opts, dir, serverProperties(c.opts, id, all, dir)); err != nil {
			return fmt.Errorf("node %d: %w", id, err)
		}
		jvm := c.opts.JVM
		if jvm == nil {
			jvm = defaultJVM
		}
		c.nodes = append(c.nodes, &Node{ID: id, dir: dir, ports: all[i], cluster: c,
			java: javaCommand(java, lib, dir, jvm, "kafka.Kafka", "server.properties")})
	}
	id, err := clusterID()
	if err != nil {
		return err
	}
	g, gctx := errgroup.WithContext(ctx)
	for _, node := range c.nodes {
		g.Go(func() error { return c.format(gctx, node, java, lib, id) })
	}
	return g.Wait()
}

// formatJVM is for the short-lived storage tool: only the quick compiler, a small heap.
var formatJVM = []string{"-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-XX:-UsePerfData"}

// format runs Kafka's storage tool on a node: its meta.properties and the bootstrap metadata
// (with the SCRAM user, when there is one).
func (c *Cluster) format(ctx context.Context, node *Node, java, lib, clusterID string) error {
	// "--cluster-id=ID" in one argument: an id may start with "-", which the tool's parser would
	// take for an option.
	args := []string{"format", "--cluster-id=" + clusterID, "--config", "server.properties"}
	if s := c.opts.SCRAM; s != nil {
		for _, u := range append([]SCRAM{*s}, c.opts.Users...) {
			u.Mechanism = s.Mechanism
			cred, err := u.credential()
			if err != nil {
				return err
			}
			args = append(args, "--add-scram", cred)
		}
	}
	argv := javaCommand(java, lib, node.dir, formatJVM, "kafka.tools.StorageTool", args...)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = node.dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("format node %d: %w: %s", node.ID, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// javaCommand is the command line running main with Kafka's jars, logging as the node's
// log4j2.properties says.
func javaCommand(java, lib, dir string, jvm []string, main string, args ...string) []string {
	argv := append([]string{java}, jvm...)
	argv = append(argv, "-Dlog4j2.configurationFile="+filepath.Join(dir, "log4j2.properties"),
		"-cp", filepath.Join(lib, "*"), main)
	return append(argv, args...)
}

// clusterID is a new random cluster id in Kafka's form (16 bytes, unpadded URL-safe base64).
func clusterID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("cluster id: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// freePorts picks three free loopback ports per node. They are held together while picking so
// they differ; another process may still take one before the broker binds it.
func freePorts(n int) ([]ports, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	port := func() (int, error) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, fmt.Errorf("free port: %w", err)
		}
		ls = append(ls, l)
		return l.Addr().(*net.TCPAddr).Port, nil
	}
	out := make([]ports, n)
	for i := range out {
		for _, p := range []*int{&out[i].client, &out[i].internal, &out[i].controller} {
			var err error
			if *p, err = port(); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// Nodes are the cluster's nodes, in node id order.
func (c *Cluster) Nodes() []*Node { return c.nodes }

// Node is the node with id (1..n); it panics for another id.
func (c *Cluster) Node(id int32) *Node { return c.nodes[id-1] }

// Addrs are the client listeners of every node, the bootstrap servers of the cluster.
func (c *Cluster) Addrs() []string {
	addrs := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		addrs[i] = n.Addr()
	}
	return addrs
}

// ClientOpts are the franz-go options that reach the cluster: its addresses, and SASL and TLS
// when the client listener requires them.
func (c *Cluster) ClientOpts() []kgo.Opt {
	opts := []kgo.Opt{kgo.SeedBrokers(c.Addrs()...)}
	if s := c.opts.SCRAM; s != nil {
		auth := scram.Auth{User: s.User, Pass: s.Password}
		if s.mechanism() == "SCRAM-SHA-256" {
			opts = append(opts, kgo.SASL(auth.AsSha256Mechanism()))
		} else {
			opts = append(opts, kgo.SASL(auth.AsSha512Mechanism()))
		}
	}
	if t := c.opts.TLS; t != nil {
		opts = append(opts, kgo.DialTLSConfig(t.Client.Clone()))
	}
	return opts
}

// LogTails returns the last lines of every node's log, each under a heading.
func (c *Cluster) LogTails(lines int) string {
	var b strings.Builder
	for _, n := range c.nodes {
		fmt.Fprintf(&b, "--- node %d (%s), last %d lines ---\n%s\n", n.ID, n.LogFile(), lines, n.tail(lines))
	}
	return b.String()
}

// Close kills every node (the data is thrown away, so there is nothing to shut down cleanly),
// closes the admin client and removes the directory if Launch made it.
func (c *Cluster) Close() error {
	var errs []error
	for _, n := range c.nodes {
		errs = append(errs, n.Kill())
	}
	if c.admin != nil {
		c.admin.Close()
	}
	if c.owned {
		errs = append(errs, os.RemoveAll(c.dir))
	}
	return errors.Join(errs...)
}

// CreateTopic creates a topic with the cluster's default replication factor
// (default.replication.factor: every node, up to three) and waits until each partition has a
// leader.
func (c *Cluster) CreateTopic(ctx context.Context, name string, partitions int32, configs map[string]string) error {
	req := kmsg.NewPtrCreateTopicsRequest()
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic, t.NumPartitions, t.ReplicationFactor = name, partitions, -1
	for k, v := range configs {
		cfg := kmsg.NewCreateTopicsRequestTopicConfig()
		cfg.Name, cfg.Value = k, kmsg.StringPtr(v)
		t.Configs = append(t.Configs, cfg)
	}
	req.Topics = append(req.Topics, t)
	req.TimeoutMillis = 30_000
	kresp, err := c.admin.Request(ctx, req)
	if err != nil {
		return fmt.Errorf("create topic %s: %w", name, err)
	}
	resp := kresp.(*kmsg.CreateTopicsResponse)
	if len(resp.Topics) != 1 {
		return fmt.Errorf("create topic %s: %d topics in the answer", name, len(resp.Topics))
	}
	if err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil {
		return fmt.Errorf("create topic %s: %w", name, err)
	}
	for p := range partitions {
		if _, err := c.Leader(ctx, name, p); err != nil {
			return fmt.Errorf("create topic %s: %w", name, err)
		}
	}
	return nil
}

// DeleteTopic deletes a topic and waits until the cluster no longer lists it, so that a topic of
// the same name can be created again at once.
func (c *Cluster) DeleteTopic(ctx context.Context, name string) error {
	req := kmsg.NewPtrDeleteTopicsRequest()
	t := kmsg.NewDeleteTopicsRequestTopic()
	t.Topic = kmsg.StringPtr(name)
	req.Topics, req.TopicNames = append(req.Topics, t), append(req.TopicNames, name)
	req.TimeoutMillis = 30_000
	kresp, err := c.admin.Request(ctx, req)
	if err != nil {
		return fmt.Errorf("delete topic %s: %w", name, err)
	}
	for _, rt := range kresp.(*kmsg.DeleteTopicsResponse).Topics {
		if err := kerr.ErrorForCode(rt.ErrorCode); err != nil {
			return fmt.Errorf("delete topic %s: %w", name, err)
		}
	}
	return poll(ctx, "topic "+name+" gone", func(ctx context.Context) error {
		req := kmsg.NewPtrMetadataRequest()
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = kmsg.StringPtr(name)
		req.Topics = append(req.Topics, mt)
		kresp, err := c.admin.Request(ctx, req)
		if err != nil {
			return fmt.Errorf("metadata: %w", err)
		}
		for _, rt := range kresp.(*kmsg.MetadataResponse).Topics {
			if !errors.Is(kerr.ErrorForCode(rt.ErrorCode), kerr.UnknownTopicOrPartition) {
				return fmt.Errorf("topic %s still listed", name)
			}
		}
		return nil
	})
}
