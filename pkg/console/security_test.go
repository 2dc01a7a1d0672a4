package console_test

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/dev/sisbuild"
	"github.com/msgx/msgx/pkg/httpauth"
	"github.com/msgx/msgx/pkg/roles"
)

// cookieClient is a client that sends exactly the given cookies (a stolen or kept cookie).
func cookieClient(t testing.TB, base string, cookies []*http.Cookie) *http.Client {
	c := client(t)
	u, err := url.Parse(base)
	require.NoError(t, err)
	c.Jar.SetCookies(u, cookies)
	return c
}

// A session ends server-side: after logout, the kept cookie reads nothing and acts on nothing;
// a console restarted with a token list without the user's token refuses its old cookie, and one
// with the token still listed keeps it.
func TestSessionRevokedByLogoutAndTokenRemoval(t *testing.T) {
	t.Parallel()
	w := setup(t)
	u, _ := url.Parse(w.srv.URL)

	op := w.login(t, operatorToken)
	kept := op.Jar.Cookies(u)
	code, body := get(t, op, w.srv.URL+"/dead")
	require.Equal(t, http.StatusOK, code)
	resp, err := op.PostForm(w.srv.URL+"/logout", url.Values{"csrf": {csrfOf(t, body)}})
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	old := cookieClient(t, w.srv.URL, kept)
	code, _ = get(t, old, w.srv.URL+"/dead")
	require.Equal(t, http.StatusSeeOther, code, "a logged-out cookie reads nothing")
	resp, err = old.PostForm(w.srv.URL+"/dead/replay", url.Values{"csrf": {csrfOf(t, body)}, "id": {itoa(w.deadID)}})
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "nor runs a dry run")

	// A restart with the operator's token removed (the viewer's kept).
	op = w.login(t, operatorToken)
	vi := w.login(t, viewerToken)
	var without httpauth.Clients
	require.NoError(t, without.UnmarshalText(fmt.Appendf(nil, "vi:read:%x", httpauth.Hash(viewerToken))))
	d := w.deps
	d.Config.Tokens = without
	restarted := w.serve(t, d)
	code, _ = get(t, cookieClient(t, restarted.URL, op.Jar.Cookies(u)), restarted.URL+"/dead")
	require.Equal(t, http.StatusSeeOther, code, "a removed token's session is refused")
	code, _ = get(t, cookieClient(t, restarted.URL, vi.Jar.Cookies(u)), restarted.URL+"/dead")
	require.Equal(t, http.StatusOK, code, "a listed token's session survives the restart")
	require.Equal(t, int64(3), w.count(t, `SELECT count(*) FROM console_session`))
	require.Equal(t, int64(1), w.count(t, `SELECT count(*) FROM console_session WHERE revoked_at IS NOT NULL`))
}

// An action needs the Strict cookie: the Lax one alone (what a cross-site navigation sends)
// acts on nothing.
func TestActionNeedsStrictCookie(t *testing.T) {
	t.Parallel()
	w := setup(t)
	u, _ := url.Parse(w.srv.URL)
	op := w.login(t, operatorToken)
	_, body := get(t, op, w.srv.URL+"/dead")
	var lax []*http.Cookie
	for _, c := range op.Jar.Cookies(u) {
		if c.Name == "msgx_console" {
			lax = append(lax, c)
		}
	}
	require.Len(t, lax, 1)
	laxOnly := cookieClient(t, w.srv.URL, lax)
	code, _ := get(t, laxOnly, w.srv.URL+"/dead")
	require.Equal(t, http.StatusOK, code, "a top-level GET reads with the Lax cookie")
	resp, err := laxOnly.PostForm(w.srv.URL+"/dead/replay", url.Values{"csrf": {csrfOf(t, body)}, "id": {itoa(w.deadID)}, "mode": {"replay"}, "reason": {"r"}})
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	require.Zero(t, w.count(t, `SELECT count(*) FROM replay_audit`))
}

// Input that is not text is a plain 400 that names nothing internal.
func TestInvalidInputIs400WithoutInternals(t *testing.T) {
	t.Parallel()
	w := setup(t)
	op := w.login(t, operatorToken)
	for _, p := range []string{"/flights?q=%ff", "/flights?q=%00", "/flights?q=CA&day=%ff", "/dead?reason=%c3%28", "/messages?id=%00"} {
		code, body := get(t, op, w.srv.URL+p)
		require.Equal(t, http.StatusBadRequest, code, p)
		require.NotContains(t, body, "SQLSTATE", p)
		require.NotContains(t, body, "invalid byte sequence", p)
	}
}

