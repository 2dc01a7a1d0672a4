package console

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/msgx/msgx/pkg/console/consoleconf"
	"github.com/msgx/msgx/pkg/httpauth"
)

// Log-in through an OpenID Connect provider (MSGX_CONSOLE_OIDC_*): the authorization code flow
// with PKCE (S256). GET /login/oidc starts it: a random state, nonce and PKCE verifier go into a
// short-lived cookie signed with the session key, and the browser to the provider. The provider
// sends the browser back to /login/oidc/callback with a code: the state must be the cookie's, the
// code is exchanged with the verifier, the ID token is verified (signature by the provider's
// JWKS, issuer, audience, expiry) and must carry the cookie's nonce; the user's groups (the
// configured claim) that the configuration maps give the session its scope. A user in none is
// refused. The provider is discovered at the first log-in through it, not at start: tokens keep
// working while it is down.

const (
	flowCookieName = "msgx_console_oidc"
	flowPath       = "/login/oidc"
	flowTTL        = 10 * time.Minute // from the log-in page to the provider's answer
	providerWait   = 10 * time.Second // each call to the provider
)

// oidcClient is the console's client of the provider, discovered once.
type oidcClient struct {
	cfg  consoleconf.OIDC
	http *http.Client

	mu       sync.Mutex
	oauth    *oauth2.Config
	verifier *oidc.IDTokenVerifier
}

func newOIDCClient(cfg consoleconf.OIDC) *oidcClient {
	return &oidcClient{cfg: cfg, http: &http.Client{Timeout: providerWait}}
}

// provider returns the OAuth 2.0 configuration and the ID token verifier, discovering the
// provider on first use; a failed discovery is tried again by the next log-in.
func (o *oidcClient) provider(ctx context.Context) (*oauth2.Config, *oidc.IDTokenVerifier, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.oauth != nil {
		return o.oauth, o.verifier, nil
	}
	p, err := oidc.NewProvider(o.context(ctx), o.cfg.Issuer)
	if err != nil {
		return nil, nil, fmt.Errorf("discover OIDC provider %s: %w", o.cfg.Issuer, err)
	}
	o.oauth = &oauth2.Config{
		ClientID: o.cfg.ClientID, ClientSecret: o.cfg.ClientSecret, Endpoint: p.Endpoint(),
		RedirectURL: o.cfg.RedirectURL, Scopes: o.cfg.Scopes,
	}
	// The verifier checks the signature against the provider's JWKS (fetched and refreshed
	// through o.http), the issuer, the audience (our client id) and the expiry, on the wall
	// clock: the provider stamps its tokens with it.
	o.verifier = p.VerifierContext(o.context(context.Background()), &oidc.Config{ClientID: o.cfg.ClientID})
	return o.oauth, o.verifier, nil
}

// context makes the provider's calls go through o.http (with its timeout).
func (o *oidcClient) context(ctx context.Context) context.Context {
	return oidc.ClientContext(ctx, o.http)
}

// flow is one log-in in progress, kept in the browser's flow cookie.
type flow struct {
	State, Nonce, Verifier, Next string
	Expires                      time.Time
}

// flowCookie is f signed: state|nonce|verifier|expiry|next|mac.
func (s *Server) flowCookie(f flow) *http.Cookie {
	body := strings.Join([]string{f.State, f.Nonce, f.Verifier, strconv.FormatInt(f.Expires.Unix(), 10), f.Next}, "|")
	v := base64.RawURLEncoding.EncodeToString([]byte(body)) + "." + s.sess.mac("oidc-flow", body)
	return &http.Cookie{Name: flowCookieName, Value: v, Path: flowPath, HttpOnly: true, Secure: s.sess.secure,
		SameSite: http.SameSiteLaxMode, MaxAge: int(flowTTL.Seconds())}
}

