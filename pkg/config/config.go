// Package config composes every part of msgx's configuration — the shared settings (pkg/settings)
// and each stage's own — into one Config, for msgxctl (which acts on every stage) and for
// docs/configuration.md, which lists every variable in the order of Config's fields. The service
// binaries do not import it: each composes only the parts it runs (cmd/<binary>/config.go), so
// that it links and validates only its own stages.
//
// Adding a setting is one tagged field where it is used (pkg/envconf), plus
// `go test ./pkg/config -update` to regenerate docs/configuration.md (a test keeps the two in
// step).
package config

import (
	"errors"

	"github.com/msgx/msgx/pkg/console"
	"github.com/msgx/msgx/pkg/dispatch"
	"github.com/msgx/msgx/pkg/envconf"
	"github.com/msgx/msgx/pkg/ingest"
	"github.com/msgx/msgx/pkg/jobs"
	"github.com/msgx/msgx/pkg/kafka"
	"github.com/msgx/msgx/pkg/leader"
	"github.com/msgx/msgx/pkg/mailbox"
	"github.com/msgx/msgx/pkg/processor"
	"github.com/msgx/msgx/pkg/request"
	"github.com/msgx/msgx/pkg/settings"
)

// Config is every setting of every binary. The order of the fields is the order of
// docs/configuration.md.
type Config struct {
	settings.Process
	Leader  leader.Config
	Mailbox mailbox.Config
	settings.Retry

	Ingest    ingest.Config
	Compat    ingest.CompatConfig
	API       ingest.APIConfig
	Processor processor.Config
	Kafka     kafka.Config
	Dispatch  dispatch.Config
	Jobs      jobs.Config
	Requests  request.Config
	Triggers  request.TriggerConfig
	Console   console.Config
}

// Load reads and validates every setting as role sees them (its default MSGX_HTTP_ADDR; ingest
// alone needs API tokens in production). The error is one line per bad value, all at once.
func Load(role settings.Role) (Config, error) {
	cfg, err := settings.Load[Config](role)
	if role == settings.RoleIngest && cfg.Production() {
		err = errors.Join(err, cfg.API.ProductionRefusals())
	}
	return cfg, err
}

// Validate checks every value and returns one line per bad one; in production also every
// refusal (docs/security.md).
func (c Config) Validate() error {
	var p envconf.Problems
	p.Join(c.Process.Validate())
	p.Join(c.Leader.Validate())
	p.Join(c.Mailbox.Validate())
	p.Join(c.Retry.Validate())
	p.Join(c.Ingest.Validate())
	p.Join(c.Compat.Validate())
	p.Join(c.API.Validate())
	p.Join(c.Processor.Validate())
	p.Join(c.Kafka.Validate())
	p.Join(c.Dispatch.Validate())
	jc := c.Jobs // its own settings; derived values follow from settings checked above
	jc.Location = c.Location()
	p.Join(jc.Validate())
	p.Join(c.RequestConfig().Validate())
	p.Join(c.TriggerConfig().Validate())
	p.Join(c.Console.Validate())
	if c.Production() {
		p.Join(c.Process.ProductionRefusals())
		p.Join(c.Mailbox.ProductionRefusals())
		p.Join(c.Compat.ShadowRefusal(c.Mailbox.Shadow))
		p.Join(c.Dispatch.ProductionRefusals())
		p.Join(c.Kafka.ProductionRefusals())
	}
	return p.Err()
}

// Redacted returns every variable's effective value by name, secrets redacted (settings.Values).
func (c Config) Redacted() map[string]string { return settings.Values(c) }
