package console_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// namespaced is a message as an AODB writes it: declaration, namespace declarations, a prefixed
// attribute, attributes on an element without text, CDATA.
const namespaced = `<?xml version="1.0" encoding="UTF-8"?>
<MSG xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:noNamespaceSchemaLocation="sis.xsd">
  <META><SNDR>AODB</SNDR><TYPE>DFME</TYPE><STYP>DLCH</STYP></META>
  <DFLT><FLID>4711</FLID><DELY CODE="93" STRT="20261204101500" DURA="25"/><REMC><![CDATA[gate <B12> & stand 432]]></REMC></DFLT>
</MSG>`

// TestBrowserRawNamespacedMessage: the Message page shows the stored text byte-exact (the
// declaration, xmlns:xsi, CDATA untouched), the file link serves the same bytes, and the Fields
// table lists attributes.
func TestBrowserRawNamespacedMessage(t *testing.T) {
	t.Parallel()
	w := setup(t)
	const id = 600
	_, err := w.db.Pool.Exec(ctx, `INSERT INTO proc_state (msg_id, raw, raw_sha256, status, error_class, reason, attempts, msg_type, msg_styp, enqueued_at, finished_at)
		VALUES ($1, $2, sha256(convert_to($2::text, 'UTF8')), 'DEAD', 'PROTOCOL', 'DELY@CODE: unknown delay code', 1, 'DFME', 'DLCH', now(), now())`, id, namespaced)
	require.NoError(t, err)

	op := w.login(t, operatorToken)
	code, body := get(t, op, w.srv.URL+"/messages/600/raw")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, namespaced, body, "the file is the stored bytes")

	run := browser(t)
	var raw, fields string
	run(loginAs(w.srv.URL, operatorToken),
		chromedp.Navigate(w.srv.URL+"/messages/600"),
		chromedp.WaitVisible(`#raw`, chromedp.ByID),
		chromedp.TextContent(`#raw`, &raw, chromedp.ByID),
		chromedp.Text(`#fields`, &fields, chromedp.ByID),
		chromedp.ScrollIntoView(`#raw`, chromedp.ByID),
		shot(t, "message-raw"),
	)
	require.Equal(t, namespaced, raw, "the page shows the stored text byte-exact")
	require.NotContains(t, raw, "_xmlns")
	for _, f := range []string{"MSG@xmlns:xsi", "MSG@xsi:noNamespaceSchemaLocation", "MSG/DFLT/DELY@CODE\t93", "MSG/DFLT/DELY@STRT", "MSG/DFLT/DELY@DURA\t25", "MSG/DFLT/REMC\tgate <B12> & stand 432"} {
		require.True(t, strings.Contains(fields, f), "fields lists %q:\n%s", f, fields)
	}
}

