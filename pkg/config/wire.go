package config

import (
	"time"

	"github.com/msgx/msgx/pkg/dispatch"
	"github.com/msgx/msgx/pkg/ingest"
	"github.com/msgx/msgx/pkg/jobs"
	"github.com/msgx/msgx/pkg/outbox"
	"github.com/msgx/msgx/pkg/processor"
	"github.com/msgx/msgx/pkg/request"
)

// The methods below give each stage its configuration: its own settings plus the process's
// shared ones it uses. The binaries call them; nothing else copies settings.

// IngestConfig is the poll loop's configuration.
func (c Config) IngestConfig() ingest.Config {
	ic := c.Ingest
	ic.DBTimeout = c.DBTimeout
	return ic
}

// CompatConfig is the compat entry's configuration.
func (c Config) CompatConfig() ingest.CompatConfig {
	cc := c.Compat
	cc.Shadow, cc.Location, cc.DBTimeout = c.Shadow, c.Location(), c.DBTimeout
	return cc
}

// ProcessorConfig is the pump's configuration.
func (c Config) ProcessorConfig() processor.Config {
	pc := c.Processor
	pc.MaxAttempts, pc.BackoffBase, pc.BackoffMax = c.MaxAttempts, c.BackoffBase, c.BackoffMax
	// New rows wake the pump; polling is the fallback, never slower than ingest's own poll.
	pc.IdlePoll = min(c.Ingest.PollInterval, 100*time.Millisecond)
	pc.Location, pc.Shadow, pc.ProcessedValue = c.Location(), c.Shadow, c.MailboxProcessedAs
	pc.MarkerTimeout = c.DBTimeout
	return pc
}

// OutboxPolicy is the retry policy of delivery (the same as processing).
func (c Config) OutboxPolicy() outbox.Policy {
	return outbox.Policy{MaxAttempts: c.MaxAttempts, BackoffBase: c.BackoffBase, BackoffMax: c.BackoffMax}
}

// DispatchConfig is the dispatcher's configuration.
func (c Config) DispatchConfig() dispatch.Config {
	dc := c.Dispatch
	dc.TopicChanges, dc.TopicState = c.Kafka.TopicChanges, c.Kafka.TopicState
	dc.ErrorWait = c.BackoffMax
	return dc
}

// JobsConfig is the jobs' configuration.
func (c Config) JobsConfig() jobs.Config {
	jc := c.Jobs
	jc.Shadow, jc.ProcessedValue = c.Shadow, c.MailboxProcessedAs
	// A mailbox call runs while the claimed rows' transaction waits: keep it well inside the
	// PostgreSQL idle-in-transaction timeout the pool sets (the leader session timeout).
	jc.MarkTimeout = min(c.DBTimeout, c.Leader.SessionTimeout/2)
	jc.HistoryBatch = min(c.Jobs.Batch, jc.HistoryBatch)
	jc.Location = c.Location()
	return jc
}

// RequestConfig is the requests' configuration (store, sender, sweep).
func (c Config) RequestConfig() request.Config {
	rc := c.Requests
	rc.Location = c.Location()
	return rc
}

// TriggerConfig is the automatic requests' configuration; shadow mode registers nothing.
func (c Config) TriggerConfig() request.TriggerConfig {
	tc := c.Triggers
	tc.Shadow, tc.Location = c.Shadow, c.Location()
	return tc
}