// readFlow returns the request's flow: signed by us and not expired.
func (s *Server) readFlow(r *http.Request, now time.Time) (flow, bool) {
	c, err := r.Cookie(flowCookieName)
	if err != nil {
		return flow{}, false
	}
	enc, mac, ok := strings.Cut(c.Value, ".")
	raw, err := base64.RawURLEncoding.DecodeString(enc)
	if !ok || err != nil || !hmac.Equal([]byte(mac), []byte(s.sess.mac("oidc-flow", string(raw)))) {
		return flow{}, false
	}
	parts := strings.SplitN(string(raw), "|", 5)
	if len(parts) != 5 {
		return flow{}, false
	}
	exp, err := strconv.ParseInt(parts[3], 10, 64)
	if err != nil || !now.Before(time.Unix(exp, 0)) {
		return flow{}, false
	}
	return flow{State: parts[0], Nonce: parts[1], Verifier: parts[2], Next: parts[4], Expires: time.Unix(exp, 0)}, true
}

func randomString() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("make random value: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// oidcStart sends the browser to the provider.
func (s *Server) oidcStart(w http.ResponseWriter, r *http.Request) {
	oc, _, err := s.oidc.provider(r.Context())
	if err != nil {
		s.d.Metrics.oidcLogins.WithLabelValues("unavailable").Inc()
		s.d.Log.Error().Err(err).Msg("console OIDC login: provider unavailable")
		s.render(w, r, http.StatusBadGateway, "login", "Log in", s.loginView(r.URL.Query().Get("next"),
			"The identity provider cannot be reached: try again later, or log in with a token."))
		return
	}
	f := flow{Next: safeNext(r.URL.Query().Get("next")), Expires: s.d.Now().Add(flowTTL), Verifier: oauth2.GenerateVerifier()}
	if f.State, err = randomString(); err == nil {
		f.Nonce, err = randomString()
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	http.SetCookie(w, s.flowCookie(f))
	s.d.Log.Info().Str("remote", clientHost(r)).Msg("console OIDC login started")
	http.Redirect(w, r, oc.AuthCodeURL(f.State, oidc.Nonce(f.Nonce), oauth2.S256ChallengeOption(f.Verifier)), http.StatusSeeOther)
}

// errorCode is the form of an OAuth 2.0 error code (access_denied, invalid_scope).
var errorCode = regexp.MustCompile(`^[a-z_]{1,64}$`)

// refusal is a callback the console refuses: the HTTP status, the metric's outcome, what the
// log says and what the user is told.
type refusal struct {
	code             int
	outcome, reason  string
	user, userReason string
}

func (e refusal) Error() string { return e.reason }

func refused(reason, tell string) refusal {
	return refusal{code: http.StatusUnauthorized, outcome: "refused", reason: reason, userReason: tell}
}

// oidcCallback ends the log-in the provider sent back: a session, or a refusal.
func (s *Server) oidcCallback(w http.ResponseWriter, r *http.Request) {
	host, now := clientHost(r), s.d.Now()
	used := s.flowCookie(flow{})
	used.MaxAge = -1
	http.SetCookie(w, used) // a flow is used once, whatever its outcome (a throttled one too)
	if s.throttled(w, r, host, now, "/", s.d.Metrics.oidcLogins) {
		return
	}
	id, next, err := s.oidcIdentity(r, now)
	var ref refusal
	if errors.As(err, &ref) {
		if ref.outcome != "unavailable" { // a provider that is down is nobody's failed login
			s.throttle.fail(host, now)
		}
		s.d.Metrics.oidcLogins.WithLabelValues(ref.outcome).Inc()
		s.d.Log.Warn().Str("remote", host).Str("user", ref.user).Str("reason", ref.reason).Msg("console OIDC login refused")
		s.render(w, r, ref.code, "login", "Log in", s.loginView(next, ref.userReason))
		return
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if !s.startSession(w, r, id, now, next) {
		return
	}
	s.d.Metrics.oidcLogins.WithLabelValues("ok").Inc()
	s.d.Log.Info().Str("user", id.User).Str("method", "oidc").Strs("groups", id.Groups).Str("scope", string(id.Scope)).Msg("console login")
}

// oidcIdentity checks the provider's answer and returns who logged in and where they go; a
// refusal says why not.
func (s *Server) oidcIdentity(r *http.Request, now time.Time) (identity, string, error) {
	q := r.URL.Query()
	f, ok := s.readFlow(r, now)
	if !ok {
		return identity{}, "/", refused("no valid flow cookie", "This log-in expired or was not started here: log in again.")
	}
	if e := q.Get("error"); e != "" {
		code := "error" // only an OAuth 2.0 error code is shown: nothing a link's author wrote
		if errorCode.MatchString(e) {
			code = e
		}
		return identity{}, f.Next, refused("provider error: "+e, "The identity provider did not log you in ("+code+").")
	}
	if st := q.Get("state"); st == "" || !hmac.Equal([]byte(st), []byte(f.State)) {
		return identity{}, f.Next, refused("state mismatch", "This log-in's answer does not match the log-in started here: log in again.")
	}
	oc, verifier, err := s.oidc.provider(r.Context())
	if err != nil {
		return identity{}, f.Next, refusal{code: http.StatusBadGateway, outcome: "unavailable", reason: err.Error(),
			userReason: "The identity provider cannot be reached: try again later, or log in with a token."}
	}
	tok, err := oc.Exchange(s.oidc.context(r.Context()), q.Get("code"), oauth2.VerifierOption(f.Verifier))
	if err != nil {
		return identity{}, f.Next, refused("code exchange: "+err.Error(), "The identity provider refused the code of this log-in: log in again.")
	}
	raw, _ := tok.Extra("id_token").(string)
	idt, err := verifier.Verify(s.oidc.context(r.Context()), raw)
	if err != nil {
		return identity{}, f.Next, refused("ID token: "+err.Error(), "The identity provider's answer could not be verified: log in again.")
	}
	if !hmac.Equal([]byte(idt.Nonce), []byte(f.Nonce)) {
		return identity{}, f.Next, refused("nonce mismatch", "The identity provider's answer does not match this log-in: log in again.")
	}
	id, err := s.oidcUser(idt)
	if err != nil {
		return identity{}, f.Next, err
	}
	revoked, err := s.revoked(r.Context(), id.Hash) // msgxctl token revoke oidc:NAME
	if err != nil {
		return identity{}, f.Next, fmt.Errorf("%s: %w", id.User, err)
	}
	if revoked {
		return identity{}, f.Next, refusal{code: http.StatusForbidden, outcome: "revoked", reason: "revoked (token_revoked)", user: id.User,
			userReason: "Your access to the console (" + id.User + ") was revoked: ask the console's administrators."}
	}
	return id, f.Next, nil
}

// oidcUser is the verified ID token's user, with the groups the configuration maps.
func (s *Server) oidcUser(idt *oidc.IDToken) (identity, error) {
	var claims map[string]any
	if err := idt.Claims(&claims); err != nil {
		return identity{}, refused("ID token claims: "+err.Error(), "The identity provider's answer could not be read: log in again.")
	}
	name := httpauth.ProviderUserPrefix + userName(claims, idt.Subject)
	var mapped []string
	for _, g := range stringsClaim(claims[s.oidc.cfg.GroupsClaim]) {
		if _, ok := s.oidc.cfg.GroupScopes[g]; ok {
			mapped = append(mapped, g)
		}
	}
	scope := s.oidc.cfg.GroupScopes.Scope(mapped)
	if scope == "" {
		return identity{}, refusal{code: http.StatusForbidden, outcome: "no_group", reason: "in no mapped group", user: name,
			userReason: "You (" + name + ") are in no group allowed to use the console. Ask the console's administrators to add you to one; until then, nothing here is open to you."}
	}
	h := sha256.Sum256([]byte(idt.Issuer + "\x00" + idt.Subject))
	return identity{User: name, Scope: scope, Hash: h[:], Groups: mapped}, nil
}

// userName is how a provider's user is shown and audited: preferred_username, else email, else
// the subject; printable and at most 64 characters.
func userName(claims map[string]any, subject string) string {
	name := subject
	for _, c := range []string{"preferred_username", "email"} {
		if v, ok := claims[c].(string); ok && v != "" {
			name = v
			break
		}
	}
	name = strings.Map(func(r rune) rune {
		if unicode.IsPrint(r) && r != ' ' {
			return r
		}
		return '_'
	}, name)
	if len([]rune(name)) > 64 {
		name = string([]rune(name)[:64])
	}
	return name
}

// stringsClaim reads a groups claim: a list of strings, or one string.
func stringsClaim(v any) []string {
	switch v := v.(type) {
	case string:
		return []string{v}
	case []any:
		out := make([]string, 0, len(v))
		for _, e := range v {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}
