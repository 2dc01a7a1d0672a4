package console_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/net/html"

	"github.com/msgx/msgx/pkg/clock"
	"github.com/msgx/msgx/pkg/dev/mailboxtest"
	"github.com/msgx/msgx/pkg/dev/simulate"
	"github.com/msgx/msgx/pkg/envconf"
	"github.com/msgx/msgx/pkg/flight"
	"github.com/msgx/msgx/pkg/mailbox"
	"github.com/msgx/msgx/pkg/request"
	"github.com/msgx/msgx/pkg/roles"
)

// story is what setupStory made the pipeline live through, by message id.
type story struct {
	early       []int64 // FLOPs that came before the schedule that added their flight: SKIPPED no-match
	late        int64   // a copy of an older FLOP that reached the head after newer ones: SKIPPED stale:late
	unsupported int64   // a message of a kind no processor serves: DEAD EXHAUSTED
	answer      int64   // the AODB's answer to a schedule request: applied, its request DONE
	request     int64   // that request
}

// setupStory runs a simulated day with bad messages (malformed, PROTOCOL, duplicates) through
// the real processor, with two FLOPs moved before the schedule that adds their flight (each
// followed by a later FLOP of the same kind), then a late row, a message of an unsupported kind,
// and a schedule request sent to the simulated AODB (through the mailbox, as the jobs stage
// sends it) whose answer the processor applies.
func setupStory(t *testing.T) (*world, story) {
	t.Helper()
	day := simulate.Generate(simulate.Config{Seed: 11, Flights: 30, Additions: 4, BadShare: 0.08, Location: airport(t)})
	var st story
	early := moveBeforeTheirFlights(t, &day, 2)
	w := setupDay(t, day)
	for _, i := range early {
		st.early = append(st.early, firstID+int64(i))
		require.Equal(t, "SKIPPED", w.status(t, firstID+int64(i)), "a FLOP before its flight")
	}

	// The late row: an older FLOP of a flight, sent again under a fresh SEQN, found by the
	// re-probe below the watermark after a newer one of the same subtype applied.
	older, newer := samePair(t, day)
	raw := regexp.MustCompile(`<SEQN>\d+</SEQN>`).ReplaceAllString(string(older.Raw), "<SEQN>7000001</SEQN>")
	require.NotEqual(t, string(older.Raw), raw)
	st.late = 700
	w.insert(t, st.late, raw)
	w.drain(t)
	require.Equal(t, "SKIPPED", w.status(t, st.late), "message %d (%s %s) is late after %d", st.late, older.Type, older.Subtype, newer.SEQN)

	// A kind no processor serves: FAILED UNSUPPORTED, then DEAD EXHAUSTED.
	st.unsupported = w.process(t, strings.Replace(string(older.Raw), "<TYPE>FLOP</TYPE>", "<TYPE>ZZZZ</TYPE>", 1))[0]
	require.Equal(t, "DEAD", w.status(t, st.unsupported))

	st.request, st.answer = w.scheduleRequest(t, day.AODBModel(), day.Config.Date)
	return w, st
}

// moveBeforeTheirFlights moves, for n flights added during the day (SCHD ADFT), the first FLOP
// that a later FLOP of the same subtype follows before that ADFT; it returns their new indexes.
func moveBeforeTheirFlights(t *testing.T, day *simulate.Day, n int) []int {
	t.Helper()
	var moved []int
	done := map[int64]bool{}
	for a := 0; a < len(day.Messages) && len(moved) < n; a++ {
		m := day.Messages[a]
		if m.Type != "SCHD" || m.Subtype != "ADFT" || m.Outcome != simulate.OutcomeApplied {
			continue
		}
		for f := a + 1; f < len(day.Messages); f++ {
			op := day.Messages[f]
			if op.Type != "FLOP" || op.Outcome != simulate.OutcomeApplied || done[op.FLID] ||
				!slices.ContainsFunc(m.Records, func(r simulate.Flight) bool { return r.FLID == op.FLID }) {
				continue
			}
			if slices.ContainsFunc(day.Messages[f+1:], func(l simulate.Message) bool {
				return l.FLID == op.FLID && l.Subtype == op.Subtype && l.Outcome == simulate.OutcomeApplied
			}) {
				msgs := slices.Delete(slices.Clone(day.Messages), f, f+1)
				day.Messages = slices.Insert(msgs, a, op)
				moved, done[op.FLID] = append(moved, a), true
				a++ // the ADFT moved one on
			}
			break
		}
	}
	require.Len(t, moved, n, "FLOPs of flights added during the day, each followed by another of its kind")
	return moved
}

