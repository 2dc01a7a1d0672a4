package console

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the console's own series (next to the Go and process collectors of pkg/obs).
type Metrics struct {
	logins     *prometheus.CounterVec
	oidcLogins *prometheus.CounterVec
	actions    *prometheus.CounterVec
	pages      *prometheus.HistogramVec
}

// NewMetrics registers the console's metrics on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		logins: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "msgx_console_logins_total", Help: "Console log-in attempts by outcome (ok, refused).",
		}, []string{"outcome"}),
		oidcLogins: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "msgx_console_oidc_logins_total", Help: "Console log-ins through the OpenID Connect provider by outcome (ok, refused, no_group: in no mapped group, revoked: msgxctl token revoke oidc:NAME, unavailable: the provider could not be reached, throttled).",
		}, []string{"outcome"}),
		actions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "msgx_console_actions_total", Help: "Console actions by path and outcome (done, dry_run, refused).",
		}, []string{"path", "outcome"}),
		pages: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "msgx_console_page_seconds", Help: "Time to build a console page, by route.",
			Buckets: []float64{.005, .01, .025, .05, .1, .2, .5, 1, 2},
		}, []string{"route"}),
	}
	reg.MustRegister(m.logins, m.oidcLogins, m.actions, m.pages)
	return m
}
