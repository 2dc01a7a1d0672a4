package console_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/console/consoleconf"
	"github.com/msgx/msgx/pkg/dev/hydra"
	"github.com/msgx/msgx/pkg/httpauth"
)

// oidcWorld is a world whose console also logs in through a real OpenID Connect provider
// (ORY Hydra) with groups ops-leads → operate and ops → read.
type oidcWorld struct {
	*world
	idp  *hydra.Provider
	base string // the OIDC console's URL
}

func setupOIDC(t *testing.T) *oidcWorld {
	t.Helper()
	idp := hydra.Start(t)
	w := setup(t)
	l := listen(t)
	redirect := "http://" + l.Addr().String() + consoleconf.CallbackPath
	id, secret := idp.Client(t, redirect)
	d := w.deps
	d.Config.OIDC = consoleconf.OIDC{
		Issuer: idp.Issuer, ClientID: id, ClientSecret: secret, RedirectURL: redirect,
		Scopes: []string{"openid", "profile", "email"}, GroupsClaim: "groups",
		GroupScopes: consoleconf.GroupScopes{"ops-leads": httpauth.ScopeOperate, "ops": httpauth.ScopeRead},
	}
	srv := serveOn(t, l, d, func(h http.Handler) http.Handler { return h })
	return &oidcWorld{world: w, idp: idp, base: srv.URL}
}

// isCallback stops a browser at the console's callback (the test sends it itself).
func isCallback(u *url.URL) bool { return u.Path == consoleconf.CallbackPath }

// toCallback logs user in at the provider and returns the callback URL the provider sends the
// browser to (with its code and state), without following it.
func (o *oidcWorld) toCallback(t *testing.T, b *http.Client) string {
	t.Helper()
	resp, err := b.Get(o.base + "/login/oidc?next=/dead")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, "the provider sends the browser back")
	cb := resp.Header.Get("Location")
	require.True(t, strings.HasPrefix(cb, o.base+consoleconf.CallbackPath+"?"), cb)
	return cb
}

// loginOIDC logs user in through the provider and returns its browser on the page it lands on.
func (o *oidcWorld) loginOIDC(t *testing.T, user string) (*http.Client, int, string, string) {
	t.Helper()
	b := o.idp.Browser(t, user, nil)
	code, path, body := fetch(t, b, o.base+"/login/oidc?next=/dead")
	return b, code, path, body
}

// replay posts the DEAD message's replay from its page as b.
func (o *oidcWorld) replay(t *testing.T, b *http.Client, reason string) int {
	t.Helper()
	code, _, body := fetch(t, b, o.base+"/messages/"+itoa(o.deadID))
	require.Equal(t, http.StatusOK, code)
	resp, err := b.PostForm(o.base+"/dead/replay", url.Values{"csrf": {csrfOf(t, body)}, "id": {itoa(o.deadID)}, "mode": {"replay"}, "reason": {reason}})
	require.NoError(t, err)
	resp.Body.Close()
	return resp.StatusCode
}

// TestOIDCLoginWithGroupScopes: OIDC login against the real provider, with group -> scope. A
// user of a group mapped to operate acts; a user of a read-only group reads and is refused the
// action; a user in no mapped group gets no session; a forged state and a replayed code are
// refused; logout, the expiry and a revocation end an OIDC session; tokens still log in beside it.
func TestOIDCLoginWithGroupScopes(t *testing.T) {
	t.Parallel()
	o := setupOIDC(t)
	o.idp.User("lead", "staff", "ops-leads")
	o.idp.User("viewer", "ops")
	o.idp.User("outsider", "sales")
	o.idp.User("reader", "ops")

	code, _, body := fetch(t, client(t), o.base+"/login")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `id="oidc-login"`, "the login page offers the provider")
	lead, viewer := o.groupsGiveScopes(t)
	o.refusals(t)

	// Logout ends the lead's session server-side.
	_, _, body = fetch(t, lead, o.base+"/")
	resp, err := lead.PostForm(o.base+"/logout", url.Values{"csrf": {csrfOf(t, body)}})
	require.NoError(t, err)
	resp.Body.Close()
	code, path, _ := fetch(t, lead, o.base+"/dead")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "/login", path)
	require.Equal(t, int64(1), o.count(t, `SELECT count(*) FROM console_session WHERE user_name = 'oidc:lead' AND revoked_at IS NOT NULL`))

	// The refused answers count as failed logins of their address, as refused tokens do: five
	// within the minute (the outsider, the forged state, the ended flow twice, the replayed code)
	// hold the address's next login, a token's too.
	tokenLogin := func() int {
		resp, err := client(t).PostForm(o.base+"/login", url.Values{"token": {operatorToken}, "next": {"/"}})
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	require.Equal(t, http.StatusTooManyRequests, tokenLogin())

	// The viewer's session expires as a token's does.
	code, path, _ = fetch(t, viewer, o.base+"/dead")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "/dead", path)
	o.clk.Advance(time.Hour + time.Second) // the world's MSGX_CONSOLE_SESSION_TTL is an hour
	code, path, _ = fetch(t, viewer, o.base+"/dead")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "/login", path, "an expired session is refused")

	// A user the provider does not log in comes back with its error code, and no session.
	code, path, body = fetch(t, o.idp.Browser(t, "", nil), o.base+"/login/oidc?next=/dead")
	require.Equal(t, http.StatusUnauthorized, code)
	require.Equal(t, consoleconf.CallbackPath, path)
	require.Contains(t, body, "The identity provider did not log you in (access_denied).")

	o.revocation(t)
	// Tokens still log in (break-glass), beside the provider.
	require.Equal(t, http.StatusSeeOther, tokenLogin())
}

