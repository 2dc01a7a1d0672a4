package console_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

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
	run(chromedp.Navigate(alert.URL), chromedp.Click(`#go`, chromedp.ByID),
		chromedp.WaitVisible(`#token`, chromedp.ByID),
		chromedp.SendKeys(`#token`, operatorToken, chromedp.ByID),
		chromedp.Submit(`#token`, chromedp.ByID),
		chromedp.WaitVisible(`#msgid`, chromedp.ByID),
		chromedp.Location(&loc), chromedp.Text(`#msgid`, &h1, chromedp.ByID))
	require.Equal(t, target, loc, "after login the deep link lands on its page")
	require.Equal(t, itoa(w.deadID), h1)
	run(chromedp.Navigate(alert.URL), chromedp.Click(`#go`, chromedp.ByID),
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
