package console_test

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/net/html"

	"github.com/msgx/msgx/pkg/sis"
)

// TestTriageOfThePipelinesDeadLetters, over the dead letters the processor wrote for a simulated
// day: the groups are class and reason without the offending value (each DEAD decode error
// counted in the group its reason falls in once its value is taken out); the bulk actions stand
// above the messages; every note on a message is shown, and an acknowledged message is hidden
// unless asked for; acknowledging the whole filtered set asks to confirm, acts on what it
// counted, and is audited with the filter; more than 1,000 is refused.
func TestTriageOfThePipelinesDeadLetters(t *testing.T) {
	t.Parallel()
	w, _ := setupStory(t)
	op := w.login(t, operatorToken)

	// Groups, from proc_state's reasons with their value taken out here.
	value, digits := regexp.MustCompile(sis.ValuePattern), regexp.MustCompile(`[0-9]+`)
	rows, err := w.db.Pool.Query(ctx, `SELECT COALESCE(error_class, 'NO-MATCH'), reason FROM proc_state WHERE `+deadLetters)
	require.NoError(t, err)
	want := map[string]string{}
	withValue := 0
	for rows.Next() {
		var class, reason string
		require.NoError(t, rows.Scan(&class, &reason))
		if value.MatchString(reason) {
			withValue++
		}
		g := class + ": " + digits.ReplaceAllString(value.ReplaceAllString(reason, ""), "N")
		n, _ := strconv.Atoi(want[g])
		want[g] = strconv.Itoa(n + 1)
	}
	require.NoError(t, rows.Err())
	require.Greater(t, withValue, 3, "the day's bad messages carry their offending values")
	require.Less(t, len(want), withValue, "messages that fail the same way share a group")
	code, body := get(t, op, w.srv.URL+"/dead")
	require.Equal(t, http.StatusOK, code)
	page := parseHTML(t, body)
	shown := map[string]string{}
	for _, tr := range findAll(byID(page, "dead-groups"), isElem("tr"))[1:] {
		c := findAll(tr, isElem("td"))
		shown[textContent(c[0])] = text(c[2])
	}
	require.Equal(t, want, shown)
	require.True(t, before(page, byID(page, "bulk-actions"), byID(page, "dead-messages")), "the bulk actions stand above the messages")

	// Two notes on one message: both shown; acknowledged, it is hidden by default.
	var id int64
	require.NoError(t, w.db.Pool.QueryRow(ctx, `SELECT min(msg_id) FROM proc_state WHERE status = 'DEAD' AND error_class = 'MALFORMED'`).Scan(&id))
	for _, f := range []url.Values{{"note": {"AODB ticket 17"}}, {"note": {"resent fixed"}, "ack": {"1"}}} {
		f.Set("csrf", csrfOf(t, body))
		f.Set("id", itoa(id))
		f.Set("back", "/dead")
		resp, err := op.PostForm(w.srv.URL+"/dead/note", f)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusSeeOther, resp.StatusCode, "ticked messages need no confirmation")
	}
	_, body = get(t, op, w.srv.URL+"/dead?class=MALFORMED")
	require.NotContains(t, body, fmt.Sprintf(`id="m%d"`, id), "acknowledged: hidden")
	require.Contains(t, text(byID(parseHTML(t, body), "acked-hidden")), "1 acknowledged")
	_, body = get(t, op, w.srv.URL+"/dead?class=MALFORMED&acked=1")
	var notes []string
	for _, tr := range findAll(byID(parseHTML(t, body), "dead-messages"), isElem("tr")) {
		if len(findAll(tr, hasAttrValue("id", "m"+itoa(id)))) > 0 {
			for _, n := range findAll(tr, hasClass("note")) {
				notes = append(notes, text(n))
			}
		}
	}
	require.Len(t, notes, 2, "every note, not only the latest")
	require.Contains(t, notes[0], "AODB ticket 17 — console:op")
	require.Contains(t, notes[1], "acknowledged resent fixed — console:op")

	// The whole filtered set: confirmed, on what was counted, audited.
	protocol := w.count(t, `SELECT count(*) FROM proc_state WHERE status = 'DEAD' AND error_class = 'PROTOCOL'`)
	require.Positive(t, protocol)
	_, body = get(t, op, w.srv.URL+"/dead?class=PROTOCOL")
	require.NotNil(t, byID(parseHTML(t, body), "filtered-ack"))
	form := url.Values{"csrf": {csrfOf(t, body)}, "scope": {"filtered"}, "class": {"PROTOCOL"}, "ack": {"1"}, "note": {"AODB fixing its FDIV"}, "back": {"/dead?class=PROTOCOL"}}
	confirm := postPage(t, op, w.srv.URL+"/dead/note", form)
	require.Equal(t, strconv.FormatInt(protocol, 10), text(byID(confirm, "confirm-count")))
	require.Zero(t, w.count(t, `SELECT count(*) FROM console_note WHERE note = 'AODB fixing its FDIV'`), "nothing before the confirmation")
	confirmed := confirmedForm(confirm)
	// Meanwhile one more PROTOCOL message: the confirmation acts on those it counted.
	var raw string
	require.NoError(t, w.db.Pool.QueryRow(ctx, `SELECT raw FROM proc_state WHERE status = 'DEAD' AND error_class = 'PROTOCOL' LIMIT 1`).Scan(&raw))
	late := w.process(t, regexp.MustCompile(`<SEQN>\d+</SEQN>`).ReplaceAllString(raw, "<SEQN>7000002</SEQN>"))[0]
	require.Equal(t, protocol+1, w.count(t, `SELECT count(*) FROM proc_state WHERE status = 'DEAD' AND error_class = 'PROTOCOL'`))
	resp, err := op.PostForm(w.srv.URL+"/dead/note", confirmed)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, protocol, w.count(t, `SELECT count(*) FROM console_note n JOIN proc_state p USING (msg_id)
		WHERE n.note = 'AODB fixing its FDIV' AND n.acknowledged AND p.error_class = 'PROTOCOL'`), "every PROTOCOL one")
	require.Equal(t, protocol, w.count(t, `SELECT count(*) FROM console_note WHERE note = 'AODB fixing its FDIV'`), "and no other")
	require.Equal(t, int64(1), w.count(t, `SELECT count(*) FROM replay_audit WHERE action = 'acknowledge' AND actor = 'console:op'
		AND selector = 'dead letters: class=PROTOCOL' AND reason = 'AODB fixing its FDIV' AND cardinality(ids) = $1`, protocol))
	_, body = get(t, op, w.srv.URL+"/dead?class=PROTOCOL")
	require.Contains(t, body, `<span id="dead-total">1</span>`, "the one that came after the count")
	require.Contains(t, body, fmt.Sprintf(`id="m%d"`, late))

	// More than 1,000 is refused, and changes nothing.
	_, err = w.db.Pool.Exec(ctx, `INSERT INTO proc_state (msg_id, raw, raw_sha256, status, error_class, reason, attempts, enqueued_at, finished_at)
		SELECT g, '<MSG/>', sha256('<MSG/>'), 'DEAD', 'MALFORMED', 'MALFORMED at MSG: bulk', 1, now(), now() FROM generate_series(20001, 21001) g`)
	require.NoError(t, err)
	form = url.Values{"csrf": {csrfOf(t, body)}, "scope": {"filtered"}, "class": {"MALFORMED"}, "ack": {"1"}, "back": {"/dead"}}
	resp, err = op.PostForm(w.srv.URL+"/dead/note", form)
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	require.Contains(t, string(b), "More than 1000 messages")
}