// samePair is two applied FLOPs of one flight and subtype, older first.
func samePair(t *testing.T, day simulate.Day) (older, newer simulate.Message) {
	t.Helper()
	seen := map[string]simulate.Message{}
	for _, m := range day.Messages {
		if m.Type != "FLOP" || m.Outcome != simulate.OutcomeApplied || m.Subtype == "FDEL" {
			continue
		}
		k := fmt.Sprint(m.FLID, m.Subtype)
		if o, ok := seen[k]; ok && o.At.Before(m.At) {
			return o, m
		}
		seen[k] = m
	}
	t.Fatal("no flight with two FLOPs of one subtype")
	return
}

// scheduleRequest registers an RQFD of date as an operator would, sends it through the mailbox
// as the jobs stage does, lets the simulated AODB answer from model and processes the answer; it
// returns the request and the answer's message id.
func (w *world) scheduleRequest(t *testing.T, model simulate.AODBModel, date time.Time) (int64, int64) {
	t.Helper()
	reg, err := w.deps.Requests.RegisterAudited(ctx, request.Spec{Kind: request.Schedule, From: date, To: date,
		Origin: request.Operator, Actor: "console:op", Reason: "schedule check"}, "console:op", "schedule check", w.clk.Now())
	require.NoError(t, err)
	sender, _, mb := w.jobsSender(t, w.clk)
	_, err = sender.Send(ctx, reg.Request.ID)
	require.NoError(t, err)
	aodb := simulate.NewAODB(mb.SQL, model, simulate.AODBConfig{Now: w.clk.Now})
	answers, err := aodb.Poll(ctx)
	require.NoError(t, err)
	require.Len(t, answers, 1)
	var text string
	require.NoError(t, mb.SQL.QueryRowContext(ctx, `SELECT CMINMSGS_CLOB_MSG FROM cminmsgs ORDER BY CMINMSGS_ID DESC LIMIT 1`).Scan(&text))
	id := w.process(t, text)[0]
	require.Equal(t, "SUCCEEDED", w.status(t, id))
	require.Equal(t, int64(1), w.count(t, `SELECT count(*) FROM req_track WHERE req_id = $1 AND status = 'DONE'`, reg.Request.ID), "the answer closed its request")
	return reg.Request.ID, id
}

// jobsSender is the jobs stage's request sender (its role, its mailbox user, a test MariaDB)
// on clk, with its store and the mailbox.
func (w *world) jobsSender(t testing.TB, clk clock.Clock) (*request.Sender, *request.Store, *mailboxtest.DB) {
	t.Helper()
	mb := mailboxtest.New(t)
	box, err := mailbox.Open(mb.Users(t).DSN(roles.Jobs))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, box.Close()) })
	rcfg := request.Config{Location: w.loc}
	envconf.Defaults(&rcfg)
	store, err := request.NewStore(w.db.Roles(t).Pool(t, roles.Jobs), rcfg)
	require.NoError(t, err)
	sender, err := request.NewSender(store, box, clk, false)
	require.NoError(t, err)
	return sender, store, mb
}

// insert enqueues a message at id (below the watermark: a late row the re-probe found).
func (w *world) insert(t testing.TB, id int64, raw string) {
	t.Helper()
	_, err := w.db.Pool.Exec(ctx, `INSERT INTO proc_state (msg_id, raw, raw_sha256, received_at, enqueued_at)
		VALUES ($1, $2, sha256(convert_to($2::text, 'UTF8')), $3, $4)`, id, raw, w.clk.Now().In(w.loc), w.clk.Now())
	require.NoError(t, err)
}

func (w *world) status(t testing.TB, id int64) string {
	t.Helper()
	var s string
	require.NoError(t, w.db.Pool.QueryRow(ctx, `SELECT status FROM proc_state WHERE msg_id = $1`, id).Scan(&s))
	return s
}