// TestBrowserDeepLinkAndRevokedSession: a link from another site (an alert) to a Message page
// lands on it after login, and with a session lands on it directly (the Lax page cookie
// travels); a logged-out session's cookie put back in the browser reads nothing.
func TestBrowserDeepLinkAndRevokedSession(t *testing.T) {
	t.Parallel()
	w := setup(t)
	target := w.srv.URL + "/messages/" + itoa(w.deadID)
	// The "alert": a page on another site (another loopback address) linking to the message.
	alert := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) {
		rw.Header().Set("Content-Type", "text/html")
		_, _ = rw.Write([]byte(`<!doctype html><title>alert</title><a id="go" href="` + target + `">DEAD message</a>`))
	}))
	t.Cleanup(alert.Close)
	require.NotEqual(t, hostOf(t, alert.URL), hostOf(t, w.srv.URL), "another site")

	run := browser(t)
	var loc, h1 string
	run(chromedp.Navigate(alert.URL), navigating(chromedp.Click(`#go`, chromedp.ByID)),
		chromedp.WaitVisible(`#token`, chromedp.ByID),
		chromedp.SendKeys(`#token`, operatorToken, chromedp.ByID),
		navigating(chromedp.Submit(`#token`, chromedp.ByID)),
		chromedp.WaitVisible(`#msgid`, chromedp.ByID),
		chromedp.Location(&loc), chromedp.Text(`#msgid`, &h1, chromedp.ByID))
	require.Equal(t, target, loc, "after login the deep link lands on its page")
	require.Equal(t, itoa(w.deadID), h1)
	run(chromedp.Navigate(alert.URL), navigating(chromedp.Click(`#go`, chromedp.ByID)),
		chromedp.WaitVisible(`#msgid`, chromedp.ByID), chromedp.Location(&loc), shot(t, "deep-link"))
	require.Equal(t, target, loc, "logged in, a link from another site opens the page directly")

	// A session ended by logout: its cookies, put back, are refused (while a live session's
	// cookies, put back the same way, read the page).
	u, _ := url.Parse(w.srv.URL)
	live := w.login(t, operatorToken)
	run(network.ClearBrowserCookies(), setCookies(u.Hostname(), live.Jar.Cookies(u)),
		chromedp.Navigate(w.srv.URL+"/dead"), chromedp.WaitVisible(`#dead-groups`, chromedp.ByID))
	op := w.login(t, operatorToken)
	_, body := get(t, op, w.srv.URL+"/dead")
	kept := op.Jar.Cookies(u)
	resp, err := op.PostForm(w.srv.URL+"/logout", url.Values{"csrf": {csrfOf(t, body)}})
	require.NoError(t, err)
	resp.Body.Close()
	var title string
	run(network.ClearBrowserCookies(), setCookies(u.Hostname(), kept),
		chromedp.Navigate(w.srv.URL+"/dead"), chromedp.WaitVisible(`#token`, chromedp.ByID),
		chromedp.Location(&loc), chromedp.Title(&title), shot(t, "revoked-session"))
	require.True(t, strings.HasPrefix(loc, w.srv.URL+"/login?next="), loc)
}

func hostOf(t *testing.T, raw string) string {
	u, err := url.Parse(raw)
	require.NoError(t, err)
	return u.Hostname()
}

// setCookies puts cookies into the browser for host.
func setCookies(host string, cookies []*http.Cookie) chromedp.Action {
	return chromedp.ActionFunc(func(c contextT) error {
		for _, k := range cookies {
			if err := network.SetCookie(k.Name, k.Value).WithDomain(host).WithPath("/").WithHTTPOnly(true).Do(c); err != nil {
				return err
			}
		}
		return nil
	})
}

// TestBrowserFrozenProcessorVerdict: the processor's lease not renewed for 27 s makes the
// verdict "stopped" with that reason at the top of the pipeline; once the lease is renewed the
// page updates itself (no reload) to a verdict that is not stopped.
func TestBrowserFrozenProcessorVerdict(t *testing.T) {
	t.Parallel()
	w := setup(t)
	now := w.deps.Now()
	_, err := w.db.Pool.Exec(ctx, `DELETE FROM leader_lease`)
	require.NoError(t, err)
	_, err = w.db.Pool.Exec(ctx, `INSERT INTO leader_lease VALUES ('ingest', 1, 'ingest-0', 0, $1, $1),
		('processor', 3, 'processor-1', 0, $2, $2), ('dispatcher', 1, 'dispatcher-0', 0, $1, $1), ('jobs', 1, 'jobs-0', 0, $1, $1)`,
		now, now.Add(-27*time.Second))
	require.NoError(t, err)
	d := w.deps
	d.Config.Refresh = time.Second
	srv := w.serve(t, d)

	run := browser(t)
	var state, reasons string
	run(loginAs(srv.URL, operatorToken),
		chromedp.TextContent(`#verdict-state`, &state, chromedp.ByID),
		chromedp.Text(`#verdict-reasons`, &reasons, chromedp.ByID),
		shot(t, "pipeline"))
	require.Equal(t, "stopped", state)
	require.Contains(t, reasons, "processor lease not renewed for 27s (holder processor-1, timeout 5s)")
	var marker bool
	run(chromedp.Evaluate(`window.__sameDocument = true`, &marker))
	_, err = w.db.Pool.Exec(ctx, `UPDATE leader_lease SET renewed_at = $1 WHERE role = 'processor'`, now)
	require.NoError(t, err)
	run(chromedp.WaitNotPresent(`.verdict.stopped`, chromedp.ByQuery),
		chromedp.TextContent(`#verdict-state`, &state, chromedp.ByID),
		chromedp.Evaluate(`window.__sameDocument === true`, &marker))
	require.NotEqual(t, "stopped", state)
	require.True(t, marker, "the verdict changed without a page reload")
}

