package obs

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/dev/testdb"
)

func families(t *testing.T, reg *prometheus.Registry) map[string]*dto.MetricFamily {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	out := map[string]*dto.MetricFamily{}
	for _, mf := range mfs {
		out[mf.GetName()] = mf
	}
	return out
}

func value(t *testing.T, mfs map[string]*dto.MetricFamily, name string) float64 {
	t.Helper()
	mf, ok := mfs[name]
	require.True(t, ok, "%s not exported", name)
	require.Len(t, mf.GetMetric(), 1, name)
	m := mf.GetMetric()[0]
	require.Equal(t, "pool", m.GetLabel()[0].GetName())
	require.Equal(t, "processor", m.GetLabel()[0].GetValue())
	if m.GetCounter() != nil {
		return m.GetCounter().GetValue()
	}
	return m.GetGauge().GetValue()
}

// TestPoolMetrics: the pool statistics follow pool.Stat(): held connections are acquired,
// released ones idle, an acquire given up while the pool is exhausted is counted as cancelled.
func TestPoolMetrics(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	reg := prometheus.NewRegistry()
	require.NoError(t, RegisterPool(reg, "processor", db.Pool))
	ctx := context.Background()

	max := db.Pool.Stat().MaxConns()
	held := make([]interface{ Release() }, 0, max)
	for range max {
		c, err := db.Pool.Acquire(ctx)
		require.NoError(t, err)
		held = append(held, c)
	}
	mfs := families(t, reg)
	require.Equal(t, float64(max), value(t, mfs, "msgx_pg_pool_acquired_connections"))
	require.Equal(t, float64(max), value(t, mfs, "msgx_pg_pool_max_connections"))
	require.Equal(t, float64(max), value(t, mfs, "msgx_pg_pool_total_connections"))
	acquires := value(t, mfs, "msgx_pg_pool_acquires_total")
	require.GreaterOrEqual(t, acquires, float64(max))
	// The pool opens connections lazily: the first acquire found it empty and waited for one.
	require.GreaterOrEqual(t, value(t, mfs, "msgx_pg_pool_empty_acquires_total"), 1.0)

	// The pool is full: this acquire waits until its context ends.
	wctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	_, err := db.Pool.Acquire(wctx)
	cancel()
	require.Error(t, err)
	for _, c := range held {
		c.Release()
	}
	mfs = families(t, reg)
	require.Equal(t, 0.0, value(t, mfs, "msgx_pg_pool_acquired_connections"))
	idle := value(t, mfs, "msgx_pg_pool_idle_connections")
	require.Positive(t, idle)
	require.LessOrEqual(t, idle, value(t, mfs, "msgx_pg_pool_total_connections"))
	require.Equal(t, 1.0, value(t, mfs, "msgx_pg_pool_canceled_acquires_total"))
	require.Positive(t, value(t, mfs, "msgx_pg_pool_acquire_duration_seconds_total"))
}

// TestHTTPMetrics: each request is timed under its route pattern and status code; the family is
// exported before the first request (the zero code="200" series).
func TestHTTPMetrics(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	m := NewHTTPMetrics(reg)
	h := m.Wrap("GET /flights/{flid}", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusNotFound)
	}))
	for range 3 {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/flights/1", nil))
	}
	mf := families(t, reg)["msgx_http_request_duration_seconds"]
	require.NotNil(t, mf)
	counts := map[string]uint64{} // code → requests, all under the route pattern
	for _, m := range mf.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		require.Equal(t, "GET /flights/{flid}", labels["handler"])
		counts[labels["code"]] = m.GetHistogram().GetSampleCount()
	}
	require.Equal(t, map[string]uint64{"200": 0, "404": 3}, counts, "the 200 series exists from the start, at zero")
}

// TestHealthzAndDrain: /healthz answers 503 with the liveness error; Drain makes /readyz 503.
func TestHealthzAndDrain(t *testing.T) {
	t.Parallel()
	var live error
	s := NewServer("127.0.0.1:0", prometheus.NewRegistry(), nil, func() (bool, int64) { return true, 3 }, time.Second, zerolog.Nop())
	s.SetLiveness(func() error { return live })
	get := func(path string) (int, string) {
		rec := httptest.NewRecorder()
		s.handler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		return rec.Code, rec.Body.String()
	}
	code, body := get("/healthz")
	require.Equal(t, http.StatusOK, code, body)
	live = errors.New("stage loop pump has not ticked for 6m0s")
	code, body = get("/healthz")
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.Equal(t, "unhealthy: stage loop pump has not ticked for 6m0s\n", body)

	code, body = get("/readyz")
	require.Equal(t, http.StatusOK, code, body)
	s.Drain()
	code, body = get("/readyz")
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.True(t, strings.Contains(body, `"draining":true`), body)
}

// TestProfilesOnlyWhenAsked: /debug/pprof/ is served only with MSGX_PPROF (ServeProfiles).
func TestProfilesOnlyWhenAsked(t *testing.T) {
	t.Parallel()
	s := NewServer("127.0.0.1:0", prometheus.NewRegistry(), nil, func() (bool, int64) { return true, 3 }, time.Second, zerolog.Nop())
	get := func(path string) (int, string) {
		rec := httptest.NewRecorder()
		s.handler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		return rec.Code, rec.Body.String()
	}
	code, _ := get("/debug/pprof/heap")
	require.Equal(t, http.StatusNotFound, code)
	s.ServeProfiles()
	code, body := get("/debug/pprof/heap?debug=1")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "heap profile")
	code, body = get("/debug/pprof/")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "goroutine")
}
