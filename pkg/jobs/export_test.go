package jobs

import (
	"context"

	"github.com/msgx/msgx/pkg/leader"
)

// Tick runs the scheduler's check once.
func (j *Jobs) Tick(ctx context.Context, lease leader.Lease) error { return j.tick(ctx, lease) }

// ProcStateColumns is the column list the archive moves.
const ProcStateColumns = procStateColumns
