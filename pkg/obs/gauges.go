package obs

import (
	"context"
	"time"

	"github.com/msgx/msgx/pkg/clock"
)

// gaugeShare is the most of one database backend's time a gauge refresh loop may take: a
// refresh that took d waits at least d × (1/gaugeShare − 1) before the next.
const gaugeShare = 0.05

// maxGaugePause bounds the pause: the loop ticks its lease once a turn, and a turn must stay
// well inside MSGX_LIVENESS_STALL (5 min by default) or a healthy leader would be restarted.
const maxGaugePause = time.Minute

// GaugePause is how long a loop that refreshes gauges from the database waits after a refresh
// that took took and ended with err: its period, or longer when the refresh was slow. Counting
// a backlog reads every row of it (a large backlog takes a noticeable part of a second), and a gauge
// must not load the database it observes: at most gaugeShare of a backend, however large the
// backlog, up to maxGaugePause. A failed refresh keeps the period: its time says how long the
// database took to fail (a connect timeout, an outage), not what a count costs.
func GaugePause(period, took time.Duration, err error) time.Duration {
	if err != nil {
		return period
	}
	return max(period, min(maxGaugePause, time.Duration(float64(took)*(1/gaugeShare-1))))
}

// RefreshGauges calls refresh until ctx ends, tick before each call, and waits GaugePause after
// it; failed hears each error that is not ctx's.
func RefreshGauges(ctx context.Context, period time.Duration, tick func(), refresh func(context.Context) error, failed func(error)) {
	for {
		tick()
		start := time.Now()
		err := refresh(ctx)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			failed(err)
		}
		if !clock.WallSleep(ctx, GaugePause(period, time.Since(start), err)) {
			return
		}
	}
}