// TestConsoleShowsWhatThePipelineWrote: for every flight of a simulated day processed by the
// real processor, every value its page shows — the card, the current state, each version's
// before → after — is the stored value (flight and detail tables, the change records in
// msg_event), rendered as the console renders a value; and the flight list shows each flight's
// stored columns, its number as stored, and finds a flight only by what it shows.
func TestConsoleShowsWhatThePipelineWrote(t *testing.T) {
	t.Parallel()
	w, st := setupStory(t)
	op := w.login(t, operatorToken)
	flids := w.db.Int64s(t, `SELECT flid FROM flight ORDER BY flid`)
	require.Greater(t, len(flids), 30)
	for _, flid := range flids {
		code, body := get(t, op, w.srv.URL+"/flights/"+itoa(flid))
		require.Equal(t, http.StatusOK, code, "flight %d", flid)
		page := parseHTML(t, body)
		want := storedFlight(t, w, flid)
		require.Equal(t, want.card(), shownCard(page), "flight %d: the card", flid)
		require.Equal(t, want.fields(), shownFields(page), "flight %d: the current state", flid)
		require.Equal(t, storedTimeline(t, w, flid), shownTimeline(page), "flight %d: the timeline", flid)
		require.Equal(t, want.header(), shownHeader(page), "flight %d: the header", flid)
	}
	checkFlightList(t, w, op)

	code, _ := get(t, op, w.srv.URL+"/requests?registered=99999999")
	require.Equal(t, http.StatusNotFound, code, "an unknown request")
	code, _ = get(t, op, w.srv.URL+"/requests?registered="+itoa(st.request))
	require.Equal(t, http.StatusOK, code)
}

// checkFlightList: the day's list shows each flight's stored columns, its number as stored (the
// airline code once), and a search finds exactly the flights whose shown number contains it.
func checkFlightList(t *testing.T, w *world, op *http.Client) {
	t.Helper()
	type hit struct{ flid, number, mvin, day, sodt, reno, stnd, state, version string }
	rows, err := w.db.Pool.Query(ctx, `SELECT flid::text, COALESCE(alcd, ''), COALESCE(flno, ''), COALESCE(mvin, ''), operation_day::text,
		COALESCE(to_char(sodt, 'YYYY-MM-DD HH24:MI'), '—'), COALESCE(reno, ''), COALESCE(stnd, ''), state, state_version::text
		FROM flight ORDER BY flid`)
	require.NoError(t, err)
	var all []hit
	days := map[string]bool{}
	for rows.Next() {
		var h hit
		var alcd, flno string
		require.NoError(t, rows.Scan(&h.flid, &alcd, &flno, &h.mvin, &h.day, &h.sodt, &h.reno, &h.stnd, &h.state, &h.version))
		h.number = flno
		if !strings.HasPrefix(flno, alcd) {
			h.number = alcd + flno
		}
		all = append(all, h)
		days[h.day] = true
	}
	require.NoError(t, rows.Err())
	shown := func(q url.Values) map[string]hit {
		code, body := get(t, op, w.srv.URL+"/flights?"+q.Encode())
		require.Equal(t, http.StatusOK, code, q.Encode())
		out := map[string]hit{}
		for _, tr := range findAll(byID(parseHTML(t, body), "hits"), isElem("tr")) {
			c := findAll(tr, isElem("td"))
			if len(c) < 9 {
				continue
			}
			h := hit{text(c[0]), text(c[1]), text(c[2]), text(c[3]), text(c[4]), text(c[5]), text(c[6]), text(c[7]), text(c[8])}
			out[h.flid] = h
		}
		return out
	}
	for d := range days {
		want := map[string]hit{}
		for _, h := range all {
			if h.day == d {
				want[h.flid] = h
			}
		}
		require.Equal(t, want, shown(url.Values{"day": {d}}), "the flights of %s", d)
	}
	// The airline code twice is no flight's number (it was found in "CXCX4773").
	var doubled string
	for _, h := range all {
		if len(h.number) > 3 && !strings.Contains(h.number[2:], h.number[:2]) {
			doubled = h.number[:2] + h.number[:2]
			break
		}
	}
	require.NotEmpty(t, doubled)
	for _, q := range []string{doubled, all[0].number[1:4]} {
		want := map[string]hit{}
		for _, h := range all {
			if strings.Contains(strings.ToUpper(h.number), strings.ToUpper(q)) || strings.EqualFold(h.reno, q) || strings.EqualFold(h.stnd, q) {
				want[h.flid] = h
			}
		}
		if len(want) == 1 {
			continue // a single hit redirects to the flight
		}
		require.Equal(t, want, shown(url.Values{"q": {q}}), "search %q", q)
	}
}

// stored is a flight as the tables hold it: the flight row's columns and each collection's rows
// in their input order, as JSON values (times as PostgreSQL writes a timestamp).
type stored map[string]any

