package main

import (
	"github.com/msgx/msgx/pkg/jobs"
	"github.com/msgx/msgx/pkg/leader"
	"github.com/msgx/msgx/pkg/mailbox"
	"github.com/msgx/msgx/pkg/replication"
	"github.com/msgx/msgx/pkg/request"
	"github.com/msgx/msgx/pkg/settings"
)

// Config is the jobs binary's configuration: the process's settings and the parts it runs.
type Config struct {
	settings.Process
	Leader  leader.Config
	Mailbox mailbox.Config
	Markers replication.Config

	Jobs     jobs.Config
	Requests request.Config
}

// load reads and validates the environment.
func load() (Config, error) { return settings.Load[Config](settings.RoleJobs) }

// Validate reports every bad value, one line each; in production also the refusals.
func (c Config) Validate() error {
	jc := c.Jobs // its own settings; derived values follow from settings checked here
	jc.Location = c.Location()
	return settings.Check(c.Process, c.Leader, c.Mailbox, c.Markers, jc, c.requestConfig())
}

// jobsConfig is the jobs' configuration.
func (c Config) jobsConfig() jobs.Config {
	return c.Jobs.Resolve(c.Process, c.Mailbox, c.Leader.SessionTimeout)
}

// requestConfig is the request sweep's configuration.
func (c Config) requestConfig() request.Config {
	rc := c.Requests
	rc.Location = c.Location()
	return rc
}
