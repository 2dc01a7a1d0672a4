package httpauth

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"golang.org/x/time/rate"

	"github.com/msgx/msgx/pkg/envconf"
)

// Config are the API's access settings (ingest).
type Config struct {
	Tokens      Clients `envconfig:"MSGX_API_TOKENS" default:"" doc:"(none)" desc:"ingest API: the clients' bearer tokens as client:scope+scope:sha256hex, comma-separated (scopes send, read; only SHA-256 hashes; msgxctl token new makes a token and its entry); none: every API request is 401; required in production"`
	Rate        int     `envconfig:"MSGX_API_RATE" default:"20" desc:"ingest API: requests per second each client may make (token bucket; beyond it 429 with Retry-After)"`
	Burst       int     `envconfig:"MSGX_API_BURST" default:"40" desc:"ingest API: requests a client may make at once above its rate"`
	MaxInFlight int     `envconfig:"MSGX_API_MAX_IN_FLIGHT" default:"16" desc:"ingest API: requests served at once over all clients (beyond it 429 with Retry-After: 1)"`
}

// Validate reports every bad value, one line each.
func (c Config) Validate() error {
	var p envconf.Problems
	p.Between("MSGX_API_RATE", int64(c.Rate), 1, 100000)
	p.Between("MSGX_API_BURST", int64(c.Burst), 1, 100000)
	p.Between("MSGX_API_MAX_IN_FLIGHT", int64(c.MaxInFlight), 1, 10000)
	return p.Err()
}

// Gate authenticates, authorises and limits API requests. Build it once per process.
type Gate struct {
	clients  Clients
	limiters []*rate.Limiter // one per client name, shared by that client's tokens
	inFlight chan struct{}
	now      func() time.Time
	// Refused, when set, is told every refusal: the status and a short reason ("no_token",
	// "invalid_token", "revoked", "scope", "rate", "concurrency", "body").
	Refused func(code int, reason string)
	// Revoked, when set, refuses the tokens an operator revoked (msgxctl token revoke).
	Revoked *RevokedSet
}

// NewGate returns the gate of cfg; now is the clock of the rate limits (time.Now in production).
func NewGate(cfg Config, now func() time.Time) *Gate {
	envconf.FillZero(&cfg)
	g := &Gate{clients: cfg.Tokens, inFlight: make(chan struct{}, cfg.MaxInFlight), now: now}
	byName := map[string]*rate.Limiter{}
	for _, c := range cfg.Tokens {
		l, ok := byName[c.Name]
		if !ok {
			l = rate.NewLimiter(rate.Limit(cfg.Rate), cfg.Burst)
			byName[c.Name] = l
		}
		g.limiters = append(g.limiters, l)
	}
	return g
}

type clientKey struct{}

// ClientName returns the authenticated client of a request the gate let through ("" otherwise).
func ClientName(ctx context.Context) string {
	s, _ := ctx.Value(clientKey{}).(string)
	return s
}

// Require wraps h: the request must carry a token of a client holding scope, within the
// client's rate and the global concurrency limit.
func (g *Gate) Require(scope Scope, h http.Handler) http.Handler { return g.require(scope, 0, h) }

// RequireBody is Require for a handler that reads a body of at most limit bytes: the body is
// read before the request takes an in-flight slot, so slow uploads (a byte a second) cannot hold
// the slots the other requests need; the server's read timeout ends them. A body over limit
// reaches h cut at limit+1 bytes (h refuses it).
func (g *Gate) RequireBody(scope Scope, limit int64, h http.Handler) http.Handler {
	return g.require(scope, limit, h)
}

func (g *Gate) require(scope Scope, bodyLimit int64, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, ok := bearer(r.Header.Get("Authorization"))
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="msgx"`)
			g.refuse(w, http.StatusUnauthorized, "no_token", "missing bearer token: send Authorization: Bearer <token> (a token with scope "+string(scope)+")")
			return
		}
		i := g.clients.index(token)
		if i < 0 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="msgx", error="invalid_token"`)
			g.refuse(w, http.StatusUnauthorized, "invalid_token", "unknown bearer token")
			return
		}
		c := g.clients[i]
		if g.Revoked != nil && g.Revoked.Revoked(r.Context(), c.Hash) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="msgx", error="invalid_token"`)
			g.refuse(w, http.StatusUnauthorized, "revoked", "revoked bearer token: ask the operators for a new one")
			return
		}
		if !c.Has(scope) {
			w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer realm="msgx", error="insufficient_scope", scope=%q`, scope))
			g.refuse(w, http.StatusForbidden, "scope", fmt.Sprintf("client %s lacks scope %s", c.Name, scope))
			return
		}
		res := g.limiters[i].ReserveN(g.now(), 1)
		if d := res.DelayFrom(g.now()); d > 0 {
			res.CancelAt(g.now()) // the request is refused: give its token back
			w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(d.Seconds()))))
			g.refuse(w, http.StatusTooManyRequests, "rate", fmt.Sprintf("client %s exceeds its rate limit; retry after %s", c.Name, d.Round(time.Millisecond)))
			return
		}
		if bodyLimit > 0 && r.Body != nil && r.Body != http.NoBody {
			body, err := io.ReadAll(io.LimitReader(r.Body, bodyLimit+1))
			if err != nil {
				w.Header().Set("Connection", "close")
				g.refuse(w, http.StatusRequestTimeout, "body", "the request body did not arrive in time; send it again")
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		select {
		case g.inFlight <- struct{}{}:
		default:
			w.Header().Set("Retry-After", "1")
			g.refuse(w, http.StatusTooManyRequests, "concurrency", fmt.Sprintf("too many API requests in flight (%d); retry later", cap(g.inFlight)))
			return
		}
		defer func() { <-g.inFlight }()
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), clientKey{}, c.Name)))
	})
}

// bearer extracts the token of an "Authorization: Bearer <token>" header (RFC 6750 §2.1; the
// scheme is case-insensitive).
func bearer(h string) (string, bool) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(h), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

func (g *Gate) refuse(w http.ResponseWriter, code int, reason, text string) {
	if g.Refused != nil {
		g.Refused(code, reason)
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_, _ = io.WriteString(w, text+"\n")
}