func storedFlight(t *testing.T, w *world, flid int64) stored {
	t.Helper()
	var row []byte
	require.NoError(t, w.db.Pool.QueryRow(ctx, `SELECT to_jsonb(f) - 'prov' - 'last_msg_id' - 'created_at' - 'updated_at' FROM flight f WHERE flid = $1`, flid).Scan(&row))
	doc := decodeJSON(t, row).(map[string]any)
	for _, c := range flight.Collections {
		var list []byte
		require.NoError(t, w.db.Pool.QueryRow(ctx, fmt.Sprintf(`SELECT COALESCE(jsonb_agg(to_jsonb(d) - 'flid' - 'ord' - 'kind' ORDER BY ord), '[]')
			FROM %s d WHERE flid = $1 AND ($2 = '' OR to_jsonb(d)->>'kind' = $2)`, c.Table), flid, c.RouteKind).Scan(&list))
		doc[c.Name] = decodeJSON(t, list)
	}
	return doc
}

func (s stored) card() map[string]string {
	one := func(k string) string {
		if l := shown(s[k]); len(l) == 1 {
			return l[0]
		}
		return "—"
	}
	list := func(k, col string) string {
		var out []string
		for _, r := range s[k].([]any) {
			if v := r.(map[string]any)[col]; v != nil {
				out = append(out, shownItem(v))
			}
		}
		if len(out) == 0 {
			return "—"
		}
		return strings.Join(out, ", ")
	}
	return map[string]string{"sodt": one("sodt"), "estt": one("estt"), "actt": one("actt"), "stand": one("stnd"),
		"gates": list("gtdt", "gate"), "belts": list("cldt", "belt"), "ftss": one("ftss"), "reno": one("reno")}
}

// fields are the values the current state lists: every field and non-empty collection.
func (s stored) fields() map[string][]string {
	out := map[string][]string{}
	for k, v := range s {
		if l, ok := v.([]any); v == nil || v == "" || ok && len(l) == 0 {
			continue
		}
		out[k] = shown(v)
	}
	return out
}

// header is the flight's FLID and number (the airline code once), state, version and
// operation day.
func (s stored) header() map[string]string {
	number := str(s["flno"])
	if alcd := str(s["alcd"]); !strings.HasPrefix(number, alcd) {
		number = alcd + number
	}
	return map[string]string{"h1": "Flight " + str(s["flid"]) + " " + number, "state": str(s["state"]),
		"version": str(s["state_version"]), "operation-day": str(s["operation_day"])}
}

func shownHeader(page *html.Node) map[string]string {
	return map[string]string{"h1": text(findAll(page, isElem("h1"))[0]), "state": text(byID(page, "state")),
		"version": text(byID(page, "version")), "operation-day": text(byID(page, "operation-day"))}
}

// change is one field of a version: its lines before and after.
type change struct{ From, To []string }

// storedTimeline is each version's message and changed fields, from the flight's change records.
func storedTimeline(t *testing.T, w *world, flid int64) map[string]map[string]change {
	t.Helper()
	rows, err := w.db.Pool.Query(ctx, `SELECT state_version::text, COALESCE(msg_id::text, ''), target, COALESCE(body, payload::text)
		FROM msg_event WHERE partition_key = $1`, itoa(flid))
	require.NoError(t, err)
	out := map[string]map[string]change{}
	for rows.Next() {
		var version, msg, target, body string
		require.NoError(t, rows.Scan(&version, &msg, &target, &body))
		if out[version] == nil {
			out[version] = map[string]change{"message": {To: []string{msg}}}
		}
		if target != "KAFKA:msg" {
			continue
		}
		env := decodeJSON(t, []byte(body)).(map[string]any)
		changed, _ := env["changed"].(map[string]any)
		for f, c := range changed {
			if f == "prov" {
				continue
			}
			oc := c.(map[string]any)
			out[version][f] = change{From: shown(oc["old"]), To: shown(oc["new"])}
		}
	}
	require.NoError(t, rows.Err())
	return out
}

// shown is how the console shows a stored value: a list one line per item, anything else one
// line; nothing for null or an empty list.
func shown(v any) []string {
	switch x := v.(type) {
	case nil:
		return nil
	case []any:
		var out []string // an empty list shows as ∅, like null
		for _, e := range x {
			out = append(out, shownItem(e))
		}
		return out
	}
	return []string{shownItem(v)}
}

var storedTime = regexp.MustCompile(`^(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2})(:\d{2})$`)

// shownItem: a wall-clock time as "YYYY-MM-DD hh:mm" (its seconds when not zero), a row as its
// non-empty columns "name value" in name order, text as itself, a number as written.
func shownItem(v any) string {
	switch x := v.(type) {
	case string:
		if m := storedTime.FindStringSubmatch(x); m != nil {
			if m[3] == ":00" {
				return m[1] + " " + m[2]
			}
			return m[1] + " " + m[2] + m[3]
		}
		return x
	case map[string]any:
		var parts []string
		for k, e := range x {
			if e != nil && e != "" {
				parts = append(parts, k+" "+shownItem(e))
			}
		}
		sort.Strings(parts)
		return strings.Join(parts, ", ")
	}
	return str(v)
}

