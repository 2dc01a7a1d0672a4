// Package hydra runs a real OpenID Connect provider for tests: ORY Hydra (scripts/ensure-hydra.sh
// builds the pinned version), one per test, on a fresh PostgreSQL database and random loopback
// ports. Hydra leaves the log-in and consent screens to an application of ours: this package
// serves one that logs in the user the browser names (a cookie) and accepts the consent with
// that user's groups in the ID token, both through Hydra's admin API.
package hydra

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/dev/testdb"
)

// Version is the Hydra scripts/ensure-hydra.sh builds.
const Version = "v2.3.0"

// EnsureScript builds it, relative to the repository root.
const EnsureScript = "scripts/ensure-hydra.sh"

// UserCookie names, on the log-in application's address, the user the browser logs in as.
const UserCookie = "hydra_test_user"

// Binary is the built hydra's path. Without it the test skips, except under CI where it fails.
func Binary(t testing.TB) string {
	t.Helper()
	home := os.Getenv("MSGX_HYDRA_HOME")
	if home == "" {
		cache, err := os.UserCacheDir()
		require.NoError(t, err)
		home = filepath.Join(cache, "msgx", "hydra-"+Version)
	}
	bin := filepath.Join(home, "bin", "hydra")
	if _, err := os.Stat(bin); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("hydra %s is not built at %s: run %s", Version, bin, EnsureScript)
		}
		t.Skipf("hydra %s is not built at %s (%s builds it)", Version, bin, EnsureScript)
	}
	return bin
}

// Provider is a running Hydra.
type Provider struct {
	Issuer string // the public URL, as Hydra names itself in its tokens
	Admin  string // the admin API's URL
	Login  string // the log-in application's URL

	mu     sync.Mutex
	groups map[string][]string // user → the groups its ID token carries
}

