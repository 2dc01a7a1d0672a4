package jobs

import (
	"context"

	"github.com/msgx/msgx/pkg/leader"
)

// Tick runs the scheduler's check once.
func (j *Jobs) Tick(ctx context.Context, lease leader.Lease) error { return j.tick(ctx, lease) }

// DetailTables lists the detail tables the history document aggregates.
func DetailTables() []string {
	out := make([]string, len(detailTables))
	for i, d := range detailTables {
		out[i] = d.name
	}
	return out
}

// ProcStateColumns is the column list the archive moves.
const ProcStateColumns = procStateColumns