// postPage posts a form and parses the page it answers (200).
func postPage(t *testing.T, c *http.Client, u string, form url.Values) *html.Node {
	t.Helper()
	resp, err := c.PostForm(u, form)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
	return parseHTML(t, string(b))
}

// before reports whether a comes before b in the document.
func before(doc, a, b *html.Node) bool {
	for n := range doc.Descendants() {
		switch n {
		case a:
			return true
		case b:
			return false
		}
	}
	return false
}

// confirmedForm is what a confirmation page's form posts: the values of its inputs.
func confirmedForm(confirm *html.Node) url.Values {
	v := url.Values{}
	for _, in := range findAll(byID(confirm, "confirm-form"), isElem("input")) {
		v.Add(attr(in, "name"), attr(in, "value"))
	}
	return v
}

// TestConfirmedNoteActsOnWhatWasCounted: confirming a note on the filtered set acts on the
// messages the confirmation counted without selecting the filter again, so it goes through
// even when the filter has since grown past what one action takes.
func TestConfirmedNoteActsOnWhatWasCounted(t *testing.T) {
	t.Parallel()
	w := setup(t)
	op := w.login(t, operatorToken)
	_, body := get(t, op, w.srv.URL+"/dead?class=CODEC_ERROR")
	form := url.Values{"csrf": {csrfOf(t, body)}, "scope": {"filtered"}, "class": {"CODEC_ERROR"}, "note": {"codec fix pending"}, "back": {"/dead"}}
	confirm := postPage(t, op, w.srv.URL+"/dead/note", form)
	require.Equal(t, "1", text(byID(confirm, "confirm-count")))
	confirmed := confirmedForm(confirm)
	// Meanwhile more CODEC_ERROR messages than one action takes.
	_, err := w.db.Pool.Exec(ctx, `INSERT INTO proc_state (msg_id, raw, raw_sha256, status, error_class, reason, attempts, enqueued_at, finished_at)
		SELECT g, '<MSG/>', sha256('<MSG/>'), 'DEAD', 'CODEC_ERROR', 'CODEC_ERROR at MSG: bulk', 1, now(), now() FROM generate_series(20001, 21001) g`)
	require.NoError(t, err)
	resp, err := op.PostForm(w.srv.URL+"/dead/note", confirmed)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, int64(1), w.count(t, `SELECT count(*) FROM console_note WHERE note = 'codec fix pending' AND msg_id = $1`, w.deadID))
	require.Equal(t, int64(1), w.count(t, `SELECT count(*) FROM console_note WHERE note = 'codec fix pending'`), "only the one counted")
	require.Equal(t, int64(1), w.count(t, `SELECT count(*) FROM replay_audit WHERE action = 'note' AND selector = 'dead letters: class=CODEC_ERROR'
		AND reason = 'codec fix pending' AND ids = ARRAY[$1::bigint]`, w.deadID))
}
