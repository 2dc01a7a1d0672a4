package request

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics of requests. Each binary registers the ones it moves; the gauges are the jobs stage's.
type Metrics struct {
	Open       *prometheus.GaugeVec   // open requests by kind
	OldestOpen *prometheus.GaugeVec   // age of the oldest open request by kind, seconds
	Outcomes   *prometheus.CounterVec // kind, outcome: registered, sent, done, expired, superseded
	Responses  *prometheus.CounterVec // kind, result: matched, no-open-request, awaiting-send
	Triggers   *prometheus.CounterVec // trigger, result: fired, covered, rate-limited, shadow
}

// Outcome labels.
const (
	OutcomeRegistered = "registered"
	OutcomeSent       = "sent"
	OutcomeDone       = "done"
	OutcomeExpired    = "expired"
	OutcomeSuperseded = "superseded"
)

// Trigger results.
const (
	TriggerFired       = "fired"
	TriggerCovered     = "covered" // open requests already cover every day (or the list) it asked for
	TriggerRateLimited = "rate-limited"
	TriggerShadow      = "shadow"
)

// NewMetrics creates the request metrics and registers them on reg when it is not nil. Every
// series exists from the start (at 0), so alerts on increases see the first event.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := newMetrics()
	if reg != nil {
		reg.MustRegister(m.Open, m.OldestOpen, m.Outcomes, m.Responses, m.Triggers)
	}
	return m
}

// NewProcessorMetrics creates the request metrics and registers only the counters the processor
// moves (RESP guard, triggers, outcomes) on reg: the open-request gauges are the jobs stage's.
func NewProcessorMetrics(reg prometheus.Registerer) *Metrics {
	m := newMetrics()
	if reg != nil {
		reg.MustRegister(m.Outcomes, m.Responses, m.Triggers)
	}
	return m
}

func newMetrics() *Metrics {
	m := &Metrics{
		Open: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "msgx_requests_open", Help: "Open requests to the AODB (REGISTERED, SENT, WAITING) by kind (RQFD, RQRD).",
		}, []string{"kind"}),
		OldestOpen: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "msgx_requests_oldest_open_seconds", Help: "Age since registration of the oldest open request by kind; 0 when none.",
		}, []string{"kind"}),
		Outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "msgx_requests_total", Help: "Requests to the AODB by kind and outcome (registered, sent, done, expired, superseded).",
		}, []string{"kind", "outcome"}),
		Responses: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "msgx_request_responses_total", Help: "RESP messages by kind and guard result (matched, no-open-request, awaiting-send: retried until its request's send is confirmed).",
		}, []string{"kind", "result"}),
		Triggers: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "msgx_request_triggers_total", Help: "Automatic request triggers by trigger (bootstrap, self-heal) and result (fired, covered, rate-limited, shadow).",
		}, []string{"trigger", "result"}),
	}
	for _, k := range []Kind{Schedule, List} {
		m.Open.WithLabelValues(string(k))
		m.OldestOpen.WithLabelValues(string(k))
		for _, o := range []string{OutcomeRegistered, OutcomeSent, OutcomeDone, OutcomeExpired, OutcomeSuperseded} {
			m.Outcomes.WithLabelValues(string(k), o)
		}
		for _, r := range []string{"matched", SkipNoOpenRequest} {
			m.Responses.WithLabelValues(string(k), r)
		}
	}
	for _, t := range []Origin{Bootstrap, SelfHeal} {
		for _, r := range []string{TriggerFired, TriggerRateLimited, TriggerShadow} {
			m.Triggers.WithLabelValues(string(t), r)
		}
	}
	return m
}