// Failed logins are throttled per address: the sixth try within a minute is 429 even with a good
// token, and says how long to wait.
func TestFailedLoginsThrottled(t *testing.T) {
	t.Parallel()
	w := setup(t)
	c := client(t)
	for i := range 5 {
		resp, err := c.PostForm(w.srv.URL+"/login", url.Values{"token": {fmt.Sprintf("guess-%d", i)}})
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	}
	resp, err := c.PostForm(w.srv.URL+"/login", url.Values{"token": {operatorToken}})
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	require.NotEmpty(t, resp.Header.Get("Retry-After"))
	require.Empty(t, resp.Header.Values("Set-Cookie"))
}

// One action takes at most 1,000 ids, and a form body is bounded.
func TestIDsPerActionCapped(t *testing.T) {
	t.Parallel()
	w := setup(t)
	op := w.login(t, operatorToken)
	_, body := get(t, op, w.srv.URL+"/dead")
	ids := make([]string, 1001)
	for i := range ids {
		ids[i] = itoa(int64(i + 1))
	}
	resp, err := op.PostForm(w.srv.URL+"/dead/replay", url.Values{"csrf": {csrfOf(t, body)}, "id": {strings.Join(ids, ",")}})
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	huge := strings.Repeat("1,", 200000)
	resp, err = op.PostForm(w.srv.URL+"/dead/replay", url.Values{"csrf": {csrfOf(t, body)}, "id": {huge}})
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
}

// The dead letters' schedule request shows what it would send and registers nothing until
// confirmed; confirmed, it registers an RQFD of the flight's day, once per form, and redirects to
// it.
func TestFlightScheduleFromDeadLetters(t *testing.T) {
	t.Parallel()
	w := setup(t)
	op := w.login(t, operatorToken)
	code, body := get(t, op, w.srv.URL+"/dead?flid="+itoa(w.deadFL))
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `name="flid" value="`+itoa(w.deadFL)+`" class="request-schedule"`)
	formID := regexp.MustCompile(`name="form_id" value="([0-9a-f]{32})"`).FindStringSubmatch(body)
	require.NotNil(t, formID)
	// The button asks to confirm what goes to the AODB; nothing is registered before.
	resp, err := op.PostForm(w.srv.URL+"/requests/flight", url.Values{"csrf": {csrfOf(t, body)}, "flid": {itoa(w.deadFL)}, "form_id": {formID[1]}})
	require.NoError(t, err)
	confirm, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, string(confirm), `id="confirm-schedule"`)
	require.Contains(t, string(confirm), `name="form_id" value="`+formID[1]+`"`, "the confirmation carries the form's one-time id")
	require.Zero(t, w.count(t, `SELECT count(*) FROM req_track`), "nothing registered before the confirmation")
	for range 2 {
		resp, err := op.PostForm(w.srv.URL+"/requests/flight", url.Values{"csrf": {csrfOf(t, body)}, "flid": {itoa(w.deadFL)}, "form_id": {formID[1]}, "confirm": {"1"}})
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		require.Contains(t, resp.Header.Get("Location"), "/requests?registered=")
	}
	require.Equal(t, int64(1), w.count(t, `SELECT count(*) FROM req_track r JOIN flight f ON f.flid = $1
		WHERE r.req_type = 'RQFD' AND r.actor = 'console:op' AND r.reason LIKE 'schedule of flight%' AND r.scope = to_char(f.operation_day, 'YYYY-MM-DD') || '..' || to_char(f.operation_day, 'YYYY-MM-DD')`, w.deadFL))
}

