package consoleconf_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/console/consoleconf"
	"github.com/msgx/msgx/pkg/envconf"
	"github.com/msgx/msgx/pkg/httpauth"
)

func TestGroupScopes(t *testing.T) {
	t.Parallel()
	var g consoleconf.GroupScopes
	require.NoError(t, g.UnmarshalText([]byte(" ops-leads=operate, ops=read ,")))
	require.Equal(t, consoleconf.GroupScopes{"ops-leads": httpauth.ScopeOperate, "ops": httpauth.ScopeRead}, g)
	b, err := g.MarshalText()
	require.NoError(t, err)
	require.Equal(t, "ops=read,ops-leads=operate", string(b))
	require.Equal(t, httpauth.ScopeOperate, g.Scope([]string{"ops", "ops-leads"}), "the strongest scope of the user's groups")
	require.Equal(t, httpauth.ScopeRead, g.Scope([]string{"sales", "ops"}))
	require.Equal(t, httpauth.Scope(""), g.Scope([]string{"sales"}), "no mapped group: no scope")
	require.Equal(t, httpauth.Scope(""), g.Scope(nil))
	for in, want := range map[string]string{
		"ops":                  "want group=scope",
		"=read":                "want group=scope",
		"ops=send":             `scope "send": want read or operate`,
		"ops=read,ops=operate": `group "ops" is mapped twice`,
	} {
		require.ErrorContains(t, g.UnmarshalText([]byte(in)), want, in)
	}
}

// OIDC is off without an issuer; with one, the client, the callback and a mapping are required,
// and production wants both URLs over HTTPS.
func TestOIDCValidation(t *testing.T) {
	t.Parallel()
	var c consoleconf.Config
	envconf.Defaults(&c)
	require.False(t, c.OIDC.Enabled())
	require.NoError(t, c.Validate())

	c.OIDC.Issuer = "http://127.0.0.1:4444"
	err := c.Validate()
	require.Error(t, err)
	for _, name := range []string{"MSGX_CONSOLE_OIDC_CLIENT_ID", "MSGX_CONSOLE_OIDC_REDIRECT_URL", "MSGX_CONSOLE_OIDC_GROUP_SCOPES"} {
		require.ErrorContains(t, err, name)
	}
	c.OIDC.ClientID = "console"
	c.OIDC.RedirectURL = "http://127.0.0.1:8092/elsewhere"
	c.OIDC.GroupScopes = consoleconf.GroupScopes{"ops": httpauth.ScopeRead}
	require.ErrorContains(t, c.Validate(), "MSGX_CONSOLE_OIDC_REDIRECT_URL: must be the console's http(s) URL with path /login/oidc/callback")
	c.OIDC.RedirectURL = "http://127.0.0.1:8092/login/oidc/callback"
	require.NoError(t, c.Validate())
	c.OIDC.Scopes = []string{"profile"}
	require.ErrorContains(t, c.Validate(), "MSGX_CONSOLE_OIDC_SCOPES: must contain openid")

	c.SessionKey, c.TLS = strings.Repeat("k", 32), true
	err = c.ProductionRefusals()
	require.ErrorContains(t, err, "MSGX_CONSOLE_OIDC_ISSUER: production requires an https issuer")
	require.ErrorContains(t, err, "MSGX_CONSOLE_OIDC_REDIRECT_URL: production requires an https callback")
	c.OIDC.Issuer, c.OIDC.RedirectURL = "https://idp.example", "https://console.example/login/oidc/callback"
	require.NoError(t, c.ProductionRefusals())
}
