// Package consoleconf is the console's own settings (MSGX_CONSOLE_*), apart from its pages: the
// console (cmd/console, pkg/console) and msgxctl's composition of every setting (pkg/config)
// read them, and msgxctl links no page, template or handler of the console for it.
package consoleconf

import (
	"net"
	"time"

	"github.com/msgx/msgx/pkg/envconf"
	"github.com/msgx/msgx/pkg/httpauth"
)

// Config are the console's own settings. The pages listen on Addr; /healthz, /readyz and
// /metrics on MSGX_HTTP_ADDR, as for every binary.
type Config struct {
	Addr       string           `envconfig:"MSGX_CONSOLE_ADDR" default:"127.0.0.1:8092" desc:"console: listen address of the pages (login, pipeline, flights, messages, dead letters, requests); the ops endpoints stay on MSGX_HTTP_ADDR"`
	Tokens     httpauth.Clients `envconfig:"MSGX_CONSOLE_TOKENS" default:"" doc:"(none)" desc:"console: the users' tokens as user:scope+scope:sha256hex, comma-separated (pkg/httpauth, as MSGX_API_TOKENS; scope read views, operate also acts; msgxctl token new makes one); none: nobody can log in"`
	SessionKey string           `envconfig:"MSGX_CONSOLE_SESSION_KEY" default:"" doc:"(random per process)" desc:"console: key (at least 32 characters) that signs the CSRF tokens of the forms (every replica needs the same); sessions are kept server-side; empty: a random key per process (open forms fail once after a restart); the console refuses to start without it in production"`
	SessionTTL time.Duration    `envconfig:"MSGX_CONSOLE_SESSION_TTL" default:"8h" desc:"console: how long a login lasts (server-side sessions; logout and removing the token end it sooner)"`
	Refresh    time.Duration    `envconfig:"MSGX_CONSOLE_REFRESH" default:"5s" desc:"console: how often the pipeline page updates itself (without reloading); at 5 s it names a frozen Kafka broker within 15 s of the freeze (docs/console.md)"`
	TLS        bool             `envconfig:"MSGX_CONSOLE_TLS" default:"false" desc:"console: the console is reached over HTTPS (a TLS-terminating proxy or ingress): session cookies are marked Secure; production requires true"`
}

// Validate reports every bad value, one line each.
func (c Config) Validate() error {
	var p envconf.Problems
	if _, _, err := net.SplitHostPort(c.Addr); c.Addr != "" && err != nil {
		p.Add("MSGX_CONSOLE_ADDR", "must be host:port, got %q", c.Addr)
	}
	if c.SessionKey != "" && len(c.SessionKey) < 32 {
		p.Add("MSGX_CONSOLE_SESSION_KEY", "must be at least 32 characters, got %d", len(c.SessionKey))
	}
	p.Positive("MSGX_CONSOLE_SESSION_TTL", c.SessionTTL)
	p.Positive("MSGX_CONSOLE_REFRESH", c.Refresh)
	return p.Err()
}

// ProductionRefusals are the console settings production refuses: sessions signed by a random
// per-process key (they would end at every restart and differ between replicas), and session
// cookies not marked Secure (a browser would send them over plain HTTP).
func (c Config) ProductionRefusals() error {
	var p envconf.Problems
	if c.SessionKey == "" {
		p.Add("MSGX_CONSOLE_SESSION_KEY", "must be set in production (sessions signed by a per-process random key end at every restart and differ between replicas)")
	}
	if !c.TLS {
		p.Add("MSGX_CONSOLE_TLS", "production requires the console behind HTTPS (a TLS-terminating ingress) with MSGX_CONSOLE_TLS=true: its session cookies are then marked Secure")
	}
	return p.Err()
}
