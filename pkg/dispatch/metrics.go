package dispatch

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/msgx/msgx/pkg/event"
	"github.com/msgx/msgx/pkg/outbox"
)

type metrics struct {
	pending   *prometheus.GaugeVec
	deadNow   *prometheus.GaugeVec
	oldest    *prometheus.GaugeVec
	sent      *prometheus.CounterVec
	retried   *prometheus.CounterVec
	dead      *prometheus.CounterVec
	outages   prometheus.Counter
	batchSize *prometheus.HistogramVec
	latency   *prometheus.HistogramVec
	lag       *prometheus.HistogramVec

	timeline        prometheus.Gauge
	timelineChanges prometheus.Counter
	lostTail        prometheus.Counter
	heldSkipped     prometheus.Counter
	heldConflicts   prometheus.Counter
	epoch           prometheus.Gauge
	restores        *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer, oldestUnacked func() float64, lagSample int) (*metrics, error) {
	target := []string{"target"}
	m := &metrics{
		pending: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "msgx_dispatch_pending", Help: "PENDING events per target (KAFKA:schd: flights whose newest state is unsent).",
		}, target),
		deadNow: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "msgx_dispatch_dead_letters", Help: "DEAD events (the DLQ) per target.",
		}, target),
		oldest: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "msgx_dispatch_oldest_pending_age_seconds", Help: "Age of the oldest PENDING event per target (0 when none).",
		}, target),
		sent: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "msgx_dispatch_sent_total", Help: "Events marked SENT after the broker acknowledged (schd: every represented event).",
		}, target),
		retried: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "msgx_dispatch_retried_total", Help: "Failed send attempts that will be retried after backoff.",
		}, target),
		dead: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "msgx_dispatch_dead_total", Help: "Events that went DEAD (max attempts or non-retryable).",
		}, target),
		outages: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "msgx_dispatch_outage_total", Help: "Batches that failed whole while no broker answered (no attempt counted).",
		}),
		batchSize: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "msgx_dispatch_batch_records", Help: "Records per produce batch.",
			Buckets: []float64{1, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000},
		}, target),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "msgx_dispatch_produce_seconds", Help: "Time to produce one batch until every record is answered.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}, target),
		lag: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "msgx_end_to_end_lag_seconds",
			Help:    lagHelp(lagSample),
			Buckets: []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600},
		}, target),
		timeline: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "msgx_db_timeline", Help: "The PostgreSQL timeline the dispatcher's term started on (every promotion raises it).",
		}),
		timelineChanges: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "msgx_db_timeline_changes_total", Help: "Terms that started on a database timeline other than the one recorded before (a promotion or a restore).",
		}),
		lostTail: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "msgx_kafka_records_beyond_database_total", Help: "Change records found on Kafka at a term's start for versions the database had no event for: the database lost transactions Kafka had seen.",
		}),
		heldSkipped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "msgx_dispatch_already_on_kafka_total", Help: "KAFKA:msg events marked SENT without sending: Kafka already held their version.",
		}),
		heldConflicts: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "msgx_dispatch_already_on_kafka_conflicts_total", Help: "Of those, events whose value differs from the record Kafka holds for their version.",
		}),
		epoch: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "msgx_db_restore_epoch", Help: "The database's restore epoch when the dispatcher's term started (event ids carry timeline + epoch; raised after a restore behind ids Kafka holds).",
		}),
		restores: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "msgx_db_restores_total", Help: "Raises of the restore epoch at a term's start, by why the database was found behind the event ids Kafka holds.",
		}, []string{"kind"}),
	}
	unacked := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "msgx_dispatch_oldest_unacked_send_age_seconds",
		Help: "Age of the oldest send still waiting for the broker's answer (0 when none): grows while a broker hangs.",
	}, oldestUnacked)
	for _, c := range []prometheus.Collector{unacked, m.pending, m.deadNow, m.oldest, m.sent, m.retried, m.dead, m.outages, m.batchSize, m.latency, m.lag,
		m.timeline, m.timelineChanges, m.lostTail, m.heldSkipped, m.heldConflicts, m.epoch, m.restores} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	// Every series exists from the start (at 0), so alerts on rates see the first dead letter.
	for _, k := range []string{outbox.RestoreIDsBehind, outbox.RestoreOtherCluster, outbox.RestoreOlderTimeline, outbox.RestoreConfirmed} {
		m.restores.WithLabelValues(k)
	}
	for _, t := range event.Targets {
		m.sent.WithLabelValues(t)
		m.retried.WithLabelValues(t)
		m.dead.WithLabelValues(t)
	}
	return m, nil
}

// lagHelp is the lag histogram's help: what it measures, and for which records (lagSampled).
func lagHelp(sample int) string {
	const what = "From ingest's enqueue of the mailbox message (its first sight of the committed row) to the broker's acknowledgement of the record it caused, per target"
	if sample <= 1 {
		return what + ", every record."
	}
	return fmt.Sprintf("%s, for a sample: the records of one message in %d, picked by a hash of the message id.", what, sample)
}
