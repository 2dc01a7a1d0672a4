package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/dev/mailboxtest"
	"github.com/msgx/msgx/pkg/dev/testdb"
	"github.com/msgx/msgx/pkg/dev/tlsenv"
	"github.com/msgx/msgx/pkg/httpauth"
	"github.com/msgx/msgx/pkg/obs"
	"github.com/msgx/msgx/pkg/roles"
)

// api is one running ingest for the API tests: production-shaped (its own PostgreSQL role
// over verify-full, its own mailbox user over verified TLS through a proxy the test can cut),
// with tokens for a sender, a reader and a client with both scopes.
type api struct {
	pg               *testdb.DB
	mb               *mailboxtest.DB
	proxy            *proxy
	ops, base        string
	send, read, both string
}

func startAPI(t *testing.T, tune func(*Config)) *api {
	t.Helper()
	pg := tlsenv.PG(t).NewDB(t)
	mb := tlsenv.MySQL(t).NewDB(t)
	users := mb.Users(t)
	dsn, err := mysql.ParseDSN(users.DSN(roles.Ingest))
	require.NoError(t, err)
	p := startProxy(t, dsn.Addr)
	dsn.Addr = p.addr

	cfg, err := load()
	require.NoError(t, err)
	cfg.PGURL, cfg.Mailbox.MySQLDSN = pg.Roles(t).URL(roles.Ingest), dsn.FormatDSN()
	cfg.HTTPAddr, cfg.API.Addr = "127.0.0.1:0", "127.0.0.1:0"
	cfg.Ingest.PollInterval = 20 * time.Millisecond
	cfg.ShutdownTimeout, cfg.ShutdownDrain, cfg.DBTimeout = 5*time.Second, 0, 3*time.Second
	a := &api{pg: pg, mb: mb, proxy: p}
	for _, c := range []struct {
		name   string
		scopes []httpauth.Scope
		into   *string
	}{
		{"aodb", []httpauth.Scope{httpauth.ScopeSend}, &a.send},
		{"portal", []httpauth.Scope{httpauth.ScopeRead}, &a.read},
		{"ops", []httpauth.Scope{httpauth.ScopeSend, httpauth.ScopeRead}, &a.both},
	} {
		tok, e, err := httpauth.NewToken(c.name, c.scopes...)
		require.NoError(t, err)
		*c.into = tok
		cfg.API.Access.Tokens = append(cfg.API.Access.Tokens, e)
	}
	if tune != nil {
		tune(&cfg)
	}
	ctx, cancel := context.WithCancel(context.Background())
	addrs := make(chan [2]string, 1)
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, cfg, obs.NewLogger(io.Discard, "info", "ingest"), obs.NewRegistry(), func(ops, api *obs.Server) { addrs <- [2]string{ops.Addr(), api.Addr()} })
	}()
	select {
	case got := <-addrs:
		a.ops, a.base = "http://"+got[0], "http://"+got[1]
	case err := <-done:
		cancel()
		t.Fatalf("ingest ended at start: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	return a
}

type reply struct {
	code   int
	header http.Header
	body   string
}

func (a *api) do(t *testing.T, method, path, token, body string) reply {
	t.Helper()
	req, err := http.NewRequest(method, a.base+path, strings.NewReader(body))
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/xml")
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	return reply{resp.StatusCode, resp.Header, string(b)}
}

func (a *api) watermark(t *testing.T) int64 {
	t.Helper()
	var w int64
	require.NoError(t, a.pg.Pool.QueryRow(context.Background(), `SELECT watermark FROM inbox_cursor`).Scan(&w))
	return w
}

// TestAPIRefusals: unauthenticated, wrong-scope, rate-limited and oversized requests each get
// their status and say what is missing; the ops listener serves no API route.
func TestAPIRefusals(t *testing.T) {
	t.Parallel()
	a := startAPI(t, func(c *Config) {
		c.API.Access.Rate, c.API.Access.Burst = 1, 3
		c.Compat.MaxBody = 2048
	})

	r := a.do(t, http.MethodGet, "/flights/1", "", "")
	require.Equal(t, http.StatusUnauthorized, r.code)
	require.Equal(t, `Bearer realm="msgx"`, r.header.Get("WWW-Authenticate"))
	require.Contains(t, r.body, "missing bearer token")
	r = a.do(t, http.MethodPost, "/cminmsgs/send", "msgx_not-a-token", "<MSG/>")
	require.Equal(t, http.StatusUnauthorized, r.code)
	require.Contains(t, r.header.Get("WWW-Authenticate"), `error="invalid_token"`)

	r = a.do(t, http.MethodPost, "/cminmsgs/send", a.read, "<MSG/>")
	require.Equal(t, http.StatusForbidden, r.code)
	require.Equal(t, "client portal lacks scope send\n", r.body)
	r = a.do(t, http.MethodGet, "/all/flights?day=2026-12-02", a.send, "")
	require.Equal(t, http.StatusForbidden, r.code)
	require.Contains(t, r.header.Get("WWW-Authenticate"), `scope="read"`)

	r = a.do(t, http.MethodPost, "/cminmsgs/send", a.both, "<MSG>"+strings.Repeat("x", 4096)+"</MSG>")
	require.Equal(t, http.StatusRequestEntityTooLarge, r.code)
	require.Contains(t, r.body, "body larger than 2048 bytes")

	// portal's bucket holds 3 and refills at 1/s: of 12 quick requests at most 3 + the refill
	// pass, the rest are 429 with the wait; another client is not affected.
	start := time.Now()
	passed, limited := 0, 0
	var last reply
	for range 12 {
		r := a.do(t, http.MethodGet, "/flights/1", a.read, "")
		switch r.code {
		case http.StatusNotFound:
			passed++
		case http.StatusTooManyRequests:
			limited++
			last = r
		default:
			t.Fatalf("unexpected %d: %s", r.code, r.body)
		}
	}
	require.LessOrEqual(t, passed, 3+int(time.Since(start).Seconds())+1, "the bucket bounds what passes")
	require.Positive(t, limited)
	require.Equal(t, "1", last.header.Get("Retry-After"))
	require.Contains(t, last.body, "client portal exceeds its rate limit")
	require.Equal(t, http.StatusNotFound, a.do(t, http.MethodGet, "/flights/1", a.both, "").code)

	resp, err := http.Get(a.ops + "/flights/1")
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusNotFound, resp.StatusCode, "the ops port serves no API")
	resp, err = http.Get(a.ops + "/metrics")
	require.NoError(t, err)
	m, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	for _, line := range []string{
		`msgx_ingest_api_refused_total{code="401",reason="no_token"} 1`,
		`msgx_ingest_api_refused_total{code="401",reason="invalid_token"} 1`,
		`msgx_ingest_api_refused_total{code="403",reason="scope"} 2`,
	} {
		require.Contains(t, string(m), line)
	}
	require.Contains(t, string(m), fmt.Sprintf(`msgx_ingest_api_refused_total{code="429",reason="rate"} %d`, limited))
}