// TestBrowserTriage72DeadLetters: 72 DEAD PROTOCOL/MALFORMED messages in three reasons are
// grouped with their counts; a group filter lists its messages in pages with the total; they
// offer no replay (never replayable) but can be acknowledged as a group, audited by who and when.
func TestBrowserTriage72DeadLetters(t *testing.T) {
	t.Parallel()
	w := setup(t)
	reasons := []struct {
		class, reason string
		n             int
	}{{"PROTOCOL", "FRET@REID: unknown reference %d", 40}, {"MALFORMED", "XML syntax error on line %d", 20}, {"PROTOCOL", "missing FLID in DFLT %d", 12}}
	id := int64(100)
	for _, r := range reasons {
		for i := range r.n {
			_, err := w.db.Pool.Exec(ctx, `INSERT INTO proc_state (msg_id, raw, raw_sha256, status, error_class, reason, attempts, msg_type, enqueued_at, finished_at)
				VALUES ($1, '<MSG/>', sha256('<MSG/>'), 'DEAD', $2, $3, 1, 'DFME', now(), now())`, id, r.class, fmt.Sprintf(r.reason, i+1))
			require.NoError(t, err)
			id++
		}
	}
	run := browser(t)
	var groups, total, h2 string
	var boxes, replayButtons int
	run(loginAs(w.srv.URL, operatorToken))
	run(chromedp.Navigate(w.srv.URL+"/dead?class=PROTOCOL"),
		chromedp.Text(`#dead-groups`, &groups, chromedp.ByID),
		chromedp.Text(`#dead-total`, &total, chromedp.ByID))
	require.Equal(t, "52", total)
	require.Contains(t, groups, "PROTOCOL: FRET@REID: unknown reference N\tPROTOCOL\t40")
	require.Contains(t, groups, "PROTOCOL: missing FLID in DFLT N\tPROTOCOL\t12")
	run(chromedp.Navigate(w.srv.URL+"/dead"),
		chromedp.Text(`#dead-groups`, &groups, chromedp.ByID),
		chromedp.Text(`#dead-total`, &total, chromedp.ByID),
		navigating(chromedp.Click(`#dead-groups a`, chromedp.ByQuery)), // the largest group
		chromedp.WaitVisible(`tr.current`, chromedp.ByQuery),
		chromedp.Text(`#messages-heading`, &h2, chromedp.ByID),
		chromedp.Evaluate(`document.querySelectorAll('#dead-messages tbody input[type=checkbox]').length`, &boxes),
		chromedp.Evaluate(`document.querySelectorAll('#dead-groups tr.current .group-dry').length`, &replayButtons),
		shot(t, "dead-letters"))
	require.Equal(t, "73", total, "72 and the setup's CODEC_ERROR one")
	require.Contains(t, groups, "MALFORMED: XML syntax error on line N\tMALFORMED\t20")
	require.Contains(t, h2, "Messages: 40 in “PROTOCOL: FRET@REID: unknown reference N”")
	require.Contains(t, h2, "(page 1 of 1)")
	require.Equal(t, 40, boxes)
	require.Zero(t, replayButtons, "a PROTOCOL group offers no replay")

	// Acknowledging the whole group asks to confirm first; confirmed, it is recorded on each
	// message and audited with the group; acknowledged messages are then hidden unless asked for.
	var confirm string
	run(navigating(chromedp.Click(`#dead-groups tr.current .group-ack`, chromedp.ByQuery)),
		chromedp.WaitVisible(`#confirm`, chromedp.ByID),
		chromedp.Text(`#confirm-what`, &confirm, chromedp.ByID))
	require.Contains(t, confirm, "Acknowledge all 40 message(s)")
	require.Zero(t, w.count(t, `SELECT count(*) FROM console_note`), "nothing before the confirmation")
	run(navigating(chromedp.Click(`#confirm`, chromedp.ByID)),
		chromedp.WaitVisible(`#dead-messages`, chromedp.ByID),
		chromedp.Text(`#dead-total`, &total, chromedp.ByID))
	require.Equal(t, int64(40), w.count(t, `SELECT count(*) FROM console_note WHERE acknowledged AND actor = 'console:op'`), "the whole group acknowledged, by whom")
	require.Equal(t, int64(1), w.count(t, `SELECT count(*) FROM replay_audit WHERE action = 'acknowledge' AND actor = 'console:op' AND cardinality(ids) = 40
		AND selector LIKE 'dead letters: %group=PROTOCOL%'`))
	require.Equal(t, "0", total, "acknowledged: hidden")
	var notes string
	run(chromedp.Click(`#acked`, chromedp.ByID), navigating(chromedp.Submit(`#acked`, chromedp.ByID)),
		chromedp.WaitVisible(`#dead-messages`, chromedp.ByID),
		chromedp.Text(`#dead-total`, &total, chromedp.ByID),
		chromedp.Text(`#dead-messages`, &notes, chromedp.ByID))
	require.Equal(t, "40", total, "shown when asked for")
	require.Equal(t, 40, strings.Count(notes, "acknowledged"))
}

