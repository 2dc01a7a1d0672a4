package console_test

import (
	"net/http"
	"strings"
	"testing"

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
