// Package broker is the development Kafka broker: kfake (franz-go's fake cluster, the real wire
// protocol) with the two msgx topics. Package tests run it inside the test process (Start);
// cmd/devbroker runs it as its own process for the local stack, the demo, the end-to-end tests
// and the dev Kubernetes overlay, so it can be stopped, frozen and restarted on its own. No
// service binary links it (cmd/binaries_test.go checks).
package broker

import (
	"crypto/tls"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/msgx/msgx/pkg/kafka"
)

// The topics of a development cluster: the defaults of MSGX_KAFKA_TOPIC_CHANGES and
// MSGX_KAFKA_TOPIC_STATE.
const (
	TopicChanges   = "msgx.flight.changes"
	TopicState     = "msgx.flight.state"
	TopicHeartbeat = "msgx.heartbeat"
)

// Partitions is the partition count of the topics a development broker creates.
const Partitions = 6

// ClientConfig is an adapter configuration for development brokers (short timeouts, the
// default topics), for the admin step and for tools that produce.
func ClientConfig(brokers []string) kafka.Config {
	return kafka.Config{
		Brokers:        brokers,
		ClientID:       "msgx-dev",
		Version:        "2.8.0",
		DialTimeout:    5 * time.Second,
		IOTimeout:      10 * time.Second,
		ProduceTimeout: 10 * time.Second,
		SendTimeout:    30 * time.Second,
		TxnTimeout:     30 * time.Second,
		TxnIDPrefix:    "msgx-dev",
		CheckTimeout:   time.Second,
		Compression:    "lz4",
		TopicChanges:   TopicChanges,
		TopicState:     TopicState,
		TopicHeartbeat: TopicHeartbeat,
	}
}

// CreateTopics creates the two event topics (the state topic compacted) and the heartbeat's
// (TopicHeartbeat) unless they exist. It runs
// inside the cluster, not over the network, so it works before the advertised address resolves.
func (b *InProcess) CreateTopics(changes, state string, partitions int32) error {
	for _, t := range []struct {
		name    string
		configs map[string]string
	}{{changes, nil}, {state, map[string]string{"cleanup.policy": "compact"}}, {TopicHeartbeat, nil}} {
		if b.cluster.TopicInfo(t.name) != nil {
			continue
		}
		if err := b.cluster.CreateTopic(t.name, partitions, t.configs); err != nil {
			return fmt.Errorf("create topic %s: %w", t.name, err)
		}
	}
	return nil
}

// InProcess is a Kafka cluster running inside this process.
type InProcess struct {
	cluster *kfake.Cluster
}

// Options choose where a development broker listens and keeps its data.
type Options struct {
	// Listen are the addresses (host:port), one broker each; empty: one broker on a free port
	// of 127.0.0.1. Port 0 picks a free port.
	Listen []string
	// Advertise are the addresses clients are told to connect to (same length as Listen);
	// empty: the listening addresses. Needed when listening on 0.0.0.0 (a container).
	Advertise []string
	// DataDir keeps the cluster's topics and records on disk and reloads them at start, so a
	// restarted broker is the same cluster; empty: memory only.
	DataDir string
	// TLS, when set, makes every listener speak only TLS with this configuration.
	TLS *tls.Config
	// SCRAMUser and SCRAMPassword, when set, require SASL authentication: this one superuser
	// with SCRAM-SHA-512 (as production Kafka is configured for msgx).
	SCRAMUser, SCRAMPassword string
}

// SCRAMMechanism is the SASL mechanism of a broker with Options.SCRAMUser.
const SCRAMMechanism = "SCRAM-SHA-512"

// kfakeOpts turns o into kfake options.
func (o Options) kfakeOpts() ([]kfake.Opt, error) {
	if len(o.Advertise) > 0 && len(o.Advertise) != len(o.Listen) {
		return nil, fmt.Errorf("broker: %d advertised addresses for %d listen addresses", len(o.Advertise), len(o.Listen))
	}
	var opts []kfake.Opt
	if o.DataDir != "" {
		opts = append(opts, kfake.DataDir(o.DataDir))
	}
	if o.TLS != nil {
		opts = append(opts, kfake.TLS(o.TLS))
	}
	if (o.SCRAMUser == "") != (o.SCRAMPassword == "") {
		return nil, fmt.Errorf("broker: a SCRAM user needs a password and a password a user")
	}
	if o.SCRAMUser != "" {
		opts = append(opts, kfake.EnableSASL(), kfake.Superuser(SCRAMMechanism, o.SCRAMUser, o.SCRAMPassword))
	}
	if len(o.Listen) == 0 {
		return append(opts, kfake.NumBrokers(1)), nil
	}
	ports := make([]int, len(o.Listen))
	for i, a := range o.Listen {
		_, p, err := net.SplitHostPort(a)
		if err != nil {
			return nil, fmt.Errorf("broker: listen address %q: %w", a, err)
		}
		if ports[i], err = strconv.Atoi(p); err != nil {
			return nil, fmt.Errorf("broker: listen address %q: bad port", a)
		}
		if len(o.Advertise) > 0 {
			if _, _, err := net.SplitHostPort(o.Advertise[i]); err != nil {
				return nil, fmt.Errorf("broker: advertised address %q: %w", o.Advertise[i], err)
			}
		}
	}
	// kfake listens on 127.0.0.1:<port> and advertises what the listener reports: listen on the
	// configured address instead, and report the advertised one.
	next := 0
	listen := func(network, _ string) (net.Listener, error) {
		if next >= len(o.Listen) {
			return nil, fmt.Errorf("broker: more brokers than listen addresses")
		}
		i := next
		next++
		ln, err := net.Listen(network, o.Listen[i])
		if err != nil {
			return nil, err
		}
		if len(o.Advertise) == 0 {
			return ln, nil
		}
		return advertised{Listener: ln, addr: o.Advertise[i]}, nil
	}
	return append(opts, kfake.Ports(ports...), kfake.ListenFn(listen)), nil
}

// advertised is a listener that reports the address clients must use.
type advertised struct {
	net.Listener
	addr string
}

func (a advertised) Addr() net.Addr { return addr(a.addr) }

type addr string

func (addr) Network() string  { return "tcp" }
func (a addr) String() string { return string(a) }

// Start starts a cluster of one broker on a free port of 127.0.0.1, in memory. Extra kfake
// options (SASL users, several brokers) are for tests.
func Start(opts ...kfake.Opt) (*InProcess, error) {
	return start(append([]kfake.Opt{kfake.NumBrokers(1)}, opts...))
}

// StartWith starts a cluster as o says.
func StartWith(o Options) (*InProcess, error) {
	opts, err := o.kfakeOpts()
	if err != nil {
		return nil, err
	}
	return start(opts)
}

func start(opts []kfake.Opt) (*InProcess, error) {
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		return nil, fmt.Errorf("start development Kafka broker: %w", err)
	}
	return &InProcess{cluster: c}, nil
}

// Addrs returns the broker addresses (host:port) to use as bootstrap brokers.
func (b *InProcess) Addrs() []string { return b.cluster.ListenAddrs() }

// Cluster exposes the kfake cluster to tests (ControlKey, Fault).
func (b *InProcess) Cluster() *kfake.Cluster { return b.cluster }

// Close stops the broker (with a data directory: after writing its state there).
func (b *InProcess) Close() { b.cluster.Close() }
