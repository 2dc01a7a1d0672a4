package processor

import (
	"context"
	"fmt"
	"time"

	"github.com/msgx/msgx/pkg/leader"
	"github.com/msgx/msgx/pkg/obs"
	"github.com/msgx/msgx/pkg/procstate"
)

// gaugePeriod is how often gaugeLoop counts while counting is cheap.
const gaugePeriod = 5 * time.Second

// gaugeLoop refreshes the gauges beside the pump, never on its path: the counts read every open
// or owed row, so their cost grows with the backlog, and the head must not wait for them
// (docs/benchmarks.md). A slow count spaces the next one out (obs.GaugePause).
func (p *Engine) gaugeLoop(ctx context.Context, lease leader.Lease) {
	defer lease.Stopped("gauges")
	obs.RefreshGauges(ctx, gaugePeriod, func() { lease.Tick("gauges") }, p.refreshGauges, func(err error) {
		p.log.Warn().Err(err).Msg("pump: refresh gauges")
	})
}

// refreshGauges updates the backlog and marker-owed gauges once.
func (p *Engine) refreshGauges(ctx context.Context) error {
	counts, err := procstate.CountByStatus(ctx, p.pool, procstate.StatusPending, procstate.StatusFailed)
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
