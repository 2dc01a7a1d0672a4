package broker_test

import (
	"context"
	"net"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/dev/broker"
	"github.com/msgx/msgx/pkg/kafka"
)

// A broker listening on one address and advertising another tells clients the advertised one
// (a container listens on 0.0.0.0 and is reached by its Service name).
func TestAdvertisedAddress(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	require.NoError(t, ln.Close())

	b, err := broker.StartWith(broker.Options{Listen: []string{"127.0.0.1:" + port}, Advertise: []string{"localhost:" + port}})
	require.NoError(t, err)
	defer b.Close()
	require.Equal(t, []string{"localhost:" + port}, b.Addrs())
	require.NoError(t, b.CreateTopics(broker.TopicChanges, broker.TopicState, 2))
	require.NoError(t, b.CreateTopics(broker.TopicChanges, broker.TopicState, 2), "existing topics are kept")

	p, err := kafka.Dial(broker.ClientConfig(b.Addrs()))
	require.NoError(t, err)
	defer p.Close()
	infos, err := p.CheckTopics(context.Background())
	require.NoError(t, err)
	require.Len(t, infos, 3, "the two event topics and the heartbeat's")
	for _, err := range p.Send(context.Background(), []kafka.Record{{Topic: broker.TopicChanges, Key: "1", Value: []byte("v")}}) {
		require.NoError(t, err)
	}
}
