package kafka_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/msgx/msgx/pkg/dev/kafkatest"
	"github.com/msgx/msgx/pkg/kafka"
)

// TestCollectorExportsClientMetrics: after a send, the bridged sarama metrics show the bytes
// sent, the records and the request latencies; a closed client does not take them away. While
// the broker holds the produce request, the in-flight gauge shows it, and it falls back to zero
// once the broker answers.
//
// Not parallel: the sarama metrics are the process's, and the in-flight gauge must see this
// test's requests alone (parallel tests start only after the sequential ones have finished).
func TestCollectorExportsClientMetrics(t *testing.T) {
	b, cfg := kafkatest.Broker(t)
	reg := prometheus.NewRegistry()
	reg.MustRegister(kafka.NewCollector())
	before := gather(t, reg)

	p, err := kafka.Dial(cfg)
	require.NoError(t, err)
	release, held := make(chan struct{}), make(chan struct{})
	b.Cluster().ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		b.Cluster().DropControl() // one request only: a retry after a client timeout passes
		close(held)
		<-release // the broker's request loop is frozen
		return nil, nil, false
	})
	sent := make(chan error, 1)
	go func() {
		sent <- p.Send(context.Background(), []kafka.Record{{Topic: cfg.TopicChanges, Key: "1", Value: []byte(`{"a":1}`)}})[0]
	}()
	<-held
	inFlight := func() float64 { return gather(t, reg)["msgx_kafka_requests_in_flight"].GetGauge().GetValue() }
	require.Eventually(t, func() bool { return inFlight() == 1 }, 10*time.Second, time.Millisecond, "the held produce request is in flight")
	close(release)
	require.NoError(t, <-sent)
	require.NoError(t, p.Close())

	after := gather(t, reg)
	require.Greater(t, after["msgx_kafka_outgoing_bytes_total"].GetCounter().GetValue(), before["msgx_kafka_outgoing_bytes_total"].GetCounter().GetValue())
	require.Greater(t, after["msgx_kafka_records_sent_total"].GetCounter().GetValue(), before["msgx_kafka_records_sent_total"].GetCounter().GetValue())
	lat := after["msgx_kafka_request_latency_seconds"].GetSummary()
	require.Greater(t, lat.GetSampleCount(), before["msgx_kafka_request_latency_seconds"].GetSummary().GetSampleCount())
	require.Len(t, lat.GetQuantile(), 3)
	require.Zero(t, after["msgx_kafka_requests_in_flight"].GetGauge().GetValue(), "every request answered")
}

func gather(t *testing.T, reg *prometheus.Registry) map[string]*dto.Metric {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	out := map[string]*dto.Metric{}
	for _, mf := range mfs {
		require.Len(t, mf.GetMetric(), 1, mf.GetName())
		out[mf.GetName()] = mf.GetMetric()[0]
	}
	return out
}