// TestBrowserFormsPostRedirectGet: a refused RQFD comes back with its values and the error beside
// it; a sent one redirects to the requests page naming it, and reloading that page, or posting
// the same form again, registers nothing more (the first request stays open).
func TestBrowserFormsPostRedirectGet(t *testing.T) {
	t.Parallel()
	w := setup(t)
	day := w.day.Messages[0].At.In(w.loc).Format("2006-01-02")
	run := browser(t)
	var errText, reason, loc, formID string
	run(loginAs(w.srv.URL, operatorToken),
		chromedp.Navigate(w.srv.URL+"/requests"),
		chromedp.SetValue(`#from`, day, chromedp.ByID), chromedp.SetValue(`#to`, day, chromedp.ByID),
		chromedp.SendKeys(`#reason`, "after the outage", chromedp.ByID),
		chromedp.Evaluate(`(f => { f.type = "text"; f.value = "2026-13-45"; return true })(document.getElementById("from"))`, nil),
		navigating(chromedp.Click(`#rqfd-form button[value="send"]`, chromedp.ByQuery)),
		chromedp.Text(`#rqfd-error`, &errText, chromedp.ByID),
		chromedp.Value(`#reason`, &reason, chromedp.ByID))
	require.Contains(t, errText, "first and last operation day")
	require.Equal(t, "after the outage", reason, "the input is kept")
	require.Zero(t, w.count(t, `SELECT count(*) FROM req_track`))

	run(chromedp.Evaluate(`(f => { f.type = "date"; return true })(document.getElementById("from"))`, nil),
		chromedp.SetValue(`#from`, day, chromedp.ByID),
		chromedp.Value(`#rqfd-form input[name=form_id]`, &formID, chromedp.ByQuery),
		navigating(chromedp.Click(`#rqfd-form button[value="send"]`, chromedp.ByQuery)),
		chromedp.WaitVisible(`#request-confirm`, chromedp.ByID), shot(t, "request-confirm"),
		navigating(chromedp.Click(`#confirm-request`, chromedp.ByID)),
		chromedp.WaitVisible(`#registered-id`, chromedp.ByID), chromedp.Location(&loc), shot(t, "requests"))
	require.Contains(t, loc, "/requests?registered=", "Post/Redirect/Get")
	run(navigating(chromedp.Reload()), chromedp.WaitVisible(`#registered-id`, chromedp.ByID))
	require.Equal(t, int64(1), w.count(t, `SELECT count(*) FROM req_track`), "a reload sends nothing")

	// The same form posted again (its one-time id): the first request, nothing new.
	op := w.login(t, operatorToken)
	_, body := get(t, op, w.srv.URL+"/requests")
	resp, err := op.PostForm(w.srv.URL+"/requests", url.Values{"csrf": {csrfOf(t, body)}, "kind": {"RQFD"}, "form_id": {formID},
		"from": {day}, "to": {day}, "reason": {"after the outage"}, "mode": {"send"}, "confirm": {"1"}})
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Contains(t, loc, resp.Header.Get("Location"))
	require.Equal(t, int64(1), w.count(t, `SELECT count(*) FROM req_track`))
	require.Equal(t, int64(1), w.count(t, `SELECT count(*) FROM req_track WHERE closed_at IS NULL`), "the first request is not expired")
}

