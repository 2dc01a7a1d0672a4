package kafka

import (
	"github.com/prometheus/client_golang/prometheus"
	gometrics "github.com/rcrowley/go-metrics"
)

// clientMetrics is the go-metrics registry every sarama client of the process reports to
// (newSaramaConfig sets it), so that one collector sees the producers of every leadership term.
// The clients share each metric by name (sarama's GetOrRegister), so the counters sum over the
// process's clients and never restart.
var clientMetrics gometrics.Registry = keepRegistry{gometrics.NewRegistry()}

// keepRegistry ignores unregistration: sarama unregisters a closed client's metrics by name,
// which would drop the ones the process's other clients still update.
type keepRegistry struct{ gometrics.Registry }

// Unregister keeps the metric.
func (keepRegistry) Unregister(string) {}

// UnregisterAll keeps every metric.
func (keepRegistry) UnregisterAll() {}

// The sarama metrics bridged to Prometheus (sarama's names, github.com/IBM/sarama/sarama.go).
const (
	saramaRequestLatency = "request-latency-in-ms" // histogram over every broker
	saramaOutgoingBytes  = "outgoing-byte-rate"    // meter: Count is the total
	saramaInFlight       = "requests-in-flight"    // counter: current value
	saramaRecordsSent    = "record-send-rate"      // meter: Count is the total
)

// collector exports the sarama client metrics that matter to an operator.
type collector struct {
	latency, outgoing, inFlight, records *prometheus.Desc
}

// NewCollector is the Prometheus collector of the process's sarama clients: request latency
// (summary of sarama's sampled histogram), bytes sent, requests in flight and records sent.
func NewCollector() prometheus.Collector {
	return collector{
		latency: prometheus.NewDesc("msgx_kafka_request_latency_seconds",
			"Kafka request latency over every broker (sarama's sampled histogram: quantiles of the recent sample; sum is mean × count).", nil, nil),
		outgoing: prometheus.NewDesc("msgx_kafka_outgoing_bytes_total",
			"Bytes the Kafka client sent to the brokers (every client of the process).", nil, nil),
		inFlight: prometheus.NewDesc("msgx_kafka_requests_in_flight",
			"Kafka requests sent and not yet answered.", nil, nil),
		records: prometheus.NewDesc("msgx_kafka_records_sent_total",
			"Records the Kafka producers sent (every client of the process).", nil, nil),
	}
}

// Describe sends the descriptors.
func (c collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.latency
	ch <- c.outgoing
	ch <- c.inFlight
	ch <- c.records
}

// Collect reads the go-metrics registry.
func (c collector) Collect(ch chan<- prometheus.Metric) {
	var count int64
	var mean float64
	quantiles := map[float64]float64{0.5: 0, 0.9: 0, 0.99: 0}
	if h, ok := clientMetrics.Get(saramaRequestLatency).(gometrics.Histogram); ok {
		s := h.Snapshot()
		count, mean = s.Count(), s.Mean()
		ps := s.Percentiles([]float64{0.5, 0.9, 0.99})
		quantiles = map[float64]float64{0.5: ps[0] / 1000, 0.9: ps[1] / 1000, 0.99: ps[2] / 1000}
	}
	ch <- prometheus.MustNewConstSummary(c.latency, uint64(count), mean*float64(count)/1000, quantiles)
	ch <- prometheus.MustNewConstMetric(c.outgoing, prometheus.CounterValue, float64(meterCount(saramaOutgoingBytes)))
	ch <- prometheus.MustNewConstMetric(c.records, prometheus.CounterValue, float64(meterCount(saramaRecordsSent)))
	var inFlight int64
	if cnt, ok := clientMetrics.Get(saramaInFlight).(gometrics.Counter); ok {
		inFlight = cnt.Count()
	}
	ch <- prometheus.MustNewConstMetric(c.inFlight, prometheus.GaugeValue, float64(inFlight))
}

func meterCount(name string) int64 {
	if m, ok := clientMetrics.Get(name).(gometrics.Meter); ok {
		return m.Snapshot().Count()
	}
	return 0
}
