package broker

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kfake"
)

// InProcess is a Kafka broker running inside this process (kfake, the real wire protocol, data
// in memory): the broker of tests and of MSGX_KAFKA_INPROCESS=true on a developer machine.
// Production refuses it (pkg/config).
type InProcess struct {
	cluster *kfake.Cluster
}

// Start starts an in-process cluster of one broker on a random local port. Extra kfake
// options (SASL users, several brokers) are for tests.
func Start(opts ...kfake.Opt) (*InProcess, error) {
	all := append([]kfake.Opt{kfake.NumBrokers(1)}, opts...)
	c, err := kfake.NewCluster(all...)
	if err != nil {
		return nil, fmt.Errorf("start in-process Kafka: %w", err)
	}
	return &InProcess{cluster: c}, nil
}

// Addrs returns the broker addresses (host:port) to use as bootstrap brokers.
func (b *InProcess) Addrs() []string { return b.cluster.ListenAddrs() }

// Cluster exposes the kfake cluster to tests (ControlKey, Fault).
func (b *InProcess) Cluster() *kfake.Cluster { return b.cluster }

// Close stops the broker.
func (b *InProcess) Close() { b.cluster.Close() }
