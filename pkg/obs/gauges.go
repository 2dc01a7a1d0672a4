package obs

import "time"

// gaugeShare is the most of one database backend's time a gauge refresh loop may take: a
// refresh that took d waits at least d × (1/gaugeShare − 1) before the next.
const gaugeShare = 0.05

// GaugePause is how long a loop that refreshes gauges from the database waits after a refresh
// that took took: its period, or longer when the refresh was slow. Counting a backlog reads
// every row of it (a 1,000,000-row backlog took 0.5 s a count), and a gauge must not load the
// database it observes: at most gaugeShare of a backend, however large the backlog.
func GaugePause(period, took time.Duration) time.Duration {
	return max(period, time.Duration(float64(took)*(1/gaugeShare-1)))
}
