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

	"github.com/msgx/msgx/pkg/httpauth"
)

// The console's users are clients of pkg/httpauth (MSGX_CONSOLE_TOKENS, the API's format and
// token check): scope read views every page, scope operate also replays, skips and sends
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
	key    []byte
	ttl    time.Duration
	secure bool
}

func newSessions(pool *pgxpool.Pool, tokens httpauth.Clients, key string, ttl time.Duration, secure bool) (*sessions, error) {
	k := []byte(key)
	if len(k) == 0 {
		k = make([]byte, 32)
		if _, err := rand.Read(k); err != nil {
			return nil, fmt.Errorf("make session key: %w", err)
		}
	}
	return &sessions{pool: pool, tokens: tokens, key: k, ttl: ttl, secure: secure}, nil
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

// issue stores a new session of cl and returns its two cookies.
func (s *sessions) issue(ctx context.Context, cl httpauth.Client, scope httpauth.Scope, now time.Time) ([]*http.Cookie, error) {
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return nil, fmt.Errorf("make session id: %w", err)
	}
	id := hex.EncodeToString(raw)
	if _, err := s.pool.Exec(ctx, sessionDeleteExpiredSQL, now); err != nil {
		return nil, fmt.Errorf("delete expired sessions: %w", err)
	}
	if _, err := s.pool.Exec(ctx, sessionInsertSQL, idHash(id), cl.Name, string(scope), cl.Hash[:], now, now.Add(s.ttl)); err != nil {
		return nil, fmt.Errorf("store session: %w", err)
	}
	return []*http.Cookie{s.cookie(cookieName, id, http.SameSiteLaxMode), s.cookie(actCookieName, id, http.SameSiteStrictMode)}, nil
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
// the configured ones (its scope as the token has it now). action also requires the Strict
// cookie with the same id.
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
	err = s.pool.QueryRow(r.Context(), sessionReadSQL, idHash(c.Value), now).Scan(&sess.User, &token, &sess.Expires)
	if errors.Is(err, pgx.ErrNoRows) {
		return Session{}, false, nil
	}
	if err != nil {
		return Session{}, false, fmt.Errorf("read session: %w", err)
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
