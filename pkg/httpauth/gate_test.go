package httpauth_test

import (
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/httpauth"
)

type bundle struct {
	gate    *httpauth.Gate
	now     time.Time
	mu      sync.Mutex
	refused []string
	send    string // token of client "aodb" (send)
	read    string // token of client "portal" (read)
	both    string // token of client "ops" (send+read)
}

func (b *bundle) clock() time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.now
}

func (b *bundle) advance(d time.Duration) {
	b.mu.Lock()
	b.now = b.now.Add(d)
	b.mu.Unlock()
}

func setup(t *testing.T, cfg httpauth.Config) *bundle {
	t.Helper()
	b := &bundle{now: time.Date(2026, 12, 2, 8, 0, 0, 0, time.UTC)}
	var entries httpauth.Clients
	for _, c := range []struct {
		name   string
		scopes []httpauth.Scope
		into   *string
	}{
		{"aodb", []httpauth.Scope{httpauth.ScopeSend}, &b.send},
		{"portal", []httpauth.Scope{httpauth.ScopeRead}, &b.read},
		{"ops", []httpauth.Scope{httpauth.ScopeSend, httpauth.ScopeRead}, &b.both},
	} {
		tok, e, err := httpauth.NewToken(c.name, c.scopes...)
		require.NoError(t, err)
		*c.into = tok
		entries = append(entries, e)
	}
	// Through the configuration text, as MSGX_API_TOKENS gives it.
	text, err := entries.MarshalText()
	require.NoError(t, err)
	require.NoError(t, cfg.Tokens.UnmarshalText(text))
	b.gate = httpauth.NewGate(cfg, b.clock)
	b.gate.Refused = func(code int, reason string) {
		b.mu.Lock()
		b.refused = append(b.refused, reason)
		b.mu.Unlock()
	}
	return b
}

type answer struct {
	code   int
	body   string
	header http.Header
}

func (b *bundle) do(t *testing.T, scope httpauth.Scope, auth string, h http.Handler) answer {
	t.Helper()
	if h == nil {
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, "hello "+httpauth.ClientName(r.Context()))
		})
	}
	req := httptest.NewRequest(http.MethodGet, "/flights/1", nil)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	rec := httptest.NewRecorder()
	b.gate.Require(scope, h).ServeHTTP(rec, req)
	return answer{rec.Code, rec.Body.String(), rec.Header()}
}

func TestAuthentication(t *testing.T) {
	t.Parallel()
	b := setup(t, httpauth.Config{Rate: 100, Burst: 100, MaxInFlight: 4})

	a := b.do(t, httpauth.ScopeRead, "", nil)
	require.Equal(t, http.StatusUnauthorized, a.code)
	require.Equal(t, `Bearer realm="msgx"`, a.header.Get("WWW-Authenticate"))
	require.Contains(t, a.body, "missing bearer token")
	require.Contains(t, a.body, "scope read", "the answer says which scope to bring")

	a = b.do(t, httpauth.ScopeRead, "Basic dXNlcjpwdw==", nil)
	require.Equal(t, http.StatusUnauthorized, a.code, "another scheme is no token")

	a = b.do(t, httpauth.ScopeRead, "Bearer "+b.read+"x", nil)
	require.Equal(t, http.StatusUnauthorized, a.code)
	require.Contains(t, a.header.Get("WWW-Authenticate"), `error="invalid_token"`)
	require.Equal(t, "unknown bearer token\n", a.body)

	a = b.do(t, httpauth.ScopeRead, "bearer  "+b.read, nil)
	require.Equal(t, http.StatusOK, a.code, "the scheme is case-insensitive")
	require.Equal(t, "hello portal", a.body)

	a = b.do(t, httpauth.ScopeSend, "Bearer "+b.read, nil)
	require.Equal(t, http.StatusForbidden, a.code)
	require.Contains(t, a.header.Get("WWW-Authenticate"), `error="insufficient_scope", scope="send"`)
	require.Equal(t, "client portal lacks scope send\n", a.body)

	require.Equal(t, http.StatusOK, b.do(t, httpauth.ScopeSend, "Bearer "+b.send, nil).code)
	require.Equal(t, http.StatusForbidden, b.do(t, httpauth.ScopeRead, "Bearer "+b.send, nil).code)
	require.Equal(t, http.StatusOK, b.do(t, httpauth.ScopeRead, "Bearer "+b.both, nil).code)
	require.Equal(t, http.StatusOK, b.do(t, httpauth.ScopeSend, "Bearer "+b.both, nil).code)
	require.Equal(t, []string{"no_token", "no_token", "invalid_token", "scope", "scope"}, b.refused)
}

