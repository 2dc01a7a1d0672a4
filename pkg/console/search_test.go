package console_test

import (
	"encoding/csv"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestMessageSearchAndCSV, over the messages the processor wrote for a simulated day: a search
// by SEQN (decoded or not), by flight, by type and subtype, and within a time range finds
// exactly the messages proc_state holds for it; the search, the dead letters and the flights
// export as CSV with the rows their pages list, a cell a spreadsheet would run made inert.
func TestMessageSearchAndCSV(t *testing.T) {
	t.Parallel()
	w, st := setupStory(t)
	op := w.login(t, operatorToken)
	ids := func(sql string, args ...any) []string {
		list := w.db.Int64s(t, sql, args...)
		out := make([]string, len(list))
		for i, id := range list {
			out[i] = itoa(id)
		}
		return out
	}
	found := func(q url.Values) []string {
		code, body := get(t, op, w.srv.URL+"/messages?"+q.Encode())
		require.Equal(t, http.StatusOK, code, q.Encode())
		var out []string
		for _, tr := range findAll(byID(parseHTML(t, body), "search-hits"), hasAttr("data-msg")) {
			out = append(out, attr(tr, "data-msg"))
		}
		return out
	}
	seqnOf := func(id int64) string {
		var s string
		require.NoError(t, w.db.Pool.QueryRow(ctx, `SELECT substring(raw from '<SEQN>([0-9]+)</SEQN>') FROM proc_state WHERE msg_id = $1`, id).Scan(&s))
		return s
	}
	var malformed, duplicated int64
	require.NoError(t, w.db.Pool.QueryRow(ctx, `SELECT min(msg_id) FROM proc_state WHERE error_class = 'MALFORMED' AND raw ~ '<SEQN>[0-9]+</SEQN>'`).Scan(&malformed))
	require.NoError(t, w.db.Pool.QueryRow(ctx, `SELECT min(msg_id) FROM proc_state WHERE reason LIKE 'duplicate-of:%'`).Scan(&duplicated))
	for _, id := range []int64{malformed, duplicated, st.answer} {
		seqn := seqnOf(id)
		want := ids(`SELECT msg_id FROM proc_state WHERE raw LIKE '%<SEQN>' || $1 || '</SEQN>%' ORDER BY msg_id DESC`, seqn)
		require.Contains(t, want, itoa(id))
		require.Equal(t, want, found(url.Values{"seqn": {seqn}}), "SEQN %s (message %d)", seqn, id)
	}
	require.Len(t, found(url.Values{"seqn": {seqnOf(duplicated)}}), 2, "a duplicate and what it duplicates")

	var flid string
	require.NoError(t, w.db.Pool.QueryRow(ctx, `SELECT substring(raw from '<FLID>([0-9]+)</FLID>') FROM proc_state WHERE msg_id = $1`, st.early[0]).Scan(&flid))
	require.Equal(t, ids(`SELECT msg_id FROM proc_state WHERE strpos(raw, '<FLID>' || $1 || '</FLID>') > 0 ORDER BY msg_id DESC`, flid),
		found(url.Values{"flid": {flid}}), "flight %s", flid)
	estt := ids(`SELECT msg_id FROM proc_state WHERE msg_type = 'FLOP' AND msg_styp = 'ESTT' ORDER BY msg_id DESC`)
	require.Equal(t, estt[:min(len(estt), 100)], found(url.Values{"type": {"flop"}, "styp": {"ESTT"}}))

	// A time range in airport time: what finished in it (or was enqueued in it and is open).
	var mid time.Time
	require.NoError(t, w.db.Pool.QueryRow(ctx, `SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY finished_at) FROM proc_state`).Scan(&mid))
	from := mid.In(w.loc).Truncate(time.Minute).Add(-5 * time.Minute)
	to := from.Add(10 * time.Minute)
	want := ids(`SELECT msg_id FROM proc_state WHERE msg_type = 'FLOP' AND COALESCE(finished_at, enqueued_at) > $1 AND COALESCE(finished_at, enqueued_at) <= $2
		ORDER BY msg_id DESC`, from, to)
	require.NotEmpty(t, want)
	require.Equal(t, want[:min(len(want), 100)], found(url.Values{"type": {"FLOP"}, "from": {from.Format("2006-01-02T15:04")}, "to": {to.Format("2006-01-02T15:04")}}))
	require.Empty(t, found(url.Values{"type": {"FLOP"}, "from": {from.Add(-2 * time.Hour).Format("2006-01-02T15:04")}, "to": {from.Add(-time.Hour).Format("2006-01-02T15:04")}}),
		"nothing finished an hour before")

	// CSV: all of a list, as its pages show it.
	all := readCSV(t, op, w.srv.URL+"/messages.csv?type=FLOP&styp=ESTT")
	require.Equal(t, []string{"msg_id", "status", "class", "type", "subtype", "seqn", "flid", "at", "reason"}, all[0])
	var col []string
	for _, r := range all[1:] {
		col = append(col, r[0])
	}
	require.Equal(t, estt, col, "every message of the search, not one page")

	_, body := get(t, op, w.srv.URL+"/dead")
	resp, err := op.PostForm(w.srv.URL+"/dead/note", url.Values{"csrf": {csrfOf(t, body)}, "id": {itoa(st.unsupported)}, "note": {`=HYPERLINK("http://evil")`}, "back": {"/dead"}})
	require.NoError(t, err)
	resp.Body.Close()
	dead := readCSV(t, op, w.srv.URL+"/dead.csv")
	require.Equal(t, ids(`SELECT msg_id FROM proc_state WHERE `+deadLetters+` ORDER BY msg_id DESC`),
		column(dead[1:], 0), "every dead letter")
	for _, r := range dead[1:] {
		if r[0] == itoa(st.unsupported) {
			require.True(t, strings.HasPrefix(r[11], `'=HYPERLINK`), "a formula is made inert: %q", r[11])
		}
	}
	var day string
	require.NoError(t, w.db.Pool.QueryRow(ctx, `SELECT min(operation_day)::text FROM flight`).Scan(&day))
	flights := readCSV(t, op, w.srv.URL+"/flights.csv?day="+day)
	got := column(flights[1:], 0)
	slices.Sort(got)
	require.Equal(t, ids(`SELECT flid FROM flight WHERE operation_day = $1::date ORDER BY flid::text`, day), got)
}

func readCSV(t *testing.T, c *http.Client, u string) [][]string {
	t.Helper()
	resp, err := c.Get(u)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "text/csv; charset=utf-8", resp.Header.Get("Content-Type"))
	rows, err := csv.NewReader(resp.Body).ReadAll()
	require.NoError(t, err)
	return rows
}

func column(rows [][]string, i int) []string {
	out := make([]string, len(rows))
	for j, r := range rows {
		out[j] = r[i]
	}
	return out
}