// groupsGiveScopes: the viewer (ops → read) reads and is refused the action; the lead
// (ops-leads → operate) replays, audited as the provider's user; the outsider (sales: mapped to
// nothing) is refused with a page that says why, and no session. It returns the lead's and the
// viewer's browsers, logged in.
func (o *oidcWorld) groupsGiveScopes(t *testing.T) (lead, viewer *http.Client) {
	t.Helper()
	viewer, code, path, body := o.loginOIDC(t, "viewer")
	require.Equal(t, http.StatusOK, code, body)
	require.Equal(t, "/dead", path, "back where the login started")
	require.Contains(t, body, "oidc:viewer (read)")
	require.Equal(t, http.StatusForbidden, o.replay(t, viewer, "viewer tries"))
	require.Zero(t, o.count(t, `SELECT count(*) FROM replay_audit`), "nothing done")

	lead, code, _, body = o.loginOIDC(t, "lead")
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, "oidc:lead (operate)")
	require.Equal(t, http.StatusOK, o.replay(t, lead, "lead replays"))
	require.Equal(t, int64(1), o.count(t, `SELECT count(*) FROM replay_audit WHERE actor = 'console:oidc:lead' AND reason = 'lead replays'`))
	require.Equal(t, int64(1), o.count(t, `SELECT count(*) FROM console_session WHERE user_name = 'oidc:lead' AND oidc_groups = '{ops-leads}' AND scope = 'operate'`),
		"the session keeps the mapped groups only")

	out, code, path, body := o.loginOIDC(t, "outsider")
	require.Equal(t, http.StatusForbidden, code)
	require.Equal(t, consoleconf.CallbackPath, path)
	require.Contains(t, body, "You (oidc:outsider) are in no group allowed to use the console")
	code, path, _ = fetch(t, out, o.base+"/dead")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "/login", path, "no session: the login page")
	require.Zero(t, o.count(t, `SELECT count(*) FROM console_session WHERE user_name = 'oidc:outsider'`))
	return lead, viewer
}

// refusals: a forged state is refused and ends that flow; a code is used once: the browser's
// own replay finds its flow ended, and a replay with the flow cookie put back passes the state
// check and the provider refuses the code.
func (o *oidcWorld) refusals(t *testing.T) {
	t.Helper()
	b := o.idp.Browser(t, "lead", isCallback)
	cb := o.toCallback(t, b)
	u, err := url.Parse(cb)
	require.NoError(t, err)
	q := u.Query()
	q.Set("state", q.Get("state")+"x")
	u.RawQuery = q.Encode()
	code, _, body := fetch(t, b, u.String())
	require.Equal(t, http.StatusUnauthorized, code)
	require.Contains(t, body, "does not match the log-in started here")
	code, _, body = fetch(t, b, cb)
	require.Equal(t, http.StatusUnauthorized, code, "the flow ended with the forged answer")
	require.Contains(t, body, "expired or was not started here")

	b = o.idp.Browser(t, "lead", isCallback)
	cb = o.toCallback(t, b)
	flowCookies := b.Jar.Cookies(u)
	require.NotEmpty(t, flowCookies)
	once := &http.Client{Jar: b.Jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := once.Get(cb)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, "the first use logs in")
	require.Equal(t, "/dead", resp.Header.Get("Location"))
	code, _, body = fetch(t, b, cb)
	require.Equal(t, http.StatusUnauthorized, code)
	require.Contains(t, body, "expired or was not started here")
	thief := o.idp.Browser(t, "lead", isCallback)
	thief.Jar.SetCookies(u, flowCookies)
	code, _, body = fetch(t, thief, cb)
	require.Equal(t, http.StatusUnauthorized, code)
	require.Contains(t, body, "The identity provider refused the code of this log-in")
	require.Equal(t, int64(2), o.count(t, `SELECT count(*) FROM console_session WHERE user_name = 'oidc:lead'`),
		"two logins of lead's, nothing from the replays")
}

