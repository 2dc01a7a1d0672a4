package jobs

import (
	"context"
	"time"

	"github.com/msgx/msgx/pkg/request"
)

// Requests is the job name of the request sweep (docs/requests.md).
const Requests = "requests"

// RequestSweeper is the requests' periodic work (pkg/request.Sweeper): expire what timed out,
// send what is registered, move SENT to WAITING, refresh the gauges.
type RequestSweeper interface {
	Sweep(ctx context.Context) (request.SweepResult, error)
}

var _ RequestSweeper = (*request.Sweeper)(nil)

// WithRequests makes the jobs stage run the request sweep every interval. Call it before Run.
func (j *Jobs) WithRequests(s RequestSweeper, interval time.Duration) *Jobs {
	j.requests, j.requestsEvery = s, interval
	return j
}

// requestsTick runs the request sweep when it is due. A failure is logged; the sweep runs again
// at its next turn.
func (j *Jobs) requestsTick(ctx context.Context, now time.Time) {
	if j.requests == nil || now.Before(j.nextRequests) {
		return
	}
	j.nextRequests = now.Add(j.requestsEvery)
	res, err := j.requests.Sweep(ctx)
	if err != nil && ctx.Err() == nil {
		j.log.Warn().Err(err).Msg("jobs: request sweep")
	}
	if res.Expired+res.Sent+res.Waiting > 0 {
		j.log.Info().Int("expired", res.Expired).Int("sent", res.Sent).Int("waiting", res.Waiting).Msg("jobs: request sweep")
	}
}
