package main

import (
	"time"

	"github.com/msgx/msgx/pkg/daemon"
	"github.com/msgx/msgx/pkg/leader"
	"github.com/msgx/msgx/pkg/mailbox"
	"github.com/msgx/msgx/pkg/processor"
	"github.com/msgx/msgx/pkg/replication"
	"github.com/msgx/msgx/pkg/request"
	"github.com/msgx/msgx/pkg/settings"
)

// Config is the processor binary's configuration: the process's settings and the parts it runs.
type Config struct {
	settings.Process
	Leader  leader.Config
	Mailbox mailbox.Config
	Markers replication.Config
	settings.Retry

	Processor processor.Config
	Requests  request.Config
	Triggers  request.TriggerConfig
}

// load reads and validates the environment.
func load() (Config, error) { return settings.Load[Config](settings.RoleProcessor) }

// Validate reports every bad value, one line each; in production also the refusals.
func (c Config) Validate() error {
	return settings.Check(c.Process, c.Leader, c.Mailbox, c.Markers, c.Retry, c.Processor, c.requestConfig(), c.triggerConfig())
}

// pumpConfig is the pump's configuration.
func (c Config) pumpConfig() processor.Config {
	pc := c.Processor
	pc.MaxAttempts, pc.BackoffBase, pc.BackoffMax = c.MaxAttempts, c.BackoffBase, c.BackoffMax
	// New rows wake the pump; polling is the fallback, never slower than ingest's own poll.
	pc.IdlePoll = min(c.Mailbox.PollInterval, 100*time.Millisecond)
	pc.Location, pc.Shadow, pc.ProcessedValue = c.Location(), c.Mailbox.Shadow, c.Mailbox.ProcessedValue
	pc.MarkerTimeout = c.DBTimeout
	pc.ReadAhead = daemon.MemoryLimit() >= processor.ReadAheadMemory
	return pc
}

// requestConfig is the requests' configuration (the RESP guard's store).
func (c Config) requestConfig() request.Config {
	rc := c.Requests
	rc.Location = c.Location()
	return rc
}

// triggerConfig is the automatic requests' configuration; shadow mode registers nothing.
func (c Config) triggerConfig() request.TriggerConfig {
	tc := c.Triggers
	tc.Shadow, tc.Location = c.Mailbox.Shadow, c.Location()
	return tc
}