// No tokens configured: every request is refused (the API is never open by accident).
func TestNoTokensRefusesEverything(t *testing.T) {
	t.Parallel()
	g := httpauth.NewGate(httpauth.Config{}, time.Now)
	tok, _, err := httpauth.NewToken("x", httpauth.ScopeRead)
	require.NoError(t, err)
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	rec := httptest.NewRecorder()
	g.Require(httpauth.ScopeRead, http.NotFoundHandler()).ServeHTTP(rec, req)
	require.Equal(t, http.StatusUnauthorized, rec.Code)
}

func TestRateLimitPerClient(t *testing.T) {
	t.Parallel()
	b := setup(t, httpauth.Config{Rate: 2, Burst: 3, MaxInFlight: 4})
	for range 3 {
		require.Equal(t, http.StatusOK, b.do(t, httpauth.ScopeRead, "Bearer "+b.read, nil).code)
	}
	a := b.do(t, httpauth.ScopeRead, "Bearer "+b.read, nil)
	require.Equal(t, http.StatusTooManyRequests, a.code)
	require.Equal(t, "1", a.header.Get("Retry-After"), "2/s: the next token in 500ms, rounded up to a second")
	require.Contains(t, a.body, "client portal exceeds its rate limit")

	// Another client has its own bucket.
	require.Equal(t, http.StatusOK, b.do(t, httpauth.ScopeRead, "Bearer "+b.both, nil).code)
	// A refused request does not consume: after 500ms exactly one more passes.
	b.advance(500 * time.Millisecond)
	require.Equal(t, http.StatusOK, b.do(t, httpauth.ScopeRead, "Bearer "+b.read, nil).code)
	require.Equal(t, http.StatusTooManyRequests, b.do(t, httpauth.ScopeRead, "Bearer "+b.read, nil).code)

	// Rate 1 per 10 s would say Retry-After: 10 — the header is the real wait, rounded up.
	slow := setup(t, httpauth.Config{Rate: 1, Burst: 1, MaxInFlight: 4})
	require.Equal(t, http.StatusOK, slow.do(t, httpauth.ScopeRead, "Bearer "+slow.read, nil).code)
	slow.advance(200 * time.Millisecond)
	require.Equal(t, "1", slow.do(t, httpauth.ScopeRead, "Bearer "+slow.read, nil).header.Get("Retry-After"))
}

func TestConcurrencyLimit(t *testing.T) {
	t.Parallel()
	b := setup(t, httpauth.Config{Rate: 1000, Burst: 1000, MaxInFlight: 2})
	release := make(chan struct{})
	entered := make(chan struct{}, 2)
	blocking := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		<-release
	})
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() { b.do(t, httpauth.ScopeRead, "Bearer "+b.both, blocking) })
	}
	<-entered
	<-entered
	a := b.do(t, httpauth.ScopeRead, "Bearer "+b.read, nil)
	require.Equal(t, http.StatusTooManyRequests, a.code, "two in flight: the third is refused whoever asks")
	require.Equal(t, "1", a.header.Get("Retry-After"))
	require.Contains(t, a.body, "too many API requests in flight (2)")
	close(release)
	wg.Wait()
	require.Equal(t, http.StatusOK, b.do(t, httpauth.ScopeRead, "Bearer "+b.read, nil).code, "slots are given back")
}

