package console

import (
	"time"

	"github.com/msgx/msgx/pkg/envconf"
)

// Config are the console's own settings (cmd/console). Its listen address is MSGX_HTTP_ADDR,
// as for every binary; /healthz, /readyz and /metrics are served next to the pages.
type Config struct {
	Tokens     Clients       `envconfig:"MSGX_CONSOLE_TOKENS" default:"" doc:"(none)" desc:"console: the users' API tokens as user:scope+scope:sha256hex, comma-separated (scopes view, operate; only SHA-256 hashes, as MSGX_API_TOKENS); none: nobody can log in"`
	SessionKey string        `envconfig:"MSGX_CONSOLE_SESSION_KEY" default:"" doc:"(random per process)" desc:"console: key (at least 32 characters) that signs session cookies and CSRF tokens; empty: a random key per process (sessions end at restart); the console refuses to start without it in production"`
	SessionTTL time.Duration `envconfig:"MSGX_CONSOLE_SESSION_TTL" default:"8h" desc:"console: how long a login lasts"`
	Refresh    time.Duration `envconfig:"MSGX_CONSOLE_REFRESH" default:"10s" desc:"console: how often the pipeline page refreshes itself"`
	TLS        bool          `envconfig:"MSGX_CONSOLE_TLS" default:"false" desc:"console: the console is reached over HTTPS (a TLS-terminating proxy or ingress): session cookies are marked Secure"`
}

// Validate reports every bad value, one line each.
func (c Config) Validate() error {
	var p envconf.Problems
	if c.SessionKey != "" && len(c.SessionKey) < 32 {
		p.Add("MSGX_CONSOLE_SESSION_KEY", "must be at least 32 characters, got %d", len(c.SessionKey))
	}
	p.Positive("MSGX_CONSOLE_SESSION_TTL", c.SessionTTL)
	p.Positive("MSGX_CONSOLE_REFRESH", c.Refresh)
	return p.Err()
}
