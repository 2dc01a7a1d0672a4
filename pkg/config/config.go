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

	"github.com/msgx/msgx/pkg/console/consoleconf"
	"github.com/msgx/msgx/pkg/dispatch"
	"github.com/msgx/msgx/pkg/ingest"
	"github.com/msgx/msgx/pkg/jobs"
	"github.com/msgx/msgx/pkg/kafka"
	"github.com/msgx/msgx/pkg/leader"
	"github.com/msgx/msgx/pkg/mailbox"
	"github.com/msgx/msgx/pkg/processor"
	"github.com/msgx/msgx/pkg/replication"
	"github.com/msgx/msgx/pkg/request"
	"github.com/msgx/msgx/pkg/settings"
)

// Config is every setting of every binary. The order of the fields is the order of
// docs/configuration.md.
type Config struct {
	settings.Process
	Leader  leader.Config
	Mailbox mailbox.Config
	Markers replication.Config
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
	Console   consoleconf.Config
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
// refusal (docs/security.md) but the console's and the API's, which are only theirs to refuse
// (Load adds the API's for ingest).
func (c Config) Validate() error { return c.validate(c.Mailbox, c.Kafka) }

// validate is Validate with the mailbox and Kafka parts given (their production refusals, or
// not).
func (c Config) validate(mailbox, kafka settings.Part) error {
	jc := c.Jobs // its own settings; derived values follow from settings checked here
	jc.Location = c.Location()
	return settings.Check(c.Process, c.Leader, mailbox, c.Markers, c.Retry, c.Ingest, c.Compat,
		settings.ValidateOnly(c.API), c.Processor, kafka, c.Dispatch, jc, c.RequestConfig(), c.TriggerConfig(),
		settings.ValidateOnly(c.Console), settings.Refusal(c.Compat.ShadowRefusal(c.Mailbox.Shadow)))
}

// tool is msgxctl's composition: every part, as Config, but the production refusals of its
// connections are left to the command that opens one (PGRefusals, MailboxRefusals,
// KafkaRefusals): the migration Job and deploy/k8s/msgxctl.sh's pods have no mailbox DSN, and
// the DBA's roles apply --pg=false --mysql neither a PostgreSQL URL nor Kafka settings.
type tool struct{ Config }

func (c tool) Validate() error {
	// Every value is checked; production's refusals are the connections', checked where each is
	// opened (PGRefusals, MailboxRefusals, KafkaRefusals): the settings of the stages msgxctl
	// carries are theirs to refuse.
	p := c.Process
	p.Env = "development"
	c.Process = p
	return c.validate(c.Mailbox, c.Kafka)
}

// LoadTool is Load for msgxctl (the jobs role's defaults), without the production refusals of
// its connections: a command checks PGRefusals, MailboxRefusals or KafkaRefusals before it
// opens one.
func LoadTool() (Config, error) {
	cfg, err := settings.Load[tool](settings.RoleJobs)
	return cfg.Config, err
}

// Redacted returns every variable's effective value by name, secrets redacted (settings.Values).
func (c Config) Redacted() map[string]string { return settings.Values(c) }

// MailboxRefusals are the mailbox settings production refuses (none outside production), for a
// command that connects to MySQL.
func (c Config) MailboxRefusals() error {
	if !c.Production() {
		return nil
	}
	return c.Mailbox.ProductionRefusals()
}

// KafkaRefusals are the Kafka settings production refuses (none outside production), for a
// command that connects to the brokers.
func (c Config) KafkaRefusals() error {
	if !c.Production() {
		return nil
	}
	return c.Kafka.ProductionRefusals()
}

// PGRefusals are the PostgreSQL connection's settings production refuses (none outside
// production), for a command that connects to PostgreSQL.
func (c Config) PGRefusals() error {
	if !c.Production() {
		return nil
	}
	return c.Process.ProductionRefusals()
}