func TestParseClients(t *testing.T) {
	t.Parallel()
	h := strings.Repeat("ab", 32)
	var cs httpauth.Clients
	require.NoError(t, cs.UnmarshalText([]byte(" aodb:send:"+h+" ,\nportal:read+send+read:"+strings.Repeat("cd", 32)+"\n")))
	require.Len(t, cs, 2)
	require.Equal(t, "aodb", cs[0].Name)
	require.Equal(t, []httpauth.Scope{httpauth.ScopeRead, httpauth.ScopeSend}, cs[1].Scopes, "duplicates dropped")
	require.Equal(t, h, hex.EncodeToString(cs[0].Hash[:]))

	require.NoError(t, cs.UnmarshalText(nil))
	require.Empty(t, cs)

	for in, want := range map[string]string{
		"aodb:send":                             "entry 1: want client:scope+scope:sha256hex",
		"aodb:write:" + h:                       `entry 1 (aodb): unknown scope "write"`,
		"aodb:send:abc":                         "entry 1 (aodb): the hash must be 64 hex digits",
		"a b:send:" + h:                         `entry 1: client name "a b"`,
		"a:send:" + h + ",b:read:" + h:          "entry 2 (b): the same token hash is configured twice",
		"aodb:send:" + strings.Repeat("zz", 32): "entry 1 (aodb): the hash must be 64 hex digits",
	} {
		err := cs.UnmarshalText([]byte(in))
		require.ErrorContains(t, err, want, in)
		require.NotContains(t, err.Error(), h, "a hash is never echoed")
	}
}

func TestNewToken(t *testing.T) {
	t.Parallel()
	tok, e, err := httpauth.NewToken("portal", httpauth.ScopeRead, httpauth.ScopeRead)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(tok, httpauth.TokenPrefix))
	require.Len(t, tok, len(httpauth.TokenPrefix)+43, "256 random bits, base64url")
	require.Equal(t, httpauth.Hash(tok), e.Hash)
	require.Equal(t, []httpauth.Scope{httpauth.ScopeRead}, e.Scopes)
	tok2, _, err := httpauth.NewToken("portal", httpauth.ScopeRead)
	require.NoError(t, err)
	require.NotEqual(t, tok, tok2)
	_, _, err = httpauth.NewToken("portal")
	require.Error(t, err)
	_, _, err = httpauth.NewToken("a:b", httpauth.ScopeRead)
	require.Error(t, err)
}

func TestValidate(t *testing.T) {
	t.Parallel()
	require.NoError(t, httpauth.Config{Rate: 1, Burst: 1, MaxInFlight: 1}.Validate())
	err := httpauth.Config{}.Validate()
	require.Error(t, err)
	require.Len(t, strings.Split(err.Error(), "\n"), 3)
}

// Slow uploads do not hold the in-flight slots: with one slot, a body that is still arriving
// leaves the slot to a read, and reaches its handler whole once sent.
func TestSlowBodyHoldsNoInFlightSlot(t *testing.T) {
	t.Parallel()
	b := setup(t, httpauth.Config{Rate: 100, Burst: 100, MaxInFlight: 1})
	got := make(chan string, 1)
	mux := http.NewServeMux()
	mux.Handle("POST /send", b.gate.RequireBody(httpauth.ScopeSend, 1024, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got <- string(body)
	})))
	mux.Handle("GET /read", b.gate.Require(httpauth.ScopeRead, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {})))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	pr, pw := io.Pipe()
	t.Cleanup(func() { _ = pw.Close() }) // before the server's Close, which waits for the upload
	req, err := http.NewRequest(http.MethodPost, srv.URL+"/send", pr)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+b.send)
	sent := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		sent <- err
	}()
	_, err = pw.Write([]byte("<MSG")) // the upload has begun and stalls
	require.NoError(t, err)
	for range 3 {
		r, err := http.NewRequest(http.MethodGet, srv.URL+"/read", nil)
		require.NoError(t, err)
		r.Header.Set("Authorization", "Bearer "+b.read)
		resp, err := http.DefaultClient.Do(r)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, "the stalled upload holds no slot")
	}
	_, err = pw.Write([]byte("/>"))
	require.NoError(t, err)
	require.NoError(t, pw.Close())
	require.Equal(t, "<MSG/>", <-got)
	require.NoError(t, <-sent)
}