// Search: a part of a flight number, a day alone, a registration, a stand; a number that is no
// FLID is a flight number, not a 404.
func TestFlightSearch(t *testing.T) {
	t.Parallel()
	w := setup(t)
	op := w.login(t, operatorToken)
	var flid int64
	var alcd, flno, day, reno, stnd string
	require.NoError(t, w.db.Pool.QueryRow(ctx, `SELECT flid, alcd, flno, operation_day::text, COALESCE(reno, ''), COALESCE(stnd, '') FROM flight
		WHERE stnd IS NOT NULL ORDER BY flid LIMIT 1`).Scan(&flid, &alcd, &flno, &day, &reno, &stnd))
	dayCount := w.count(t, `SELECT count(*) FROM flight WHERE operation_day = $1::date`, day)
	code, body := get(t, op, w.srv.URL+"/flights?day="+day)
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, fmt.Sprintf("%d flight(s)", dayCount), "a day alone lists its flights")
	code, body = get(t, op, w.srv.URL+"/flights?q="+url.QueryEscape(flno[:len(flno)-1]))
	require.Contains(t, []int{http.StatusOK, http.StatusSeeOther}, code)
	if code == http.StatusOK {
		require.Contains(t, body, `href="/flights/`+itoa(flid)+`"`, "a part of the flight number finds it")
	}
	code, body = get(t, op, w.srv.URL+"/flights?q="+url.QueryEscape(flno)) // digits only: no such FLID
	require.NotEqual(t, http.StatusNotFound, code, body)
	code, body = get(t, op, w.srv.URL+"/flights?day="+day+"&q="+url.QueryEscape(strings.ToLower(stnd)))
	require.Contains(t, []int{http.StatusOK, http.StatusSeeOther}, code)
	if code == http.StatusOK {
		require.Contains(t, body, `href="/flights/`+itoa(flid)+`"`, "the stand finds it")
	}
	if reno != "" {
		code, _ = get(t, op, w.srv.URL+"/flights?q="+url.QueryEscape(reno))
		require.Contains(t, []int{http.StatusOK, http.StatusSeeOther}, code)
	}
}

// TestFlightSearchAndItsCSVReadTheSameQuery: the page and its CSV refuse the same searches (more
// than 40 characters, a day not YYYY-MM-DD) with the same words.
func TestFlightSearchAndItsCSVReadTheSameQuery(t *testing.T) {
	t.Parallel()
	w := setup(t)
	op := w.login(t, operatorToken)
	for _, c := range []struct {
		query url.Values
		says  string
	}{
		{url.Values{"q": {strings.Repeat("C", 41)}}, "Search for at most 40 characters."},
		{url.Values{"q": {"CA"}, "day": {"23/01/2021"}}, "The day must be YYYY-MM-DD."},
	} {
		for _, path := range []string{"/flights", "/flights.csv"} {
			code, body := get(t, op, w.srv.URL+path+"?"+c.query.Encode())
			require.Equal(t, http.StatusBadRequest, code, "%s?%s", path, c.query.Encode())
			require.Contains(t, body, c.says, "%s?%s", path, c.query.Encode())
		}
	}
	code, _ := get(t, op, w.srv.URL+"/flights.csv?"+url.Values{"q": {strings.Repeat("C", 40)}}.Encode())
	require.Equal(t, http.StatusOK, code, "40 characters are searched")
}

// A stand change for a flight not known yet ends SKIPPED no-match as the processor writes it: it
// is listed as replayable (class NO-MATCH) with its flight, and its dry run says whether that
// flight exists now. One flight comes with a later schedule, the other never.
func TestNoMatchListedAndDryRunChecksTheFlight(t *testing.T) {
	t.Parallel()
	w := setup(t)
	const later, never = 424241, 424242
	at := w.clk.Now()
	ids := w.process(t, sisbuild.Stand(900001, at, later, "101"), sisbuild.Stand(900002, at, never, "102"))
	for _, id := range ids {
		require.Equal(t, int64(1), w.count(t, `SELECT count(*) FROM proc_state WHERE msg_id = $1 AND status = 'SKIPPED' AND reason LIKE 'no-match:%'`, id),
			"message %d: the processor skipped it: its flight is not known", id)
	}
	w.process(t, sisbuild.SCHD(900003, "ADFT", sisbuild.FLTR(later, "CA1234", "02DEC261345", "")))
	require.Equal(t, int64(1), w.count(t, `SELECT count(*) FROM flight WHERE flid = $1`, later), "the schedule brought the flight")

	op := w.login(t, operatorToken)
	code, body := get(t, op, w.srv.URL+"/dead?class=NO-MATCH")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `<span id="dead-total">2</span>`)
	require.Contains(t, body, fmt.Sprintf(`value="%d" id="m%d"`, ids[1], ids[1]))
	require.Equal(t, 2, strings.Count(body, "<td>yes</td>"), "both replayable")
	code, body = get(t, op, w.srv.URL+"/dead?flid="+itoa(never))
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `<span id="dead-total">1</span>`, "the filter by FLID finds it")
	resp, err := op.PostForm(w.srv.URL+"/dead/replay", url.Values{"csrf": {csrfOf(t, body)}, "id": {itoa(ids[0]), itoa(ids[1])}, "mode": {"dry"}})
	require.NoError(t, err)
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
	require.Contains(t, string(b), "flight "+itoa(later)+` <span class="ok">exists now</span>`)
	require.Contains(t, string(b), "flight "+itoa(never)+` <span class="bad">still does not exist</span>`)
}

