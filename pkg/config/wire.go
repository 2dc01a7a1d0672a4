package config

import (
	"github.com/msgx/msgx/pkg/jobs"
	"github.com/msgx/msgx/pkg/outbox"
	"github.com/msgx/msgx/pkg/request"
)

// The methods below give msgxctl a stage's configuration: its own settings plus the process's
// shared ones it uses. The service binaries compose their own (cmd/<binary>/config.go).

// OutboxPolicy is the retry policy of delivery (the same as processing).
func (c Config) OutboxPolicy() outbox.Policy { return outbox.Policy(c.Retry) }

// JobsConfig is the jobs' configuration.
func (c Config) JobsConfig() jobs.Config {
	return c.Jobs.Resolve(c.Process, c.Mailbox, c.Leader.SessionTimeout)
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
	tc.Shadow, tc.Location = c.Mailbox.Shadow, c.Location()
	return tc
}
