package obs

import (
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
)

// poolCollector exports one pgxpool's statistics (pool.Stat() at scrape time).
type poolCollector struct {
	pool                                       *pgxpool.Pool
	acquired, idle, total, max                 *prometheus.Desc
	acquires, acquireSeconds, empty, cancelled *prometheus.Desc
}

// RegisterPool registers the statistics of pool on reg as msgx_pg_pool_*{pool=name}: every
// binary's main pool (pkg/daemon) and ingest's API pool.
func RegisterPool(reg prometheus.Registerer, name string, pool *pgxpool.Pool) error {
	l := prometheus.Labels{"pool": name}
	d := func(name, help string) *prometheus.Desc { return prometheus.NewDesc(name, help, nil, l) }
	return reg.Register(poolCollector{
		pool:           pool,
		acquired:       d("msgx_pg_pool_acquired_connections", "PostgreSQL connections in use."),
		idle:           d("msgx_pg_pool_idle_connections", "PostgreSQL connections idle in the pool."),
		total:          d("msgx_pg_pool_total_connections", "PostgreSQL connections open (acquired, idle and being opened)."),
		max:            d("msgx_pg_pool_max_connections", "Size limit of the pool (MSGX_PG_MAX_CONNS, MSGX_API_PG_MAX_CONNS)."),
		acquires:       d("msgx_pg_pool_acquires_total", "Connections acquired from the pool."),
		acquireSeconds: d("msgx_pg_pool_acquire_duration_seconds_total", "Time spent acquiring connections (waits included)."),
		empty:          d("msgx_pg_pool_empty_acquires_total", "Acquires that had to wait for a connection (the pool was empty): a pool too small or connections held too long."),
		cancelled:      d("msgx_pg_pool_canceled_acquires_total", "Acquires cancelled by their context while waiting."),
	})
}

// Describe sends the descriptors.
func (c poolCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.acquired, c.idle, c.total, c.max, c.acquires, c.acquireSeconds, c.empty, c.cancelled} {
		ch <- d
	}
}

// Collect reads pool.Stat().
func (c poolCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.pool.Stat()
	gauge := func(d *prometheus.Desc, v float64) { ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v) }
	counter := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v)
	}
	gauge(c.acquired, float64(s.AcquiredConns()))
	gauge(c.idle, float64(s.IdleConns()))
	gauge(c.total, float64(s.TotalConns()))
	gauge(c.max, float64(s.MaxConns()))
	counter(c.acquires, float64(s.AcquireCount()))
	counter(c.acquireSeconds, s.AcquireDuration().Seconds())
	counter(c.empty, float64(s.EmptyAcquireCount()))
	counter(c.cancelled, float64(s.CanceledAcquireCount()))
}