// A PROTOCOL message's page says replay never takes it, links its flight, and lets an operator
// acknowledge it (shown with who) and request its flight's schedule.
func TestMessagePageWhatToDo(t *testing.T) {
	t.Parallel()
	w := setup(t)
	raw := fmt.Sprintf(`<MSG><META><TYPE>FLOP</TYPE></META><FLOP><FLID>%d</FLID><FRET><REID>X</REID></FRET></FLOP></MSG>`, w.deadFL)
	_, err := w.db.Pool.Exec(ctx, `INSERT INTO proc_state (msg_id, raw, raw_sha256, status, error_class, reason, attempts, msg_type, enqueued_at, finished_at)
		VALUES (800, $1, sha256(convert_to($1, 'UTF8')), 'DEAD', 'PROTOCOL', 'FRET@REID: unknown reference X', 1, 'FLOP', now(), now())`, raw)
	require.NoError(t, err)
	op := w.login(t, operatorToken)
	code, body := get(t, op, w.srv.URL+"/messages/800")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `It names flight <a href="/flights/`+itoa(w.deadFL)+`">`)
	require.Contains(t, body, "Replay never takes it (PROTOCOL")
	require.NotContains(t, body, `id="dry-run"`, "no replay form")
	resp, err := op.PostForm(w.srv.URL+"/dead/note", url.Values{"csrf": {csrfOf(t, body)}, "id": {"800"}, "ack": {"1"}, "note": {"AODB ticket 17"}, "back": {"/messages/800"}})
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, "/messages/800", resp.Header.Get("Location"))
	_, body = get(t, op, w.srv.URL+"/messages/800")
	require.Contains(t, body, `<span class="ok">acknowledged</span> AODB ticket 17 <span class="muted">— console:op`)
	require.Contains(t, body, `id="request-schedule"`)
}

// TestRevokedTokenRefusedOnEveryReplica: two console replicas over one database, the operator
// logged in on both; once the token is revoked (httpauth.Revoke, what msgxctl token revoke
// runs) both refuse its sessions at their next request (the login page says the session ended)
// and a new login with it, without a restart; the viewer's session lives on.
func TestRevokedTokenRefusedOnEveryReplica(t *testing.T) {
	t.Parallel()
	w := setup(t)
	replica := w.serve(t, w.deps)
	var opOn, viOn []*http.Client
	for _, base := range []string{w.srv.URL, replica.URL} {
		c := client(t)
		resp, err := c.PostForm(base+"/login", url.Values{"token": {operatorToken}})
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		opOn = append(opOn, c)
		v := client(t)
		resp, err = v.PostForm(base+"/login", url.Values{"token": {viewerToken}})
		require.NoError(t, err)
		resp.Body.Close()
		viOn = append(viOn, v)
	}
	var op httpauth.Client
	for _, c := range w.deps.Config.Tokens {
		if c.Name == "op" {
			op = c
		}
	}
	done, err := httpauth.Revoke(ctx, w.db.Roles(t).Pool(t, roles.Admin), op, "ops", "left the team", w.clk.Now())
	require.NoError(t, err)
	require.True(t, done)
	for i, base := range []string{w.srv.URL, replica.URL} {
		resp, err := opOn[i].Get(base + "/dead")
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusSeeOther, resp.StatusCode, "replica %d refuses the revoked token's session", i)
		require.Contains(t, resp.Header.Get("Location"), "ended=1")
		resp, err = client(t).PostForm(base+"/login", url.Values{"token": {operatorToken}})
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "replica %d refuses a new login with it", i)
		code, _ := get(t, viOn[i], base+"/dead")
		require.Equal(t, http.StatusOK, code, "replica %d: the viewer's session lives", i)
	}
	require.Equal(t, int64(1), w.count(t, `SELECT count(*) FROM replay_audit WHERE action = 'token-revoke' AND actor = 'ops'`))
}
