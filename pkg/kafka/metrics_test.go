package kafka_test

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/dev/kafkatest"
	"github.com/msgx/msgx/pkg/kafka"
)

// TestCollectorExportsClientMetrics: after a send, the bridged sarama metrics show the bytes
// sent, the records and the request latencies; a closed client does not take them away.
func TestCollectorExportsClientMetrics(t *testing.T) {
	t.Parallel()
	_, cfg := kafkatest.Broker(t)
	reg := prometheus.NewRegistry()
	reg.MustRegister(kafka.NewCollector())
	before := gather(t, reg)

	p, err := kafka.Dial(cfg)
	require.NoError(t, err)
	require.NoError(t, p.Send(context.Background(), []kafka.Record{{Topic: cfg.TopicChanges, Key: "1", Value: []byte(`{"a":1}`)}})[0])
	require.NoError(t, p.Close())

	after := gather(t, reg)
	require.Greater(t, after["msgx_kafka_outgoing_bytes_total"].GetCounter().GetValue(), before["msgx_kafka_outgoing_bytes_total"].GetCounter().GetValue())
	require.Greater(t, after["msgx_kafka_records_sent_total"].GetCounter().GetValue(), before["msgx_kafka_records_sent_total"].GetCounter().GetValue())
	lat := after["msgx_kafka_request_latency_seconds"].GetSummary()
	require.Greater(t, lat.GetSampleCount(), before["msgx_kafka_request_latency_seconds"].GetSummary().GetSampleCount())
	require.Len(t, lat.GetQuantile(), 3)
	require.GreaterOrEqual(t, after["msgx_kafka_requests_in_flight"].GetGauge().GetValue(), 0.0)
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
