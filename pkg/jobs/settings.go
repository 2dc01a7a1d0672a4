package jobs

import (
	"time"

	"github.com/msgx/msgx/pkg/mailbox"
	"github.com/msgx/msgx/pkg/settings"
)

// Resolve completes the jobs' own settings with the process's they use: the airport time zone,
// shadow mode and the processed value of the mailbox, and the bound of one mailbox call.
func (c Config) Resolve(p settings.Process, mb mailbox.Config, leaderSession time.Duration) Config {
	c.Shadow, c.ProcessedValue = mb.Shadow, mb.ProcessedValue
	// A mailbox call runs while the claimed rows' transaction waits: keep it well inside the
	// PostgreSQL idle-in-transaction timeout the pool sets (the leader session timeout).
	c.MarkTimeout = min(p.DBTimeout, leaderSession/2)
	c.HistoryBatch = min(c.Batch, c.HistoryBatch)
	c.Location = p.Location()
	return c
}
