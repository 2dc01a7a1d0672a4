package obs

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// HTTPMetrics times an API's requests: msgx_http_request_duration_seconds{handler,code}.
type HTTPMetrics struct {
	duration *prometheus.HistogramVec
}

// NewHTTPMetrics registers the request duration histogram on reg.
func NewHTTPMetrics(reg prometheus.Registerer) *HTTPMetrics {
	m := &HTTPMetrics{duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "msgx_http_request_duration_seconds",
		Help:    "API request duration until the response is written, by route pattern and status code (refusals included).",
		Buckets: []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10},
	}, []string{"handler", "code"})}
	reg.MustRegister(m.duration)
	return m
}

// Wrap times h under the label handler (its route pattern). The handler's code="200" series
// exists from the start (zero), so the family is exported before the first request.
func (m *HTTPMetrics) Wrap(handler string, h http.Handler) http.Handler {
	m.duration.WithLabelValues(handler, "200")
	return promhttp.InstrumentHandlerDuration(m.duration.MustCurryWith(prometheus.Labels{"handler": handler}), h)
}