// Start runs Hydra for t: hydra migrate sql up on a fresh database, then hydra serve all --dev;
// both end with the test.
func Start(t testing.TB) *Provider {
	t.Helper()
	bin := Binary(t)
	p := &Provider{groups: map[string][]string{}}
	app := httptest.NewServer(p.loginApp(t))
	t.Cleanup(app.Close)
	p.Login = app.URL
	pub, admin := freePort(t), freePort(t)
	p.Issuer, p.Admin = "http://127.0.0.1:"+pub, "http://127.0.0.1:"+admin
	env := append(os.Environ(),
		"DSN="+database(t),
		"SECRETS_SYSTEM=msgx-test-secret-"+testdb.RandomSuffix(),
		"URLS_SELF_ISSUER="+p.Issuer,
		"URLS_LOGIN="+p.Login+"/login",
		"URLS_CONSENT="+p.Login+"/consent",
		"SERVE_PUBLIC_HOST=127.0.0.1", "SERVE_PUBLIC_PORT="+pub,
		"SERVE_ADMIN_HOST=127.0.0.1", "SERVE_ADMIN_PORT="+admin,
		"LOG_LEVEL=warn", "SQA_OPT_OUT=true",
	)
	var out bytes.Buffer
	mig := exec.Command(bin, "migrate", "sql", "up", "-e", "--yes")
	mig.Env, mig.Stdout, mig.Stderr = env, &out, &out
	require.NoError(t, mig.Run(), "hydra migrate sql up: %s", out.String())

	ctx, cancel := context.WithCancel(context.Background())
	var log lockedBuffer
	srv := exec.CommandContext(ctx, bin, "serve", "all", "--dev", "--sqa-opt-out")
	srv.Env, srv.Stdout, srv.Stderr = env, &log, &log
	require.NoError(t, srv.Start())
	t.Cleanup(func() {
		cancel()
		_ = srv.Wait()
		if t.Failed() {
			t.Logf("hydra's log:\n%s", log.String())
		}
	})
	require.Eventually(t, func() bool {
		return ready(p.Admin+"/health/ready") && ready(p.Issuer+"/.well-known/openid-configuration")
	}, 60*time.Second, 20*time.Millisecond, "hydra did not become ready: %s", &log)
	// The issuer as Hydra writes it in its discovery document and tokens (a client must name it
	// exactly so).
	resp, err := http.Get(p.Issuer + "/.well-known/openid-configuration")
	require.NoError(t, err)
	defer resp.Body.Close()
	var disc struct {
		Issuer string `json:"issuer"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&disc))
	p.Issuer = disc.Issuer
	return p
}

func ready(u string) bool {
	resp, err := http.Get(u)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// database creates a fresh database for Hydra on the tests' PostgreSQL and returns its URL; it
// is dropped when the test ends (after Hydra stopped: cleanups run last-registered first).
func database(t testing.TB) string {
	t.Helper()
	ctx := context.Background()
	name := "hydra_" + testdb.RandomSuffix()
	admin, err := pgx.Connect(ctx, testdb.AdminURL())
	require.NoError(t, err)
	_, err = admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
	require.NoError(t, err)
	t.Cleanup(func() {
		_, err := admin.Exec(context.Background(), "DROP DATABASE "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
		require.NoError(t, err)
		require.NoError(t, admin.Close(context.Background()))
	})
	u, err := url.Parse(testdb.AdminURL())
	require.NoError(t, err)
	u.Path = "/" + name
	q := u.Query()
	q.Set("sslmode", "disable")
	u.RawQuery = q.Encode()
	return u.String()
}

// freePort is a loopback port nobody listens on now.
func freePort(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	_, port, _ := net.SplitHostPort(l.Addr().String())
	require.NoError(t, l.Close())
	return port
}

// User makes name a user of the provider whose ID tokens carry groups.
func (p *Provider) User(name string, groups ...string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.groups[name] = groups
}

// Client registers a confidential client (authorization code, client_secret_basic) that may
// come back to redirect, and returns its id and secret.
func (p *Provider) Client(t testing.TB, redirect string) (id, secret string) {
	t.Helper()
	var c struct {
		ID     string `json:"client_id"`
		Secret string `json:"client_secret"`
	}
	p.admin(t, http.MethodPost, "/admin/clients", map[string]any{
		"client_name": "msgx console", "grant_types": []string{"authorization_code"}, "response_types": []string{"code"},
		"redirect_uris": []string{redirect}, "scope": "openid profile email", "token_endpoint_auth_method": "client_secret_basic",
	}, &c)
	require.NotEmpty(t, c.ID)
	require.NotEmpty(t, c.Secret)
	return c.ID, c.Secret
}

// Browser is a cookie-keeping client of user that follows redirects (through the provider and
// its log-in application) unless stop says to stop at a URL.
func (p *Provider) Browser(t testing.TB, user string, stop func(*url.URL) bool) *http.Client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	login, err := url.Parse(p.Login)
	require.NoError(t, err)
	jar.SetCookies(login, []*http.Cookie{{Name: UserCookie, Value: user, Path: "/"}})
	return &http.Client{Jar: jar, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if len(via) >= 20 {
			return fmt.Errorf("stopped after %d redirects", len(via))
		}
		if stop != nil && stop(req.URL) {
			return http.ErrUseLastResponse
		}
		return nil
	}}
}

// loginApp accepts Hydra's log-in request for the user the browser's cookie names (refusing it
// when there is none) and the consent request with every scope asked and the user's groups (and
// name) in the ID token.
func (p *Provider) loginApp(t testing.TB) http.Handler {
	mux := http.NewServeMux()
	// /as?user=NAME sets the cookie: a real browser's way to choose its user.
	mux.HandleFunc("GET /as", func(w http.ResponseWriter, r *http.Request) {
		http.SetCookie(w, &http.Cookie{Name: UserCookie, Value: r.URL.Query().Get("user"), Path: "/"})
		_, _ = io.WriteString(w, "<!doctype html><title>user set</title>")
	})
	mux.HandleFunc("GET /login", func(w http.ResponseWriter, r *http.Request) {
		c, err := r.Cookie(UserCookie)
		ch := url.QueryEscape(r.URL.Query().Get("login_challenge"))
		var to struct {
			RedirectTo string `json:"redirect_to"`
		}
		if err != nil || c.Value == "" {
			p.admin(t, http.MethodPut, "/admin/oauth2/auth/requests/login/reject?login_challenge="+ch,
				map[string]any{"error": "access_denied", "error_description": "no such user"}, &to)
		} else {
			p.admin(t, http.MethodPut, "/admin/oauth2/auth/requests/login/accept?login_challenge="+ch,
				map[string]any{"subject": c.Value, "remember": false}, &to)
		}
		http.Redirect(w, r, to.RedirectTo, http.StatusFound)
	})
	mux.HandleFunc("GET /consent", func(w http.ResponseWriter, r *http.Request) {
		ch := url.QueryEscape(r.URL.Query().Get("consent_challenge"))
		var req struct {
			Subject  string   `json:"subject"`
			Scope    []string `json:"requested_scope"`
			Audience []string `json:"requested_access_token_audience"`
		}
		p.admin(t, http.MethodGet, "/admin/oauth2/auth/requests/consent?consent_challenge="+ch, nil, &req)
		p.mu.Lock()
		groups := p.groups[req.Subject]
		p.mu.Unlock()
		if groups == nil {
			groups = []string{}
		}
		var to struct {
			RedirectTo string `json:"redirect_to"`
		}
		p.admin(t, http.MethodPut, "/admin/oauth2/auth/requests/consent/accept?consent_challenge="+ch, map[string]any{
			"grant_scope": req.Scope, "grant_access_token_audience": req.Audience, "remember": false,
			"session": map[string]any{"id_token": map[string]any{"groups": groups, "preferred_username": req.Subject}},
		}, &to)
		http.Redirect(w, r, to.RedirectTo, http.StatusFound)
	})
	return mux
}

// admin calls Hydra's admin API with body (JSON; nil: none) and decodes the answer into out.
func (p *Provider) admin(t testing.TB, method, path string, body, out any) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Errorf("hydra admin %s %s: %v", method, path, err)
			return
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, p.Admin+path, rd)
	if err != nil {
		t.Errorf("hydra admin %s %s: %v", method, path, err)
		return
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Errorf("hydra admin %s %s: %v", method, path, err)
		return
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		t.Errorf("hydra admin %s %s: %s: %s", method, path, resp.Status, strings.TrimSpace(string(b)))
		return
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Errorf("hydra admin %s %s: decode %s: %v", method, path, b, err)
	}
}

// lockedBuffer is Hydra's log, written by its process and read by the test.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
