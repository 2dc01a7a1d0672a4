package console_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/clock"
	"github.com/msgx/msgx/pkg/console"
	"github.com/msgx/msgx/pkg/console/consoleconf"
	"github.com/msgx/msgx/pkg/dev/simulate"
	"github.com/msgx/msgx/pkg/dev/testdb"
	"github.com/msgx/msgx/pkg/envconf"
	"github.com/msgx/msgx/pkg/flight"
	"github.com/msgx/msgx/pkg/flightstore"
	"github.com/msgx/msgx/pkg/httpauth"
	"github.com/msgx/msgx/pkg/identity"
	"github.com/msgx/msgx/pkg/leader"
	"github.com/msgx/msgx/pkg/outbox"
	"github.com/msgx/msgx/pkg/processor"
	"github.com/msgx/msgx/pkg/processor/plugins"
	"github.com/msgx/msgx/pkg/procstate"
	"github.com/msgx/msgx/pkg/request"
	"github.com/msgx/msgx/pkg/roles"
)

var ctx = context.Background()

// The day's messages have ids from firstID; the DEAD message is older.
const (
	firstID = 1001
	deadID  = 500
)

// Tokens of the tests' two users.
const (
	operatorToken = "op-token-0123456789abcdef"
	viewerToken   = "viewer-token-0123456789abcdef"
	sendToken     = "send-token-0123456789abcdef" // an API client's: no console scope
	// hostile is a message text that must render as inert text.
	hostile = `<script>document.title='pwned'</script><a href="javascript:alert(1)">click</a><b>bold</b>`
)

// world is one test's console over a simulated day processed by the real processor.
type world struct {
	db     *testdb.DB
	srv    *httptest.Server
	day    simulate.Day
	loc    *time.Location
	deadID int64 // a DEAD CODEC_ERROR message carrying hostile text, touching a known flight
	deadFL int64
	lastID int64
	deps   console.Deps // the console's, for a second console over the same database (a restart)
	eng    *processor.Engine
	clk    *clock.Fake
	engine func(batch int) *processor.Engine // another engine like eng, of another batch size
}

// setup processes a small simulated day with the real processor and serves the console as its
// own database role.
func setup(t testing.TB) *world {
	t.Helper()
	return setupDay(t, simulate.Generate(simulate.Config{Flights: 15, Additions: 1, BadShare: 0, Location: airport(t)}))
}

// airport is the simulated airport's zone.
func airport(t testing.TB) *time.Location {
	loc, err := time.LoadLocation("Asia/Shanghai")
	require.NoError(t, err)
	return loc
}

