// Package consoleconf is the console's own settings (MSGX_CONSOLE_*), apart from its pages: the
// console (cmd/console, pkg/console) and msgxctl's composition of every setting (pkg/config)
// read them, and msgxctl links no page, template or handler of the console for it.
package consoleconf

import (
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
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

	OIDC OIDC
}

// OIDC is the optional log-in through an OpenID Connect provider (authorization code flow with
// PKCE): the user's groups, as the provider puts them in the ID token, give the console scope.
// Tokens (MSGX_CONSOLE_TOKENS) keep working beside it, also while the provider is down.
type OIDC struct {
	Issuer       string      `envconfig:"MSGX_CONSOLE_OIDC_ISSUER" default:"" doc:"(none)" desc:"console: issuer URL of the OpenID Connect provider (its discovery document is ISSUER/.well-known/openid-configuration); empty: log-in with tokens only"`
	ClientID     string      `envconfig:"MSGX_CONSOLE_OIDC_CLIENT_ID" default:"" doc:"(none)" desc:"console: the console's client id at the provider (required with MSGX_CONSOLE_OIDC_ISSUER)"`
	ClientSecret string      `envconfig:"MSGX_CONSOLE_OIDC_CLIENT_SECRET" default:"" doc:"(none)" desc:"console: the console's client secret at the provider (from a Secret; empty: a public client, PKCE only)"`
	RedirectURL  string      `envconfig:"MSGX_CONSOLE_OIDC_REDIRECT_URL" default:"" doc:"(none)" desc:"console: the callback URL registered at the provider: the console's own address with path /login/oidc/callback, as the browser reaches it (https in production)"`
	Scopes       []string    `envconfig:"MSGX_CONSOLE_OIDC_SCOPES" default:"openid,profile,email" desc:"console: the scopes the console asks the provider for, comma-separated (openid is required; add the one the provider needs to put the groups in the ID token, e.g. groups)"`
	GroupsClaim  string      `envconfig:"MSGX_CONSOLE_OIDC_GROUPS_CLAIM" default:"groups" desc:"console: the ID token claim holding the user's groups (a list of strings, or one string)"`
	GroupScopes  GroupScopes `envconfig:"MSGX_CONSOLE_OIDC_GROUP_SCOPES" default:"" doc:"(none)" desc:"console: the provider's groups that may log in, as group=scope, comma-separated (ops-leads=operate,ops=read); operate also reads; a user in none of them is refused; required with MSGX_CONSOLE_OIDC_ISSUER"`
}

// CallbackPath is the path of the console's OIDC callback: MSGX_CONSOLE_OIDC_REDIRECT_URL ends in it.
const CallbackPath = "/login/oidc/callback"

// Enabled reports whether OIDC log-in is configured.
func (o OIDC) Enabled() bool { return o.Issuer != "" }

// validate adds o's problems to p (none when OIDC is off).
func (o OIDC) validate(p *envconf.Problems) {
	if !o.Enabled() {
		return
	}
	if u, err := url.Parse(o.Issuer); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		p.Add("MSGX_CONSOLE_OIDC_ISSUER", "must be an http(s) URL, got %q", o.Issuer)
	}
	if o.ClientID == "" {
		p.Add("MSGX_CONSOLE_OIDC_CLIENT_ID", "must be set with MSGX_CONSOLE_OIDC_ISSUER")
	}
	if u, err := url.Parse(o.RedirectURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.Path != CallbackPath {
		p.Add("MSGX_CONSOLE_OIDC_REDIRECT_URL", "must be the console's http(s) URL with path %s, got %q", CallbackPath, o.RedirectURL)
	}
	if !slices.Contains(o.Scopes, "openid") {
		p.Add("MSGX_CONSOLE_OIDC_SCOPES", "must contain openid, got %q", strings.Join(o.Scopes, ","))
	}
	if o.GroupsClaim == "" {
		p.Add("MSGX_CONSOLE_OIDC_GROUPS_CLAIM", "must name a claim")
	}
	if len(o.GroupScopes) == 0 {
		p.Add("MSGX_CONSOLE_OIDC_GROUP_SCOPES", "must map at least one group to a scope with MSGX_CONSOLE_OIDC_ISSUER")
	}
}

// productionRefusals: the provider and the callback over HTTPS only.
func (o OIDC) productionRefusals(p *envconf.Problems) {
	if !o.Enabled() {
		return
	}
	if !strings.HasPrefix(o.Issuer, "https://") {
		p.Add("MSGX_CONSOLE_OIDC_ISSUER", "production requires an https issuer")
	}
	if !strings.HasPrefix(o.RedirectURL, "https://") {
		p.Add("MSGX_CONSOLE_OIDC_REDIRECT_URL", "production requires an https callback")
	}
}

// GroupScopes maps a provider's group to the console scope its members get.
type GroupScopes map[string]httpauth.Scope

// UnmarshalText parses group=scope entries, comma-separated; scope is read or operate.
func (g *GroupScopes) UnmarshalText(b []byte) error {
	out := GroupScopes{}
	for e := range strings.SplitSeq(string(b), ",") {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		group, scope, ok := strings.Cut(e, "=")
		group = strings.TrimSpace(group)
		if !ok || group == "" {
			return fmt.Errorf("entry %q: want group=scope", e)
		}
		sc := httpauth.Scope(strings.TrimSpace(scope))
		if sc != httpauth.ScopeRead && sc != httpauth.ScopeOperate {
			return fmt.Errorf("group %q: scope %q: want read or operate", group, sc)
		}
		if _, dup := out[group]; dup {
			return fmt.Errorf("group %q is mapped twice", group)
		}
		out[group] = sc
	}
	*g = out
	return nil
}

// MarshalText is the inverse of UnmarshalText (groups sorted).
func (g GroupScopes) MarshalText() ([]byte, error) {
	groups := make([]string, 0, len(g))
	for k := range g {
		groups = append(groups, k)
	}
	slices.Sort(groups)
	for i, k := range groups {
		groups[i] = k + "=" + string(g[k])
	}
	return []byte(strings.Join(groups, ",")), nil
}

// Scope is the strongest console scope groups give ("" when none of them is mapped).
func (g GroupScopes) Scope(groups []string) httpauth.Scope {
	var best httpauth.Scope
	for _, grp := range groups {
		switch g[grp] {
		case httpauth.ScopeOperate:
			return httpauth.ScopeOperate
		case httpauth.ScopeRead:
			best = httpauth.ScopeRead
		}
	}
	return best
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
	c.OIDC.validate(&p)
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
	c.OIDC.productionRefusals(&p)
	return p.Err()
}