// TestBrowserFlightTimeline: a flight with five stand and gate changes reads as five rows, one
// per version, each with its message, the fields it changed before → after (gates as a list,
// nothing else shown as cleared) and both topics' acknowledgements; the summary card shows the
// latest stand and gates.
func TestBrowserFlightTimeline(t *testing.T) {
	t.Parallel()
	w := setup(t)
	var base int64
	var alcd, flno string
	require.NoError(t, w.db.Pool.QueryRow(ctx, `SELECT state_version, alcd, flno FROM flight WHERE flid = $1`, w.deadFL).Scan(&base, &alcd, &flno))
	at := w.deps.Now()
	stands := []string{"401", "402", "403", "404", "405", "406"}
	gates := []string{"B10", "B11", "B12", "B13", "B14", "B15"}
	for i := 1; i <= 5; i++ {
		v := base + int64(i)
		changed := fmt.Sprintf(`{"stnd": {"old": %q, "new": %q}, "gtdt": {"old": [{"gtno": 1, "gate": %q}], "new": [{"gtno": 1, "gate": %q}, {"gtno": 2, "gate": "C1"}]}}`,
			stands[i-1], stands[i], gates[i-1], gates[i])
		_, err := w.db.Pool.Exec(ctx, `INSERT INTO msg_event (event_id, target, partition_key, event_type, state_version, msg_id, payload, status, created_at, sent_at)
			VALUES (900000 + $2 * 2, 'KAFKA:msg', $1::text, 'UPSERT', $3, 7000 + $2, jsonb_build_object('flid', $1::text::bigint, 'state_version', $3::bigint, 'changed', $4::jsonb), 'SENT', $5, $5),
			       (900001 + $2 * 2, 'KAFKA:schd', $1::text, 'UPSERT', $3, 7000 + $2, '{}', CASE WHEN $2 = 5 THEN 'PENDING' ELSE 'SENT' END, $5, CASE WHEN $2 = 5 THEN NULL ELSE $5::timestamptz END)`,
			itoa(w.deadFL), i, v, changed, at.Add(time.Duration(i)*time.Minute))
		require.NoError(t, err)
	}
	_, err := w.db.Pool.Exec(ctx, `UPDATE flight SET stnd = '406' WHERE flid = $1`, w.deadFL)
	require.NoError(t, err)

	run := browser(t)
	var title, stand string
	rows := make([]string, 5)
	acts := []chromedp.Action{loginAs(w.srv.URL, operatorToken), chromedp.Navigate(w.srv.URL + "/flights/" + itoa(w.deadFL)),
		chromedp.Text(`h1`, &title, chromedp.ByQuery), chromedp.Text(`#sum-stand`, &stand, chromedp.ByID)}
	for i := range rows {
		acts = append(acts, chromedp.Text(fmt.Sprintf(`tr[data-version="%d"]`, base+int64(i)+1), &rows[i], chromedp.ByQuery))
	}
	acts = append(acts, shot(t, "flight"))
	run(acts...)
	require.Equal(t, 1, strings.Count(title, alcd), "the airline code once: %q", title)
	require.Equal(t, "406", stand)
	for i, row := range rows {
		require.Contains(t, row, fmt.Sprintf("Stand (stnd)\n%s → %s", stands[i], stands[i+1]), "version %d:\n%s", base+int64(i)+1, row)
		require.Contains(t, row, fmt.Sprintf("gate %s, gtno 1 → gate %s, gtno 1\ngate C1, gtno 2", gates[i], gates[i+1]))
		require.Contains(t, row, itoa(7000+int64(i)+1), "the message behind it")
		require.NotContains(t, row, "∅", "no field shown as cleared")
		require.Contains(t, row, "KAFKA:msg SENT")
	}
	require.Contains(t, rows[4], "KAFKA:schd PENDING", "the acknowledgement of each topic")
}

