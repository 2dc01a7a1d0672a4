package console

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
)

// rateWindows are the windows the pipeline's rates can be read over (?window=); the first is the
// default.
var rateWindows = []time.Duration{5 * time.Minute, time.Minute, 15 * time.Minute, time.Hour}

// Rate is what the pipeline did over a window before now, from proc_state (every console
// replica shows the same): messages finished by outcome and messages enqueued, per minute.
type Rate struct {
	Window   time.Duration
	Windows  []time.Duration
	Finished map[string]float64 // per minute, by outcome (SUCCEEDED, SKIPPED, DEAD)
	Total    float64            // finished per minute, all outcomes
	Ingested float64            // enqueued per minute
}

// rateWindow reads ?window= (one of rateWindows; anything else is the default).
func rateWindow(q url.Values) time.Duration {
	d, err := time.ParseDuration(q.Get("window"))
	if err != nil || !slices.Contains(rateWindows, d) {
		return rateWindows[0]
	}
	return d
}

// rates counts, in proc_state, the messages finished in (now-window, now] by outcome and the
// messages enqueued in it (rateSQL).
func (s *Server) rates(ctx context.Context, now time.Time, window time.Duration) (Rate, error) {
	r := Rate{Window: window, Windows: rateWindows, Finished: map[string]float64{}}
	rows, err := s.d.Pool.Query(ctx, rateSQL, now.Add(-window), now)
	if err != nil {
		return r, fmt.Errorf("count finished messages: %w", err)
	}
	m := window.Minutes()
	var what string
	var n int64
	_, err = pgx.ForEachRow(rows, []any{&what, &n}, func() error {
		if what == "ingested" {
			r.Ingested = float64(n) / m
			return nil
		}
		r.Finished[what] = float64(n) / m
		r.Total += float64(n) / m
		return nil
	})
	if err != nil {
		return r, fmt.Errorf("count finished messages: %w", err)
	}
	return r, nil
}
