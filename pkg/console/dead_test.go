package console_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"
)

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
	confirmed := url.Values{}
	for _, in := range findAll(byID(confirm, "confirm-form"), isElem("input")) {
		confirmed.Add(attr(in, "name"), attr(in, "value"))
	}
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