// TestRawMailboxBytes: a message whose text PostgreSQL could not hold (raw NULL, its mailbox
// bytes in raw_bytes) serves those bytes exactly as its file, and its page says so.
func TestRawMailboxBytes(t *testing.T) {
	t.Parallel()
	w := setup(t)
	mailbox := "<?xml version=\"1.0\" encoding=\"Big5\"?><MSG><META><TYPE>FLOP</TYPE></META>\xA5\x78</MSG>"
	_, err := w.db.Pool.Exec(ctx, `INSERT INTO proc_state (msg_id, raw, raw_bytes, raw_sha256, status, error_class, reason, attempts, next_attempt_at, enqueued_at)
		VALUES (601, NULL, $1, sha256($1), 'FAILED', 'CODEC_ERROR', 'unsupported encoding declaration', 1, now(), now())`, []byte(mailbox))
	require.NoError(t, err)

	op := w.login(t, operatorToken)
	code, body := get(t, op, w.srv.URL+"/messages/601/raw")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, mailbox, body, "the file is the mailbox bytes")
	code, body = get(t, op, w.srv.URL+"/messages/601")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "not valid UTF-8")
}

// TestBrowserVerdictKnowsItsAge: the live pipeline page says how old its verdict is; with the
// console's handler frozen (every request held until the browser gives up on it), the verdict
// turns "unknown: the console cannot reach its data" once no answer came for its bound (three
// refresh periods), and not before; it comes back by itself when the console answers again; a
// session ended meanwhile (revoked) says so instead of showing the last verdict.
func TestBrowserVerdictKnowsItsAge(t *testing.T) {
	t.Parallel()
	w := setup(t)
	var frozen atomic.Bool
	d := w.deps
	d.Config.Refresh = time.Second
	srv := w.serveThrough(t, d, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			if frozen.Load() {
				<-r.Context().Done() // held until the client gives up: a frozen process
				return
			}
			h.ServeHTTP(rw, r)
		})
	})

	run := browser(t)
	var state, bound, age string
	run(loginAs(srv.URL, operatorToken),
		chromedp.TextContent(`#verdict-state`, &state, chromedp.ByID),
		chromedp.AttributeValue(`#live`, "data-unknown-after", &bound, nil, chromedp.ByID),
		chromedp.WaitVisible(`#verdict-age`, chromedp.ByID))
	require.NotEqual(t, "unknown", state)
	require.Equal(t, "3", bound, "three refresh periods of 1 s")

	frozen.Store(true)
	froze := time.Now()
	var reasons string
	run(chromedp.WaitVisible(`.verdict.unknown`, chromedp.ByQuery),
		chromedp.Text(`#verdict-reasons`, &reasons, chromedp.ByID),
		chromedp.TextContent(`#verdict-age`, &age, chromedp.ByID),
		shot(t, "pipeline-unknown"))
	took := time.Since(froze)
	require.Contains(t, reasons, "unknown: the console cannot reach its data: no answer for")
	secs, err := strconv.Atoi(strings.TrimSuffix(age, " s"))
	require.NoError(t, err, age)
	require.GreaterOrEqual(t, secs, 3, "not before its bound")
	require.Less(t, took, 3*time.Second+20*time.Second, "within its bound (and a generous margin for a loaded machine)")

	frozen.Store(false)
	run(chromedp.WaitNotPresent(`.verdict.unknown`, chromedp.ByQuery),
		chromedp.TextContent(`#verdict-state`, &state, chromedp.ByID))
	require.NotEqual(t, "unknown", state, "the console answers again: a verdict again")

	_, err = w.db.Pool.Exec(ctx, `UPDATE console_session SET revoked_at = now() WHERE revoked_at IS NULL`)
	require.NoError(t, err)
	run(chromedp.WaitVisible(`.verdict.unknown`, chromedp.ByQuery),
		chromedp.Text(`#verdict-reasons`, &reasons, chromedp.ByID))
	require.Contains(t, reasons, "your session has ended")
	var login string
	run(chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(`#session-ended`, chromedp.ByID),
		chromedp.Text(`#session-ended`, &login, chromedp.ByID))
	require.Contains(t, login, "Your session has ended")
}