// setupDay is setup over a given day (generated in the zone airport returns).
func setupDay(t testing.TB, day simulate.Day) *world {
	t.Helper()
	db := testdb.New(t)
	loc := day.Config.Location
	t0 := day.Messages[0].At
	var err error
	clk := clock.NewFake(t0)
	_, err = db.Pool.Exec(ctx, `INSERT INTO leader_lease VALUES ('processor', 1, 'test', 0, $1, $1)`, t0)
	require.NoError(t, err)
	for i, m := range day.Messages {
		_, err := db.Pool.Exec(ctx, `INSERT INTO proc_state (msg_id, raw, raw_sha256, received_at, enqueued_at)
			VALUES ($1, $2, sha256(convert_to($2::text, 'UTF8')), $3, $4)`, firstID+int64(i), string(m.Raw), m.At.In(loc), m.At)
		require.NoError(t, err)
	}
	n := firstID + int64(len(day.Messages)) - 1
	_, err = db.Pool.Exec(ctx, `UPDATE inbox_cursor SET watermark = $1`, n)
	require.NoError(t, err)
	// The processor as cmd/processor composes it: the request rules (the RESP guard) and a
	// flight cache.
	rcfg := request.Config{Location: loc}
	envconf.Defaults(&rcfg)
	pstore, err := request.NewStore(db.Pool, rcfg)
	require.NoError(t, err)
	tcfg := request.DefaultTriggerConfig()
	tcfg.Location = loc
	hooks, err := request.NewHooks(pstore, tcfg, request.NewProcessorMetrics(prometheus.NewRegistry()), zerolog.Nop())
	require.NoError(t, err)
	pcfg := processor.Config{
		Batch: 200, MaxAttempts: 2, BackoffBase: time.Second, BackoffMax: time.Second,
		HeadDeadline: 10 * time.Minute, IdlePoll: 10 * time.Millisecond,
		IgnoreTypes: []string{"LDM", "REGN", "RSTA", "EROR"}, Location: loc, IdentityWindow: 7 * 24 * time.Hour,
	}
	require.NoError(t, identity.Ensure(ctx, db.Pool, pcfg.Rule(), "processor", t0), "stored at its start, as cmd/processor does")
	handlers := plugins.Handlers(hooks, flightstore.NewCache(1000))
	eng := processor.New(pcfg, db.Pool, handlers, nil, clk, nil, zerolog.Nop())
	w := &world{db: db, day: day, loc: loc, lastID: n, eng: eng, clk: clk,
		engine: func(batch int) *processor.Engine {
			c := pcfg
			c.Batch = batch
			return processor.New(c, db.Pool, handlers, nil, clk, nil, zerolog.Nop())
		}}
	w.drain(t)
	// A message the processor gave up on (as after a codec bug), older than the day's messages
	// so that they all came later, about a flight of the day, with hostile text in it.
	var tmpl simulate.Message
	for _, m := range day.Messages {
		if m.Type == "FLOP" && m.FLID != 0 && !strings.Contains(string(m.Raw), "<REMC>") {
			tmpl = m
		}
	}
	require.NotZero(t, tmpl.FLID, "the day has a FLOP")
	w.deadFL, w.deadID = tmpl.FLID, deadID
	raw := strings.Replace(string(tmpl.Raw), "</FLOP>", "<REMC>"+escapeXML(hostile)+"</REMC></FLOP>", 1)
	_, err = db.Pool.Exec(ctx, `INSERT INTO proc_state (msg_id, raw, raw_sha256, status, error_class, reason, attempts, msg_type, msg_styp, enqueued_at, finished_at)
		VALUES ($1, $2, sha256(convert_to($2::text, 'UTF8')), 'DEAD', 'CODEC_ERROR', $3, 1, 'FLOP', $4, $5, $5)`,
		w.deadID, raw, "decode REMC: "+hostile, tmpl.Subtype, t0)
	require.NoError(t, err)
	// Its attempt history (msg_attempt, as the engine writes it): a first failure, then DEAD.
	_, err = db.Pool.Exec(ctx, `INSERT INTO msg_attempt (msg_id, attempt, at, epoch, outcome, error_class, reason)
		VALUES ($1, 1, $2, 1, 'FAILED', 'CODEC_ERROR', 'decode REMC: first try'),
		       ($1, 2, $3, 1, 'DEAD', 'CODEC_ERROR', $4)`, w.deadID, t0, t0.Add(2*time.Second), "decode REMC: "+hostile)
	require.NoError(t, err)

	pool := db.Roles(t).Pool(t, roles.Console)
	ob, err := outbox.New(pool, outbox.Policy{MaxAttempts: 5, BackoffBase: time.Second, BackoffMax: time.Minute})
	require.NoError(t, err)
	reqs, err := request.NewStore(pool, rcfg)
	require.NoError(t, err)
	var tokens httpauth.Clients
	require.NoError(t, tokens.UnmarshalText(fmt.Appendf(nil, "op:read+operate:%x,vi:read:%x,portal:send:%x",
		httpauth.Hash(operatorToken), httpauth.Hash(viewerToken), httpauth.Hash(sendToken))))
	w.deps = console.Deps{
		Pool: pool, Location: loc, Outbox: ob, Requests: reqs, Log: zerolog.New(zerolog.NewTestWriter(t)), Now: clk.Now,
		Config: consoleconf.Config{Tokens: tokens, SessionKey: strings.Repeat("k", 32), SessionTTL: time.Hour, Refresh: 10 * time.Second},
	}
	w.srv = w.serve(t, w.deps)
	return w
}

// drain runs the processor until it is idle.
func (w *world) drain(t testing.TB) {
	t.Helper()
	lease := leader.Lease{Role: "processor", Epoch: 1}
	for range 100000 {
		res, err := w.eng.Step(ctx, lease)
		require.NoError(t, err)
		if res.Idle {
			return
		}
		if !res.WaitUntil.IsZero() {
			w.clk.Set(res.WaitUntil)
		}
		if res.Failed {
			w.clk.Advance(2 * time.Second)
		}
	}
	t.Fatal("the processor did not drain")
}