// revocation: msgxctl token revoke oidc:NAME (its two steps) ends a user's sessions on every
// replica at once and refuses their logins through the provider.
func (o *oidcWorld) revocation(t *testing.T) {
	t.Helper()
	reader, code, path, _ := o.loginOIDC(t, "reader")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "/dead", path)
	ids, err := httpauth.ProviderIdentities(ctx, o.db.Pool, "oidc:reader")
	require.NoError(t, err)
	require.Len(t, ids, 1)
	done, err := httpauth.Revoke(ctx, o.db.Pool, httpauth.Client{Name: "oidc:reader", Hash: ids[0]}, "ops", "left", time.Now())
	require.NoError(t, err)
	require.True(t, done)
	_, path, _ = fetch(t, reader, o.base+"/dead")
	require.Equal(t, "/login", path, "the revoked user's session ended")
	_, code, _, body := o.loginOIDC(t, "reader")
	require.Equal(t, http.StatusForbidden, code)
	require.Contains(t, body, "Your access to the console (oidc:reader) was revoked")
}

// TestOIDCProviderDownTokensStillLogIn: the provider is discovered at the first log-in through
// it, not at start: a console whose provider does not answer starts, says so on that log-in,
// and lets tokens in (break-glass).
func TestOIDCProviderDownTokensStillLogIn(t *testing.T) {
	t.Parallel()
	w := setup(t)
	down := listen(t) // an address that accepts nothing once closed
	issuer := "http://" + down.Addr().String()
	require.NoError(t, down.Close())
	l := listen(t)
	d := w.deps
	d.Config.OIDC = consoleconf.OIDC{
		Issuer: issuer, ClientID: "console", RedirectURL: "http://" + l.Addr().String() + consoleconf.CallbackPath,
		Scopes: []string{"openid"}, GroupsClaim: "groups", GroupScopes: consoleconf.GroupScopes{"ops": httpauth.ScopeRead},
	}
	base := serveOn(t, l, d, func(h http.Handler) http.Handler { return h }).URL
	code, _, body := fetch(t, client(t), base+"/login/oidc?next=/dead")
	require.Equal(t, http.StatusBadGateway, code)
	require.Contains(t, body, "The identity provider cannot be reached: try again later, or log in with a token.")
	resp, err := client(t).PostForm(base+"/login", url.Values{"token": {operatorToken}, "next": {"/"}})
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, "a token logs in while the provider is down")
}

// TestBrowserOIDCLogin: in Chromium, the login page's link goes through the provider and lands
// the user, with the scope their group gives, on the page the login started from.
func TestBrowserOIDCLogin(t *testing.T) {
	t.Parallel()
	o := setupOIDC(t)
	o.idp.User("lead", "ops-leads")
	run := browser(t)
	var h1, header string
	run(chromedp.Navigate(o.idp.Login+"/as?user=lead"),
		chromedp.Navigate(o.base+"/login?next=%2Fdead"),
		chromedp.WaitVisible(`#oidc-login`, chromedp.ByID),
		navigating(chromedp.Click(`#oidc-login`, chromedp.ByID)),
		chromedp.WaitVisible(`header form[action="/logout"]`, chromedp.ByQuery),
		chromedp.Text(`h1`, &h1, chromedp.ByQuery),
		chromedp.Text(`header`, &header, chromedp.ByQuery),
		shot(t, "oidc-login"))
	require.Equal(t, "Dead letters", h1)
	require.Contains(t, header, "oidc:lead (operate)")
}