// TestReadFloodDoesNotDelayIngest: the same steady mailbox traffic is ingested without and
// with a bounded flood of read requests on loopback; the watermark lag (mailbox rows committed
// but not yet under W, sampled at every insert) with the flood stays within the bound of the
// quiet run. The reads use the API's own small pool, never the poll loop's connections.
func TestReadFloodDoesNotDelayIngest(t *testing.T) {
	t.Parallel()
	a := startAPI(t, func(c *Config) {
		c.API.Access.Rate, c.API.Access.Burst, c.API.Access.MaxInFlight = 100000, 100000, 32
	})
	ctx := context.Background()
	// A day of 400 flights: each /all/flights is real work for PostgreSQL.
	_, err := a.pg.Pool.Exec(ctx, `INSERT INTO flight (flid, flno, sodt, operation_day, created_at, updated_at)
		SELECT g, 'CA' || g, '2026-12-02 08:00', '2026-12-02', now(), now() FROM generate_series(1, 400) g`)
	require.NoError(t, err)

	// phase inserts rows rows, one every tick, and returns the largest lag seen.
	phase := func(rows int) int64 {
		var lag int64
		for range rows {
			res, err := a.mb.SQL.ExecContext(ctx, `INSERT INTO cminmsgs (CMINMSGS_CLOB_MSG) VALUES ('<MSG/>')`)
			require.NoError(t, err)
			id, err := res.LastInsertId()
			require.NoError(t, err)
			lag = max(lag, id-a.watermark(t))
			time.Sleep(5 * time.Millisecond) // the traffic's pace, not a wait for a result
		}
		last := a.watermark(t)
		require.Eventually(t, func() bool {
			var maxID int64
			require.NoError(t, a.mb.SQL.QueryRowContext(ctx, `SELECT MAX(CMINMSGS_ID) FROM cminmsgs`).Scan(&maxID))
			last = a.watermark(t)
			return last == maxID
		}, time.Minute, 10*time.Millisecond)
		return lag
	}
	quiet := phase(150)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var served, other atomic.Int64
	const clients, perClient = 24, 40 // bounded: at most 960 requests
	for i := range clients {
		wg.Go(func() {
			for j := 0; j < perClient; j++ {
				select {
				case <-stop:
					return
				default:
				}
				path := "/all/flights?day=2026-12-02"
				if j%2 == 1 {
					path = fmt.Sprintf("/flights/%d", 1+(i*perClient+j)%400)
				}
				req, _ := http.NewRequest(http.MethodGet, a.base+path, nil)
				req.Header.Set("Authorization", "Bearer "+a.read)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					served.Add(1)
				} else {
					other.Add(1) // 429 when the flood exceeds MSGX_API_MAX_IN_FLIGHT
				}
			}
		})
	}
	flood := phase(150)
	close(stop)
	wg.Wait()
	t.Logf("watermark lag in rows: quiet %d, during the read flood %d (%d reads served, %d refused)", quiet, flood, served.Load(), other.Load())
	require.Positive(t, served.Load(), "the flood was served")
	// The bound: what the quiet run saw, doubled, plus one claim batch of slack for scheduling
	// on a shared machine. A starved poll loop would let the lag grow with every row (150).
	require.LessOrEqual(t, flood, max(2*quiet, quiet+25), "the read flood delayed ingest")
}