func str(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case json.Number:
		return x.String()
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func decodeJSON(t testing.TB, b []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	require.NoError(t, dec.Decode(&v))
	return v
}

// shownCard reads the card of a flight page.
func shownCard(page *html.Node) map[string]string {
	out := map[string]string{}
	for _, k := range []string{"sodt", "estt", "actt", "stand", "gates", "belts", "ftss", "reno"} {
		out[k] = text(byID(page, "sum-"+k))
	}
	return out
}

// shownFields reads the current state table.
func shownFields(page *html.Node) map[string][]string {
	out := map[string][]string{}
	for _, td := range findAll(byID(page, "fields"), hasAttr("data-field")) {
		out[attr(td, "data-field")] = lines(td)
	}
	return out
}

// shownTimeline reads each version's message and changed fields (∅: no value).
func shownTimeline(page *html.Node) map[string]map[string]change {
	out := map[string]map[string]change{}
	for _, tr := range findAll(byID(page, "versions"), hasAttr("data-version")) {
		msg := ""
		if a := findAll(findAll(tr, isElem("td"))[1], isElem("a")); len(a) > 0 {
			msg = text(a[0])
		}
		v := map[string]change{"message": {To: []string{msg}}}
		for _, dt := range findAll(tr, hasAttr("data-field")) {
			dd := dt.NextSibling
			for dd != nil && dd.Type != html.ElementNode {
				dd = dd.NextSibling
			}
			c := change{From: lines(findAll(dd, isElem("del"))[0]), To: lines(findAll(dd, isElem("ins"))[0])}
			if slices.Equal(c.From, []string{"∅"}) {
				c.From = nil
			}
			if slices.Equal(c.To, []string{"∅"}) {
				c.To = nil
			}
			v[attr(dt, "data-field")] = c
		}
		out[attr(tr, "data-version")] = v
	}
	return out
}

func parseHTML(t testing.TB, body string) *html.Node {
	t.Helper()
	n, err := html.Parse(strings.NewReader(body))
	require.NoError(t, err)
	return n
}

func isElem(tag string) func(*html.Node) bool {
	return func(n *html.Node) bool { return n.Type == html.ElementNode && n.Data == tag }
}

func hasAttr(key string) func(*html.Node) bool {
	return func(n *html.Node) bool {
		return n.Type == html.ElementNode && slices.ContainsFunc(n.Attr, func(a html.Attribute) bool { return a.Key == key })
	}
}

func hasAttrValue(key, value string) func(*html.Node) bool {
	return func(n *html.Node) bool { return n.Type == html.ElementNode && attr(n, key) == value }
}

func hasClass(class string) func(*html.Node) bool {
	return func(n *html.Node) bool {
		return n.Type == html.ElementNode && slices.Contains(strings.Fields(attr(n, "class")), class)
	}
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func findAll(n *html.Node, match func(*html.Node) bool) []*html.Node {
	var out []*html.Node
	if n == nil {
		return nil
	}
	for c := range n.Descendants() {
		if match(c) {
			out = append(out, c)
		}
	}
	return out
}

func byID(n *html.Node, id string) *html.Node {
	for c := range n.Descendants() {
		if c.Type == html.ElementNode && attr(c, "id") == id {
			return c
		}
	}
	return nil
}

var spaces = regexp.MustCompile(`\s+`)

// text is an element's text with its white space collapsed.
func text(n *html.Node) string {
	if n == nil {
		return "<missing>"
	}
	var b strings.Builder
	for c := range n.Descendants() {
		if c.Type == html.TextNode {
			b.WriteString(c.Data)
		}
	}
	return strings.TrimSpace(spaces.ReplaceAllString(b.String(), " "))
}

// textContent is an element's text as it is.
func textContent(n *html.Node) string {
	var b strings.Builder
	for c := range n.Descendants() {
		if c.Type == html.TextNode {
			b.WriteString(c.Data)
		}
	}
	return b.String()
}

// lines is an element's text cut at its <br> elements.
func lines(n *html.Node) []string {
	var out []string
	var b strings.Builder
	flush := func() {
		if s := strings.TrimSpace(spaces.ReplaceAllString(b.String(), " ")); s != "" {
			out = append(out, s)
		}
		b.Reset()
	}
	for c := range n.Descendants() {
		switch {
		case c.Type == html.TextNode:
			b.WriteString(c.Data)
		case c.Type == html.ElementNode && c.Data == "br":
			flush()
		}
	}
	flush()
	return out
}
