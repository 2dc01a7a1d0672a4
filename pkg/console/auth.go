package console

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Scope is what a console user may do.
type Scope string

// The console's scopes: view reads every page; operate also replays, skips and sends requests.
const (
	ScopeView    Scope = "view"
	ScopeOperate Scope = "operate"
)

// Client is one user's token: its name, scopes and the SHA-256 of the token (hex). The format
// is the API's (MSGX_API_TOKENS, pkg/httpauth): name:scope+scope:sha256hex. When pkg/httpauth
// lands, Clients becomes httpauth.Clients and Authenticate its look-up.
type Client struct {
	Name   string
	Scopes []Scope
	Hash   [sha256.Size]byte
}

// Clients is the parsed MSGX_CONSOLE_TOKENS.
type Clients []Client

// UnmarshalText parses name:scope+scope:sha256hex,…
func (c *Clients) UnmarshalText(b []byte) error {
	var out Clients
	for _, entry := range strings.Split(string(b), ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		parts := strings.Split(entry, ":")
		if len(parts) != 3 || parts[0] == "" {
			return fmt.Errorf("token entry %q: want user:scope+scope:sha256hex", redact(entry))
		}
		var cl Client
		cl.Name = parts[0]
		for _, s := range strings.Split(parts[1], "+") {
			switch Scope(s) {
			case ScopeView, ScopeOperate:
				cl.Scopes = append(cl.Scopes, Scope(s))
			default:
				return fmt.Errorf("token entry of %s: unknown scope %q (view, operate)", cl.Name, s)
			}
		}
		h, err := hex.DecodeString(parts[2])
		if err != nil || len(h) != sha256.Size {
			return fmt.Errorf("token entry of %s: the hash must be 64 hex digits (SHA-256 of the token)", cl.Name)
		}
		copy(cl.Hash[:], h)
		out = append(out, cl)
	}
	*c = out
	return nil
}

// redact keeps a refused entry's name only.
func redact(entry string) string {
	if i := strings.IndexByte(entry, ':'); i >= 0 {
		return entry[:i] + ":…"
	}
	return "…"
}

// HashToken is the hex SHA-256 of a token, as MSGX_CONSOLE_TOKENS holds it.
func HashToken(token string) string {
	h := sha256.Sum256([]byte(token))
	return hex.EncodeToString(h[:])
}

// Authenticate finds the client holding token (compared in constant time against every entry).
func (c Clients) Authenticate(token string) (Client, bool) {
	h := sha256.Sum256([]byte(token))
	var found Client
	ok := false
	for _, cl := range c {
		if subtle.ConstantTimeCompare(h[:], cl.Hash[:]) == 1 {
			found, ok = cl, true
		}
	}
	return found, ok
}

// Session is a logged-in user.
type Session struct {
	User    string
	Scope   Scope // the strongest scope the user's token holds
	Expires time.Time
	raw     string // the cookie value, which the CSRF token is bound to
}

// CanOperate reports whether the session may act (replay, skip, request).
func (s Session) CanOperate() bool { return s.Scope == ScopeOperate }

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

// issue returns the cookie of a new session for cl.
func (s *sessions) issue(cl Client, now time.Time) *http.Cookie {
	scope := ScopeView
	if slices.Contains(cl.Scopes, ScopeOperate) {
		scope = ScopeOperate
	}
	nonce := make([]byte, 12)
	_, _ = rand.Read(nonce)
	exp := now.Add(s.ttl)
	payload := base64.RawURLEncoding.EncodeToString([]byte(cl.Name)) + "." + string(scope) + "." +
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
	return Session{User: string(name), Scope: Scope(f[1]), Expires: time.Unix(exp, 0), raw: c.Value}, true
}

// csrf is the session's CSRF token, sent in every form and checked on every action.
func (s *sessions) csrf(sess Session) string { return s.mac("csrf", sess.raw) }

func (s *sessions) checkCSRF(sess Session, token string) bool {
	return token != "" && hmac.Equal([]byte(token), []byte(s.csrf(sess)))
}