// TestReadAPIDuringMailboxOutage: with the mailbox unreachable, ingest stays ready (the
// mailbox check is informational), the read API keeps answering from PostgreSQL, and only the
// compat entry answers 503.
func TestReadAPIDuringMailboxOutage(t *testing.T) {
	t.Parallel()
	a := startAPI(t, nil)
	ctx := context.Background()
	_, err := a.pg.Pool.Exec(ctx, `INSERT INTO flight (flid, flno, sodt, operation_day, created_at, updated_at)
		VALUES (7, 'CA7', '2026-12-02 08:00', '2026-12-02', now(), now())`)
	require.NoError(t, err)
	r := a.do(t, http.MethodPost, "/cminmsgs/send", a.send, "<MSG>before</MSG>")
	require.Equal(t, http.StatusOK, r.code, r.body)

	a.proxy.cut()
	ready := func() map[string]any {
		resp, err := http.Get(a.ops + "/readyz")
		require.NoError(t, err)
		defer resp.Body.Close()
		var out map[string]any
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
		require.Equal(t, http.StatusOK, resp.StatusCode, "%v", out)
		return out
	}
	require.Eventually(t, func() bool {
		checks := ready()["checks"].(map[string]any)
		return strings.HasPrefix(checks["mailbox"].(string), "degraded: ")
	}, 30*time.Second, 50*time.Millisecond, "readyz reports the mailbox down but stays ready")

	r = a.do(t, http.MethodGet, "/flights/7", a.read, "")
	require.Equal(t, http.StatusOK, r.code, r.body)
	require.Contains(t, r.body, `"flid":7`)
	r = a.do(t, http.MethodGet, "/all/flights?day=2026-12-02", a.read, "")
	require.Equal(t, http.StatusOK, r.code, r.body)
	r = a.do(t, http.MethodPost, "/cminmsgs/send", a.send, "<MSG>during</MSG>")
	require.Equal(t, http.StatusServiceUnavailable, r.code)
	require.Contains(t, r.body, "mailbox unavailable")

	a.proxy.restore(t)
	require.Eventually(t, func() bool {
		return a.do(t, http.MethodPost, "/cminmsgs/send", a.send, "<MSG>after</MSG>").code == http.StatusOK
	}, 30*time.Second, 50*time.Millisecond, "the compat entry recovers with the mailbox")
}

// proxy forwards TCP to target until cut (listener closed, every connection dropped); restore
// listens on the same address again. A blocked mailbox without touching any server.
type proxy struct {
	target, addr string
	mu           sync.Mutex
	ln           net.Listener
	conns        map[net.Conn]bool
	wg           sync.WaitGroup
}

func startProxy(t *testing.T, target string) *proxy {
	t.Helper()
	p := &proxy{target: target, conns: map[net.Conn]bool{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p.addr = ln.Addr().String()
	p.serve(ln)
	t.Cleanup(func() { p.cut(); p.wg.Wait() })
	return p
}

func (p *proxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	p.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", p.target)
			if err != nil {
				_ = c.Close()
				continue
			}
			if !p.track(c, up) {
				continue
			}
			p.wg.Go(func() { _, _ = io.Copy(up, c); _ = up.Close() })
			p.wg.Go(func() { _, _ = io.Copy(c, up); _ = c.Close() })
		}
	})
}

func (p *proxy) track(cs ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln == nil {
		for _, c := range cs {
			_ = c.Close()
		}
		return false
	}
	for _, c := range cs {
		p.conns[c] = true
	}
	return true
}

func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		_ = p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		_ = c.Close()
	}
	clear(p.conns)
}

func (p *proxy) restore(t *testing.T) {
	ln, err := net.Listen("tcp", p.addr)
	require.NoError(t, err, "listen again on %s", p.addr)
	p.serve(ln)
}
