package main

import (
	"github.com/msgx/msgx/pkg/envconf"
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
	var p envconf.Problems
	p.Join(c.Process.Validate())
	p.Join(c.Leader.Validate())
	p.Join(c.Mailbox.Validate())
	p.Join(c.Ingest.Validate())
	p.Join(c.Compat.Validate())
	p.Join(c.API.Validate())
	if c.Production() {
		p.Join(c.Process.ProductionRefusals())
		p.Join(c.Mailbox.ProductionRefusals())
		p.Join(c.Compat.ShadowRefusal(c.Mailbox.Shadow))
		p.Join(c.API.ProductionRefusals())
	}
	return p.Err()
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
