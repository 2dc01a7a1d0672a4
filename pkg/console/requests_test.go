package console_test

import (
	"fmt"
	stdhtml "html"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/dev/simulate"
)

// TestScheduleAnswerCountedAndPaged: an RQFD answered by the simulated AODB with a whole day's
// schedule (1,500 records, megabytes) that the processor applies: the requests list and the
// request's page link the answer and count the flights it created, changed and left unchanged
// as the flight table shows them; the answer's page shows its fields 200 at a time (every page
// together: each leaf element of the text, in order) and the start of its text, with the whole
// as a file; an unknown request is a 404.
func TestScheduleAnswerCountedAndPaged(t *testing.T) {
	t.Parallel()
	w := setup(t)
	versions := func() map[int64]int64 {
		rows, err := w.db.Pool.Query(ctx, `SELECT flid, state_version FROM flight`)
		require.NoError(t, err)
		out := map[int64]int64{}
		for rows.Next() {
			var f, v int64
			require.NoError(t, rows.Scan(&f, &v))
			out[f] = v
		}
		require.NoError(t, rows.Err())
		return out
	}
	before := versions()
	big := simulate.Generate(simulate.Config{Seed: 5, Flights: 1500, Location: w.loc}) // the same day and FLIDs, more flights
	reqID, answerID := w.scheduleRequest(t, big.AODBModel(), big.Config.Date)
	after := versions()
	var created, changed, unchanged int
	for f, v := range after {
		switch b, ok := before[f]; {
		case !ok:
			created++
		case v > b:
			changed++
		default:
			unchanged++
		}
	}
	require.Greater(t, created, 1000)
	require.NotZero(t, changed)
	want := map[string]string{"answer": itoa(answerID), "created": strconv.Itoa(created), "changed": strconv.Itoa(changed)}

	op := w.login(t, operatorToken)
	code, body := get(t, op, w.srv.URL+"/requests")
	require.Equal(t, http.StatusOK, code)
	var row map[string]string
	for _, tr := range findAll(byID(parseHTML(t, body), "closed-requests"), hasAttr("data-request")) {
		if attr(tr, "data-request") == itoa(reqID) {
			row = map[string]string{"answer": text(findAll(tr, hasClass("answer"))[0]),
				"created": text(findAll(tr, hasClass("created"))[0]), "changed": text(findAll(tr, hasClass("changed"))[0])}
		}
	}
	require.Equal(t, want, row, "the requests list")

	code, body = get(t, op, w.srv.URL+"/requests/"+itoa(reqID))
	require.Equal(t, http.StatusOK, code)
	page := parseHTML(t, body)
	require.Equal(t, want, map[string]string{"answer": text(byID(page, "answer")), "created": text(byID(page, "answer-created")),
		"changed": text(byID(page, "answer-changed"))}, "the request's page")
	require.Equal(t, "0", text(byID(page, "answer-deleted")))
	for _, id := range []string{"99999999", "x", "-1"} {
		code, _ = get(t, op, w.srv.URL+"/requests/"+id)
		require.Equal(t, http.StatusNotFound, code, "request %s", id)
	}

	// The answer's page, 200 fields at a time: each page the leaf elements and attributes of its
	// range, in order (the first two, one in the middle, the last, and one past it: the last).
	var raw string
	require.NoError(t, w.db.Pool.QueryRow(ctx, `SELECT raw FROM proc_state WHERE msg_id = $1`, answerID).Scan(&raw))
	require.Greater(t, len(raw), 1<<20)
	leaves := leavesOf(raw)
	last := (len(leaves) + 199) / 200
	for _, n := range []int{1, 2, last / 2, last, last + 5} {
		code, body = get(t, op, w.srv.URL+"/messages/"+itoa(answerID)+"?fields="+strconv.Itoa(n))
		require.Equal(t, http.StatusOK, code)
		require.Less(t, len(body), 256<<10, "page %d is a page, not the message", n)
		page = parseHTML(t, body)
		require.Equal(t, strconv.Itoa(len(leaves)), text(byID(page, "fields-total")))
		from := (min(n, last) - 1) * 200
		require.Equal(t, fmt.Sprintf("%d–%d", from+1, min(from+200, len(leaves))), text(byID(page, "fields-range")))
		var shown []string
		for _, tr := range findAll(byID(page, "fields"), isElem("tr"))[1:] {
			c := findAll(tr, isElem("td"))
			path := text(c[0])
			shown = append(shown, path[strings.LastIndex(path, "/")+1:]+"="+textContent(c[1]))
		}
		require.Equal(t, leaves[from:min(from+200, len(leaves))], shown, "page %d", n)
	}
	require.NotNil(t, byID(page, "raw-cut"), "the text is cut")
	require.True(t, strings.HasPrefix(raw, textContent(byID(page, "raw"))), "the start of the text, byte-exact")
	code, body = get(t, op, w.srv.URL+"/messages/"+itoa(answerID)+"/raw")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, raw, body, "the whole text is the file")
}

// tagRE is a tag of a SIS message (its name and attributes) or the text between tags.
var tagRE = regexp.MustCompile(`<(/?)([A-Za-z0-9_:]+)((?:\s+[A-Za-z0-9_:]+="[^"]*")*)\s*>|([^<]+)`)

var attrRE = regexp.MustCompile(`([A-Za-z0-9_:]+)="([^"]*)"`)

// leavesOf lists, in document order, every attribute of a message (NAME@attr=value, at its
// element's start) and every leaf element (NAME=text, at its end), read with regular
// expressions: an oracle apart from the console's XML decoder.
func leavesOf(raw string) []string {
	var out []string
	var open string // the start tag just read, until a child or its end
	var txt strings.Builder
	for _, m := range tagRE.FindAllStringSubmatch(raw, -1) {
		switch {
		case m[4] != "":
			txt.WriteString(m[4])
		case m[1] == "":
			open = m[2]
			txt.Reset()
			for _, a := range attrRE.FindAllStringSubmatch(m[3], -1) {
				out = append(out, m[2]+"@"+a[1]+"="+stdhtml.UnescapeString(a[2]))
			}
		default:
			if open == m[2] {
				out = append(out, m[2]+"="+stdhtml.UnescapeString(strings.TrimSpace(txt.String())))
			}
			open = ""
		}
	}
	return out
}