// process enqueues raws after the last message (as ingest does) and runs the processor over
// them; it returns their ids.
func (w *world) process(t testing.TB, raws ...string) []int64 {
	t.Helper()
	ids := make([]int64, len(raws))
	for i, raw := range raws {
		w.lastID++
		ids[i] = w.lastID
		_, err := w.db.Pool.Exec(ctx, `INSERT INTO proc_state (msg_id, raw, raw_sha256, received_at, enqueued_at)
			VALUES ($1, $2, sha256(convert_to($2::text, 'UTF8')), $3, $4)`, w.lastID, raw, w.clk.Now().In(w.loc), w.clk.Now())
		require.NoError(t, err)
	}
	_, err := w.db.Pool.Exec(ctx, `UPDATE inbox_cursor SET watermark = $1`, w.lastID)
	require.NoError(t, err)
	w.drain(t)
	return ids
}

// hosts numbers the loopback addresses the test servers listen on.
var hosts atomic.Int32

// serve starts a console of d on a loopback address of its own (127.0.0.2, .3, …), so that the
// shared browser's cookies of one test never reach another's console.
func (w *world) serve(t testing.TB, d console.Deps) *httptest.Server {
	t.Helper()
	return w.serveThrough(t, d, func(h http.Handler) http.Handler { return h })
}

// serveThrough is serve with the console's handler wrapped (a test's stand-in for a frozen
// process).
func (w *world) serveThrough(t testing.TB, d console.Deps, wrap func(http.Handler) http.Handler) *httptest.Server {
	t.Helper()
	return serveOn(t, listen(t), d, wrap)
}

// listen listens on the next loopback address of the tests' (127.0.0.2, .3, …).
func listen(t testing.TB) net.Listener {
	t.Helper()
	n := hosts.Add(1)
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.%d.%d:0", n/250, 2+n%250))
	require.NoError(t, err)
	return l
}

