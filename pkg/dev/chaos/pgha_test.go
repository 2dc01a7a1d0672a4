package chaos

import (
	"context"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/stretchr/testify/require"
)

// TestScrapeHistogram reads the marker wait histogram and the held markers counter as a
// binary's /metrics serves them (a registry through promhttp), beside other series.
func TestScrapeHistogram(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	wait := prometheus.NewHistogram(prometheus.HistogramOpts{Name: markerWaitMetric, Help: "wait", Buckets: []float64{0.01, 0.1, 1}})
	held := prometheus.NewCounter(prometheus.CounterOpts{Name: markersHeldMetric, Help: "held"})
	other := prometheus.NewHistogram(prometheus.HistogramOpts{Name: markerWaitMetric + "_other", Help: "not this one", Buckets: []float64{5}})
	reg.MustRegister(wait, held, other)
	for _, v := range []float64{0.005, 0.05, 0.05, 0.5, 3} {
		wait.Observe(v)
	}
	other.Observe(1)
	held.Add(7)
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer srv.Close()

	h, err := scrapeHistogram(context.Background(), strings.TrimPrefix(srv.URL, "http://"), markerWaitMetric, markersHeldMetric)
	require.NoError(t, err)
	require.Equal(t, []float64{0.01, 0.1, 1, math.Inf(1)}, h.bounds)
	require.Equal(t, []float64{1, 3, 4, 5}, h.counts)
	require.Equal(t, 5.0, h.count)
	require.InDelta(t, 3.605, h.sum, 1e-9)
	require.Equal(t, 7.0, h.other)
	require.Equal(t, "100ms", h.quantile(0.5))
	require.Equal(t, "+Inf", h.quantile(0.99))

	none := httptest.NewServer(http.NotFoundHandler())
	defer none.Close()
	_, err = scrapeHistogram(context.Background(), strings.TrimPrefix(none.URL, "http://"), markerWaitMetric, markersHeldMetric)
	require.ErrorContains(t, err, "404", "no metrics page")
}
