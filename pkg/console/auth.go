package console

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/msgx/msgx/pkg/console/consoleconf"
	"github.com/msgx/msgx/pkg/httpauth"
)

// The console's users are clients of pkg/httpauth (MSGX_CONSOLE_TOKENS, the API's format and
// token check) or, when configured, users of an OpenID Connect provider whose groups map to a
// scope (oidc.go): scope read views every page, scope operate also replays, skips and sends
// requests.

// consoleScope is the strongest console scope cl holds ("" when it holds neither).
func consoleScope(cl httpauth.Client) httpauth.Scope {
	switch {
	case cl.Has(httpauth.ScopeOperate):
		return httpauth.ScopeOperate
	case cl.Has(httpauth.ScopeRead):
		return httpauth.ScopeRead
	}
	return ""
}

// Session is a logged-in user.
type Session struct {
	User    string
	Scope   httpauth.Scope // the strongest console scope the user's token holds now
	Expires time.Time
	id      string // the cookie value: a random id, stored server-side as its SHA-256
}

// CanOperate reports whether the session may act (replay, skip, request).
func (s Session) CanOperate() bool { return s.Scope == httpauth.ScopeOperate }

// Two cookies carry the same session id: the page cookie is SameSite=Lax so that a link from an
// alert (a top-level GET from another site) lands on its page; the action cookie is
// SameSite=Strict and every action needs it, so no other site can make a browser act.
const (
	cookieName    = "msgx_console"
	actCookieName = "msgx_console_act"
)

// sessions keeps the console's sessions in console_session and signs CSRF tokens with key.
type sessions struct {
	pool   *pgxpool.Pool
	tokens httpauth.Clients
	oidc   consoleconf.OIDC
	key    []byte
	ttl    time.Duration
	secure bool
}

func newSessions(pool *pgxpool.Pool, cfg consoleconf.Config) (*sessions, error) {
	k := []byte(cfg.SessionKey)
	if len(k) == 0 {
		k = make([]byte, 32)
		if _, err := rand.Read(k); err != nil {
			return nil, fmt.Errorf("make session key: %w", err)
		}
	}
	return &sessions{pool: pool, tokens: cfg.Tokens, oidc: cfg.OIDC, key: k, ttl: cfg.SessionTTL, secure: cfg.TLS}, nil
}

// identity is who a new session is of: a token's client, or a provider's user (Groups: the
// mapped groups the ID token named; Hash: the SHA-256 of the issuer and the subject).
type identity struct {
	User   string
	Scope  httpauth.Scope
	Hash   []byte
	Groups []string // nil: a token's session
}

func tokenIdentity(cl httpauth.Client, scope httpauth.Scope) identity {
	return identity{User: cl.Name, Scope: scope, Hash: cl.Hash[:]}
}

func (s *sessions) mac(parts ...string) string {
	m := hmac.New(sha256.New, s.key)
	for _, p := range parts {
		m.Write([]byte(p))
		m.Write([]byte{0})
	}
	return hex.EncodeToString(m.Sum(nil))
}

func idHash(id string) []byte {
	h := sha256.Sum256([]byte(id))
	return h[:]
}

// issue stores a new session of id and returns its two cookies.
func (s *sessions) issue(ctx context.Context, id identity, now time.Time) ([]*http.Cookie, error) {
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return nil, fmt.Errorf("make session id: %w", err)
	}
	sid := hex.EncodeToString(raw)
	if _, err := s.pool.Exec(ctx, sessionDeleteExpiredSQL, now); err != nil {
		return nil, fmt.Errorf("delete expired sessions: %w", err)
	}
	if _, err := s.pool.Exec(ctx, sessionInsertSQL, idHash(sid), id.User, string(id.Scope), id.Hash, now, now.Add(s.ttl), id.Groups); err != nil {
		return nil, fmt.Errorf("store session: %w", err)
	}
	return []*http.Cookie{s.cookie(cookieName, sid, http.SameSiteLaxMode), s.cookie(actCookieName, sid, http.SameSiteStrictMode)}, nil
}

// cookie is a browser-session cookie; the server-side expiry ends the session.
func (s *sessions) cookie(name, value string, same http.SameSite) *http.Cookie {
	c := &http.Cookie{Name: name, Value: value, Path: "/", HttpOnly: true, Secure: s.secure, SameSite: same}
	if value == "" {
		c.MaxAge = -1
	}
	return c
}

// clear are the cookies that end a session in the browser.
func (s *sessions) clear() []*http.Cookie {
	return []*http.Cookie{s.cookie(cookieName, "", http.SameSiteLaxMode), s.cookie(actCookieName, "", http.SameSiteStrictMode)}
}

// read returns the request's session: stored, unrevoked, unexpired, and its token still among
// the configured ones (its scope as the token has it now) or, for a provider's user, OIDC still
// configured and the user's groups still mapped (its scope as the mapping gives it now). action
// also requires the Strict cookie with the same id.
func (s *sessions) read(r *http.Request, now time.Time, action bool) (Session, bool, error) {
	c, err := r.Cookie(cookieName)
	if err != nil || len(c.Value) != 64 {
		return Session{}, false, nil
	}
	if action {
		ac, err := r.Cookie(actCookieName)
		if err != nil || !hmac.Equal([]byte(ac.Value), []byte(c.Value)) {
			return Session{}, false, nil
		}
	}
	var sess Session
	var token []byte
	var groups []string
	err = s.pool.QueryRow(r.Context(), sessionReadSQL, idHash(c.Value), now).Scan(&sess.User, &token, &sess.Expires, &groups)
	if errors.Is(err, pgx.ErrNoRows) {
		return Session{}, false, nil
	}
	if err != nil {
		return Session{}, false, fmt.Errorf("read session: %w", err)
	}
	if groups != nil {
		if !s.oidc.Enabled() {
			return Session{}, false, nil // OIDC log-in was turned off
		}
		sess.Scope, sess.id = s.oidc.GroupScopes.Scope(groups), c.Value
		return sess, sess.Scope != "", nil
	}
	for _, cl := range s.tokens {
		if cl.Name == sess.User && hmac.Equal(cl.Hash[:], token) {
			sess.Scope, sess.id = consoleScope(cl), c.Value
			return sess, sess.Scope != "", nil
		}
	}
	return Session{}, false, nil // the token was removed from MSGX_CONSOLE_TOKENS
}

// revoke ends a session server-side (logout).
func (s *sessions) revoke(ctx context.Context, sess Session, now time.Time) error {
	if _, err := s.pool.Exec(ctx, sessionRevokeSQL, idHash(sess.id), now); err != nil {
		return fmt.Errorf("revoke session: %w", err)
	}
	return nil
}

// csrf is the session's CSRF token, sent in every form and checked on every action.
func (s *sessions) csrf(sess Session) string { return s.mac("csrf", sess.id) }

func (s *sessions) checkCSRF(sess Session, token string) bool {
	return token != "" && hmac.Equal([]byte(token), []byte(s.csrf(sess)))
}