// serveOn serves a console of d, its handler wrapped, on l.
func serveOn(t testing.TB, l net.Listener, d console.Deps, wrap func(http.Handler) http.Handler) *httptest.Server {
	t.Helper()
	c, err := console.New(d)
	require.NoError(t, err)
	srv := &httptest.Server{Listener: l, Config: &http.Server{Handler: wrap(c.Handler())}}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func escapeXML(s string) string {
	r := strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;")
	return r.Replace(s)
}

// client is a cookie-keeping HTTP client that does not follow redirects.
func client(t testing.TB) *http.Client {
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func (w *world) login(t testing.TB, token string) *http.Client {
	t.Helper()
	c := client(t)
	resp, err := c.PostForm(w.srv.URL+"/login", url.Values{"token": {token}, "next": {"/"}})
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	return c
}

func get(t testing.TB, c *http.Client, u string) (int, string) {
	t.Helper()
	code, _, body := fetch(t, c, u)
	return code, body
}

// fetch GETs u and returns the final status, URL path and body.
func fetch(t testing.TB, c *http.Client, u string) (int, string, string) {
	t.Helper()
	resp, err := c.Get(u)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, resp.Request.URL.Path, string(body)
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`)

func csrfOf(t testing.TB, body string) string {
	t.Helper()
	m := csrfRE.FindStringSubmatch(body)
	require.NotNil(t, m, "the page carries a CSRF token")
	return m[1]
}

func (w *world) count(t testing.TB, sql string, args ...any) int64 {
	t.Helper()
	var n int64
	require.NoError(t, w.db.Pool.QueryRow(ctx, sql, args...).Scan(&n))
	return n
}

// deadLetters is the condition on proc_state of the rows the dead-letter pages list: the dead
// and failed messages and those skipped for matching no flight.
const deadLetters = `(status IN ('DEAD', 'FAILED') OR (status = 'SKIPPED' AND reason LIKE 'no-match:%'))`

func TestLoginSessionAndScopes(t *testing.T) {
	t.Parallel()
	w := setup(t)

	anon := client(t)
	code, _ := get(t, anon, w.srv.URL+"/flights/1")
	require.Equal(t, http.StatusSeeOther, code, "a page without a session sends to the login page")
	resp, err := anon.PostForm(w.srv.URL+"/login", url.Values{"token": {"wrong"}})
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	// An API client's token (pkg/httpauth) without scope read or operate opens no session.
	resp, err = anon.PostForm(w.srv.URL+"/login", url.Values{"token": {sendToken}})
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "a send-only token is no console login")
	require.Empty(t, resp.Header.Get("Set-Cookie"))

	op := w.login(t, operatorToken)
	u, _ := url.Parse(w.srv.URL)
	cookies := op.Jar.Cookies(u)
	require.Len(t, cookies, 2)
	resp, err = client(t).PostForm(w.srv.URL+"/login", url.Values{"token": {operatorToken}})
	require.NoError(t, err)
	resp.Body.Close()
	setCookies := resp.Header.Values("Set-Cookie")
	require.Len(t, setCookies, 2)
	require.Contains(t, setCookies[0], "msgx_console=")
	require.Contains(t, setCookies[0], "HttpOnly")
	require.Contains(t, setCookies[0], "SameSite=Lax", "the page cookie travels with a link from an alert")
	require.Contains(t, setCookies[1], "msgx_console_act=")
	require.Contains(t, setCookies[1], "HttpOnly")
	require.Contains(t, setCookies[1], "SameSite=Strict", "the action cookie never travels from another site")

	// An action without the CSRF token is refused and changes nothing.
	resp, err = op.PostForm(w.srv.URL+"/dead/replay", url.Values{"id": {itoa(w.deadID)}, "mode": {"replay"}, "reason": {"r"}})
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusForbidden, resp.StatusCode)

	// The viewer reads but is refused the action, even with a valid CSRF token.
	vi := w.login(t, viewerToken)
	code, body := get(t, vi, w.srv.URL+"/messages/"+itoa(w.deadID))
	require.Equal(t, http.StatusOK, code)
	resp, err = vi.PostForm(w.srv.URL+"/dead/replay", url.Values{"csrf": {csrfOf(t, body)}, "id": {itoa(w.deadID)}, "mode": {"replay"}, "reason": {"viewer tries"}})
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	require.Zero(t, w.count(t, `SELECT count(*) FROM replay_audit`), "nothing audited: nothing done")
	require.Equal(t, int64(1), w.count(t, `SELECT count(*) FROM proc_state WHERE msg_id = $1 AND status = 'DEAD'`, w.deadID))

	// The operator replays, audited with the user.
	_, body = get(t, op, w.srv.URL+"/messages/"+itoa(w.deadID))
	resp, err = op.PostForm(w.srv.URL+"/dead/replay", url.Values{"csrf": {csrfOf(t, body)}, "id": {itoa(w.deadID)}, "mode": {"replay"}, "reason": {"codec fixed"}})
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, int64(1), w.count(t, `SELECT count(*) FROM replay_audit WHERE actor = 'console:op' AND reason = 'codec fixed' AND $1 = ANY(ids)`, w.deadID))
	require.Equal(t, int64(1), w.count(t, `SELECT count(*) FROM proc_state WHERE msg_id = $1 AND status = 'PENDING'`, w.deadID))
}

// The Message page lists every attempt in order, each with its class and reason, and keeps them
// after a replay.
func TestMessagePageShowsEveryAttempt(t *testing.T) {
	t.Parallel()
	w := setup(t)
	op := w.login(t, operatorToken)
	attempts := func() []string {
		code, body := get(t, op, w.srv.URL+"/messages/"+itoa(w.deadID))
		require.Equal(t, http.StatusOK, code)
		i := strings.Index(body, `<table id="attempts">`)
		require.GreaterOrEqual(t, i, 0)
		table := body[i : i+strings.Index(body[i:], "</table>")]
		return regexp.MustCompile(`<td class="(FAILED|DEAD|SUCCEEDED)">`).FindAllString(table, -1)
	}
	require.Equal(t, []string{`<td class="FAILED">`, `<td class="DEAD">`}, attempts())
	_, body := get(t, op, w.srv.URL+"/messages/"+itoa(w.deadID))
	require.Contains(t, body, "decode REMC: first try")
	require.Contains(t, body, "decode REMC: &lt;script&gt;", "the reason of each attempt is escaped")

	_, err := procstate.Replay(ctx, w.db.Pool, procstate.ReplayRequest{IDs: []int64{w.deadID}, Actor: "ops", Reason: "codec fixed", Now: time.Now()})
	require.NoError(t, err)
	require.Equal(t, []string{`<td class="FAILED">`, `<td class="DEAD">`}, attempts(), "a replay keeps the history")
}

func TestHostileMessageRendersAsText(t *testing.T) {
	t.Parallel()
	w := setup(t)
	op := w.login(t, operatorToken)
	code, body := get(t, op, w.srv.URL+"/messages/"+itoa(w.deadID))
	require.Equal(t, http.StatusOK, code)
	require.NotContains(t, body, "<script>document.title")
	require.NotContains(t, body, `href="javascript:`)
	require.Contains(t, body, "&lt;script&gt;document.title=")
}

func TestPagesRender(t *testing.T) {
	t.Parallel()
	w := setup(t)
	op := w.login(t, operatorToken)
	for _, p := range []string{"/", "/flights", "/flights/" + itoa(w.deadFL), "/messages/1001", "/dead", "/dead?class=CODEC_ERROR", "/requests", "/healthz-not-here"} {
		code, body := get(t, op, w.srv.URL+p)
		if p == "/healthz-not-here" {
			require.Equal(t, http.StatusNotFound, code)
			continue
		}
		require.Equal(t, http.StatusOK, code, "%s: %s", p, body)
		require.Contains(t, body, "Asia/Shanghai (UTC&#43;08:00)", "%s shows the airport zone", p)
	}
	code, _ := get(t, op, w.srv.URL+"/flights/99999999")
	require.Equal(t, http.StatusNotFound, code)
}

// A purged flight's page shows the final state the history sweep kept: the state as published
// (flight.State.AppendJSONIn, as pkg/jobs writes it), its wall-clock values as a live flight
// shows them, and no MAFL. A document of the earlier form (the flight row and its detail tables,
// still kept for MSGX_FLIGHT_HISTORY_RETENTION) reads the same.
func TestPurgedFlightShowsFinalState(t *testing.T) {
	t.Parallel()
	w := setup(t)
	op := w.login(t, operatorToken)
	st, err := flightstore.Read(ctx, w.db.Pool, w.deadFL)
	require.NoError(t, err)
	require.NotEmpty(t, st.C[flight.ROUT])
	const purged, legacy = 999, 998
	st.FLID = purged
	_, err = w.db.Pool.Exec(ctx, `INSERT INTO flight_history (flid, operation_day, state_version, final_state, purge_reason, purged_at)
		VALUES ($1, $2, $3, $4, 'quiet', now())`, purged, st.OperationDay, st.Version, string(st.AppendJSONIn(nil, time.FixedZone("airport", 8*3600))))
	require.NoError(t, err)
	_, err = w.db.Pool.Exec(ctx, `INSERT INTO flight_history (flid, operation_day, state_version, final_state, purge_reason, purged_at)
		SELECT $2, operation_day, state_version, jsonb_build_object('flight', to_jsonb(f) || jsonb_build_object('flid', $2::bigint),
		       'details', jsonb_build_object('flight_delay', '[]'::jsonb,
		           'flight_route', (SELECT jsonb_agg(to_jsonb(d) - 'flid') FROM flight_route d WHERE d.flid = f.flid))),
		       'quiet', now()
		  FROM flight f WHERE flid = $1`, w.deadFL, legacy)
	require.NoError(t, err)
	var stnd, version string
	require.NoError(t, w.db.Pool.QueryRow(ctx, `SELECT stnd, state_version::text FROM flight WHERE flid = $1`, w.deadFL).Scan(&stnd, &version))
	_, live := get(t, op, w.srv.URL+"/flights/"+itoa(w.deadFL))

	for flid, route := range map[int64]string{purged: "rout", legacy: "flight_route"} {
		code, body := get(t, op, w.srv.URL+"/flights/"+itoa(flid))
		require.Equal(t, http.StatusOK, code)
		require.Contains(t, body, "(quiet): the final state is shown.")
		require.Contains(t, body, `<strong id="version">`+version+`</strong>`)
		require.Contains(t, body, `<td data-field="stnd">`+stnd+`</td>`)
		require.Contains(t, body, `<td data-field="`+route+`">`, "a collection with rows")
		require.NotContains(t, body, `data-field="dely"`, "an empty collection is left out")
		require.NotContains(t, body, `data-field="flight_delay"`, "an empty collection is left out")
		require.NotContains(t, body, flight.InstantSuffix)
		require.Contains(t, body, "No code-share children.")
	}
	_, body := get(t, op, w.srv.URL+"/flights/"+itoa(purged))
	want := fieldCells(live)
	require.Contains(t, want, `<td data-field="flid">`+itoa(w.deadFL)+`</td>`)
	want[slices.Index(want, `<td data-field="flid">`+itoa(w.deadFL)+`</td>`)] = `<td data-field="flid">` + itoa(purged) + `</td>`
	require.Equal(t, want, fieldCells(body), "a purged flight's fields read as the live flight's")
}

// fieldCells are the current-state table's cells of a flight page.
func fieldCells(page string) []string {
	return regexp.MustCompile(`<td data-field="[^"]*">.*?</td>`).FindAllString(page, -1)
}
