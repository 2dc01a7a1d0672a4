package main

import (
	"github.com/msgx/msgx/pkg/ingest"
	"github.com/msgx/msgx/pkg/leader"
	"github.com/msgx/msgx/pkg/mailbox"
	"github.com/msgx/msgx/pkg/settings"
)

// Config is the ingest binary's configuration: the process's settings and the parts it runs.
type Config struct {
	settings.Process
	Leader  leader.Config
	Mailbox mailbox.Config
	Ingest  ingest.Config
	Compat  ingest.CompatConfig
	API     ingest.APIConfig
}

// load reads and validates the environment.
func load() (Config, error) { return settings.Load[Config](settings.RoleIngest) }

// Validate reports every bad value, one line each; in production also the refusals.
func (c Config) Validate() error {
	return settings.Check(c.Process, c.Leader, c.Mailbox, c.Ingest, c.Compat,
		settings.Refusal(c.Compat.ShadowRefusal(c.Mailbox.Shadow)), c.API)
}

// pollConfig is the poll loop's configuration.
func (c Config) pollConfig() ingest.Config {
	ic := c.Ingest
	ic.PollInterval, ic.DBTimeout = c.Mailbox.PollInterval, c.DBTimeout
	return ic
}

// compatConfig is the compat entry's configuration.
func (c Config) compatConfig() ingest.CompatConfig {
	cc := c.Compat
	cc.Shadow, cc.Location, cc.DBTimeout = c.Mailbox.Shadow, c.Location(), c.DBTimeout
	return cc
}
