package processor

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the pump's Prometheus instruments.
type Metrics struct {
	headAge        prometheus.Gauge
	processed      *prometheus.CounterVec
	batchSize      prometheus.Histogram
	txSeconds      prometheus.Histogram
	contentDiffers prometheus.Counter
	identityReused prometheus.Counter
	readAhead      *prometheus.CounterVec
	Backlog        *prometheus.GaugeVec
	MarkerOwed     prometheus.Gauge
}

// NewMetrics registers the pump's metrics on reg (nil: not registered, for tests).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		headAge: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "msgx_pump_head_age_seconds", Help: "Age (since enqueue) of the current head message; 0 when idle.",
		}),
		processed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "msgx_pump_processed_total", Help: "Messages processed, by outcome status and error class.",
		}, []string{"status", "class"}),
		batchSize: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "msgx_pump_batch_messages", Help: "Messages committed per pump transaction.",
			// Up to the largest batch MSGX_PUMP_BATCH allows (Validate).
			Buckets: []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, maxBatch},
		}),
		txSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "msgx_pump_tx_seconds", Help: "Duration of one pump batch transaction.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14),
		}),
		contentDiffers: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "msgx_pump_content_differs_total", Help: "Duplicates by identity whose content differs from the first (PRE-7b broken upstream).",
		}),
		identityReused: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "msgx_pump_identity_reused_total", Help: "Messages whose identity key was bound to a message outside the identity window (SEQN reset or wrap): processed as new messages.",
		}),
		readAhead: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "msgx_pump_read_ahead_total",
			Help: "Head runs read and decoded while the batch before them committed, by what became of them: used (the next batch), moved (an open row appeared below it: read again), dropped (the batch before did not end with every message terminal, or the read failed).",
		}, []string{"result"}),
		Backlog: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "msgx_pump_backlog", Help: "Open proc_state rows by status (PENDING, FAILED).",
		}, []string{"status"}),
		MarkerOwed: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "msgx_pump_backfill_owed", Help: "Terminal rows whose mailbox marker is still owed.",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.headAge, m.processed, m.batchSize, m.txSeconds, m.contentDiffers, m.identityReused, m.readAhead, m.Backlog, m.MarkerOwed)
	}
	return m
}
