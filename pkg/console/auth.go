package console

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

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
	Scope   httpauth.Scope // the strongest console scope the user's token holds
	Expires time.Time
	raw     string // the cookie value, which the CSRF token is bound to
}

// CanOperate reports whether the session may act (replay, skip, request).
func (s Session) CanOperate() bool { return s.Scope == httpauth.ScopeOperate }

const cookieName = "msgx_console"

// sessions signs and checks session cookies and CSRF tokens with one key.
type sessions struct {
	key    []byte
	ttl    time.Duration
	secure bool
}

func newSessions(key string, ttl time.Duration, secure bool) (*sessions, error) {
	k := []byte(key)
	if len(k) == 0 {
		k = make([]byte, 32)
		if _, err := rand.Read(k); err != nil {
			return nil, fmt.Errorf("make session key: %w", err)
		}
	}
	return &sessions{key: k, ttl: ttl, secure: secure}, nil
}

func (s *sessions) mac(parts ...string) string {
	m := hmac.New(sha256.New, s.key)
	for _, p := range parts {
		m.Write([]byte(p))
		m.Write([]byte{0})
	}
	return hex.EncodeToString(m.Sum(nil))
}

// issue returns the cookie of a new session for user with scope.
func (s *sessions) issue(user string, scope httpauth.Scope, now time.Time) *http.Cookie {
	nonce := make([]byte, 12)
	_, _ = rand.Read(nonce)
	exp := now.Add(s.ttl)
	payload := base64.RawURLEncoding.EncodeToString([]byte(user)) + "." + string(scope) + "." +
		strconv.FormatInt(exp.Unix(), 10) + "." + hex.EncodeToString(nonce)
	return &http.Cookie{
		Name: cookieName, Value: payload + "." + s.mac("session", payload), Path: "/",
		HttpOnly: true, Secure: s.secure, SameSite: http.SameSiteStrictMode, // a browser-session cookie; the signed expiry ends it
	}
}

// clear is the cookie that ends a session.
func (s *sessions) clear() *http.Cookie {
	return &http.Cookie{Name: cookieName, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, Secure: s.secure, SameSite: http.SameSiteStrictMode}
}

// read returns the request's valid session.
func (s *sessions) read(r *http.Request, now time.Time) (Session, bool) {
	c, err := r.Cookie(cookieName)
	if err != nil {
		return Session{}, false
	}
	i := strings.LastIndexByte(c.Value, '.')
	if i < 0 {
		return Session{}, false
	}
	payload, sig := c.Value[:i], c.Value[i+1:]
	if !hmac.Equal([]byte(sig), []byte(s.mac("session", payload))) {
		return Session{}, false
	}
	f := strings.Split(payload, ".")
	if len(f) != 4 {
		return Session{}, false
	}
	name, err := base64.RawURLEncoding.DecodeString(f[0])
	if err != nil {
		return Session{}, false
	}
	exp, err := strconv.ParseInt(f[2], 10, 64)
	if err != nil || !now.Before(time.Unix(exp, 0)) {
		return Session{}, false
	}
	return Session{User: string(name), Scope: httpauth.Scope(f[1]), Expires: time.Unix(exp, 0), raw: c.Value}, true
}

// csrf is the session's CSRF token, sent in every form and checked on every action.
func (s *sessions) csrf(sess Session) string { return s.mac("csrf", sess.raw) }

func (s *sessions) checkCSRF(sess Session, token string) bool {
	return token != "" && hmac.Equal([]byte(token), []byte(s.csrf(sess)))
}
