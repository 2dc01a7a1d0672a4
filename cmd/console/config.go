package main

import (
	"github.com/msgx/msgx/pkg/console/consoleconf"
	"github.com/msgx/msgx/pkg/leader"
	"github.com/msgx/msgx/pkg/outbox"
	"github.com/msgx/msgx/pkg/request"
	"github.com/msgx/msgx/pkg/settings"
)

// Config is the console's configuration: the process's settings and what its actions use (the
// outbox's retry policy, the request store, shadow mode). It never connects to MySQL or Kafka,
// so it reads none of their settings.
type Config struct {
	settings.Process
	Leader leader.Config // the session timeout bounds the pool's idle transactions
	settings.ShadowMode
	settings.Retry

	Requests request.Config
	Console  consoleconf.Config
}

// load reads and validates the environment.
func load() (Config, error) { return settings.Load[Config](settings.RoleConsole) }

// Validate reports every bad value, one line each; in production also the refusals.
func (c Config) Validate() error {
	return settings.Check(c.Process, c.Leader, c.Retry, c.requestConfig(), c.Console)
}

// requestConfig is the request store's configuration.
func (c Config) requestConfig() request.Config {
	rc := c.Requests
	rc.Location = c.Location()
	return rc
}

// outboxPolicy is the retry policy of delivery, which a replay resets.
func (c Config) outboxPolicy() outbox.Policy { return outbox.Policy(c.Retry) }
