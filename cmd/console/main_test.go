package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/dev/testdb"
	"github.com/msgx/msgx/pkg/envconf"
	"github.com/msgx/msgx/pkg/obs"
)

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// TestRunServesProbesMetricsAndPages runs the binary's run: probes and metrics on the ops
// address, the pages on their own (neither serves the other's routes), and a clean stop when the
// context ends.
func TestRunServesProbesMetricsAndPages(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	var cfg Config
	envconf.Defaults(&cfg)
	cfg.PGURL, cfg.HTTPAddr, cfg.Console.Addr, cfg.ShutdownDrain = db.URL, "127.0.0.1:0", "127.0.0.1:0", 0
	require.NoError(t, cfg.Validate())
	ctx, cancel := context.WithCancel(context.Background())
	addrs := make(chan [2]string, 1)
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, cfg, zerolog.Nop(), obs.NewRegistry(), func(ops, pages *obs.Server) { addrs <- [2]string{ops.Addr(), pages.Addr()} })
	}()
	a := <-addrs
	opsURL, base := "http://"+a[0], "http://"+a[1]
	require.NotEqual(t, opsURL, base)
	code, _ := httpGet(t, opsURL+"/healthz")
	require.Equal(t, http.StatusOK, code)
	code, body := httpGet(t, opsURL+"/readyz")
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, `"role":"console"`, "readiness says what the process is")
	for _, p := range []string{"/login", "/", "/static/console.css"} {
		code, _ = httpGet(t, opsURL+p)
		require.Equal(t, http.StatusNotFound, code, "the ops port serves no page: %s", p)
	}
	for _, p := range []string{"/healthz", "/readyz", "/metrics"} {
		code, _ = httpGet(t, base+p)
		require.NotEqual(t, http.StatusOK, code, "the pages' port serves no ops endpoint: %s", p)
	}
	code, body = httpGet(t, base+"/login")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `name="token"`)
	resp, err := http.PostForm(base+"/login", map[string][]string{"token": {"not a token"}})
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "no token configured: nobody logs in")
	code, body = httpGet(t, opsURL+"/metrics")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `msgx_console_logins_total{outcome="refused"} 1`)
	cancel()
	require.NoError(t, <-done)
}

func TestProductionNeedsASessionKey(t *testing.T) {
	t.Parallel()
	var cfg Config
	envconf.Defaults(&cfg)
	cfg.HTTPAddr = "127.0.0.1:0"
	require.NoError(t, cfg.Validate(), "development runs with a per-process key")
	cfg.Env = "production"
	require.ErrorContains(t, cfg.Validate(), "MSGX_CONSOLE_SESSION_KEY: must be set in production")
	cfg.Console.SessionKey = strings.Repeat("k", 32)
	require.NotContains(t, cfg.Validate().Error(), "MSGX_CONSOLE_SESSION_KEY", "the other production refusals remain; the key's is gone")
}

// Production refuses session cookies that are not marked Secure: the console is reached over
// HTTPS (a TLS-terminating ingress), MSGX_CONSOLE_TLS=true.
func TestProductionNeedsSecureCookies(t *testing.T) {
	t.Parallel()
	var cfg Config
	envconf.Defaults(&cfg)
	cfg.HTTPAddr, cfg.Env, cfg.Console.SessionKey = "127.0.0.1:0", "production", strings.Repeat("k", 32)
	require.ErrorContains(t, cfg.Validate(), "MSGX_CONSOLE_TLS: production requires the console behind HTTPS")
	cfg.Console.TLS = true
	require.NotContains(t, cfg.Validate().Error(), "MSGX_CONSOLE_TLS")
}

// TestProductionManifestEnvironment: the console starts with the environment its production
// manifest gives it (the overlay's ConfigMap literals, the PostgreSQL URL, tokens and session
// key of its Secrets, no mailbox DSN: it never connects to MySQL). make rehearse starts it so;
// this is the fast form of that check.
func TestProductionManifestEnvironment(t *testing.T) {
	b, err := os.ReadFile("../../deploy/k8s/overlays/production/kustomization.yaml")
	require.NoError(t, err)
	literals := regexp.MustCompile(`(?m)^\s+- (MSGX_[A-Z0-9_]+)=(.*)$`).FindAllStringSubmatch(string(b), -1)
	require.NotEmpty(t, literals)
	for _, l := range literals {
		t.Setenv(l[1], l[2])
	}
	t.Setenv("MSGX_PG_URL", "postgres://msgx_console:pw@db.example:5432/msgx?sslmode=verify-full&sslrootcert=/etc/msgx/tls/pg-ca.crt")
	t.Setenv("MSGX_CONSOLE_TOKENS", "operator:read+operate:"+strings.Repeat("ab", 32))
	t.Setenv("MSGX_CONSOLE_SESSION_KEY", strings.Repeat("k", 32))
	t.Setenv("MSGX_CONSOLE_ADDR", "0.0.0.0:8092")
	cfg, err := load()
	require.NoError(t, err, "the console refuses its production manifest's environment")
	require.True(t, cfg.Production())
}
