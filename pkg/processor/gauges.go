package processor

import (
	"context"
	"fmt"
	"time"

	"github.com/msgx/msgx/pkg/clock"
	"github.com/msgx/msgx/pkg/leader"
)

// gaugePeriod is how often gaugeLoop counts.
const gaugePeriod = 5 * time.Second

// gaugeLoop refreshes the gauges every gaugePeriod beside the pump, never on its path: the
// counts read every open or owed row, so their cost grows with the backlog, and the head must
// not wait for them (docs/benchmarks.md).
func (p *Engine) gaugeLoop(ctx context.Context, lease leader.Lease) {
	defer lease.Stopped("gauges")
	for {
		lease.Tick("gauges")
		if err := p.refreshGauges(ctx); err != nil && ctx.Err() == nil {
			p.log.Warn().Err(err).Msg("pump: refresh gauges")
		}
		if !clock.WallSleep(ctx, gaugePeriod) {
			return
		}
	}
}

// refreshGauges updates the backlog and marker-owed gauges once.
func (p *Engine) refreshGauges(ctx context.Context) error {
	counts, err := CountByStatus(ctx, p.pool, StatusPending, StatusFailed)
	if err != nil {
		return fmt.Errorf("count backlog: %w", err)
	}
	for s, v := range counts {
		p.metrics.Backlog.WithLabelValues(string(s)).Set(float64(v))
	}
	var n int64
	if err := p.pool.QueryRow(ctx, markerOwedSQL).Scan(&n); err != nil {
		return fmt.Errorf("count markers owed: %w", err)
	}
	p.metrics.MarkerOwed.Set(float64(n))
	return nil
}
