package console_test

import (
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/flightstore"
	"github.com/msgx/msgx/pkg/procstate"
)

// said is an outcome: the status, class and reason a page predicts or an attempt recorded.
type said struct{ Status, Class, Reason string }

// TestDeadLetterGuidanceMatchesReplay: for every dead letter the pipeline wrote over a simulated
// day (DEAD, FAILED, SKIPPED no-match), the message page says whether replay takes it and, if it
// does, what a replay would end as; the dry run says the same. Replaying every one of them (one
// forced) and running the processor ends each as said. The unforced replay of a FLOP that came
// before its flight leaves what a later FLOP set; the forced one overwrites it and is
// audited as forced (INV-24b).
func TestDeadLetterGuidanceMatchesReplay(t *testing.T) {
	t.Parallel()
	w, st := setupStory(t)
	op := w.login(t, operatorToken)
	ids := w.db.Int64s(t, `SELECT msg_id FROM proc_state WHERE `+deadLetters+` ORDER BY msg_id`)
	predicted := map[int64]said{}
	var replayable []int64
	for _, id := range ids {
		code, body := get(t, op, w.srv.URL+"/messages/"+itoa(id))
		require.Equal(t, http.StatusOK, code)
		page := parseHTML(t, body)
		p := byID(page, "prediction")
		if byID(page, "dry-run") == nil {
			require.Nil(t, p, "message %d", id)
			require.Contains(t, text(byID(page, "message-flight")), "Replay never takes it", "message %d", id)
			continue
		}
		require.NotNil(t, p, "message %d is replayable: its page says what a replay would do", id)
		predicted[id] = said{attr(p, "data-status"), attr(p, "data-class"), attr(p, "data-reason")}
		replayable = append(replayable, id)
	}
	require.Subset(t, replayable, append([]int64{st.unsupported, w.deadID}, st.early...))
	require.Equal(t, said{"FAILED", "UNSUPPORTED", "no processor for UNSUPPORTED ZZZZ/" + styp(t, w, st.unsupported)}, predicted[st.unsupported])
	var units []string
	for _, e := range st.early {
		sk, err := procstate.ParseSkip(predicted[e].Reason)
		require.NoError(t, err, "message %d: %+v", e, predicted[e])
		require.Equal(t, procstate.SkipStaleLate, sk.Kind, "a later FLOP set what message %d carries", e)
		units = append(units, sk.Units[0])
	}
	require.Equal(t, predicted, dryRun(t, w, op, replayable, false), "the dry run says what the pages say")

	forced, plain := st.early[0], st.early[1]
	forcedSaid := dryRun(t, w, op, []int64{forced}, true)[forced]
	require.Equal(t, "SUCCEEDED", forcedSaid.Status, "forced, it overwrites")
	before := map[int64]int{}
	for _, id := range replayable {
		before[id] = len(attempts(t, w, id))
	}
	setBefore := setter(t, w, plain, units[1])
	require.Greater(t, setBefore, plain, "a later message set %s", units[1])
	replay(t, w, op, slices.DeleteFunc(slices.Clone(replayable), func(id int64) bool { return id == forced }), false)
	replay(t, w, op, []int64{forced}, true)
	w.drain(t)

	predicted[forced] = forcedSaid
	for _, id := range replayable {
		a := attempts(t, w, id)
		require.Greater(t, len(a), before[id], "message %d was attempted again", id)
		got := a[before[id]]
		require.Equal(t, predicted[id], said{got.Outcome, got.Class, got.Reason}, "message %d ends as its page said", id)
	}
	require.Equal(t, forced, setter(t, w, forced, units[0]), "the forced replay overwrote %s", units[0])
	require.Equal(t, setBefore, setter(t, w, plain, units[1]), "the plain replay left %s as the later message set it", units[1])
	require.Equal(t, int64(1), w.count(t, `SELECT count(*) FROM replay_audit WHERE action = 'replay-forced' AND actor = 'console:op' AND ids = $1`, []int64{forced}))
	require.Equal(t, int64(1), w.count(t, `SELECT count(*) FROM replay_audit WHERE action = 'replay' AND NOT $1 = ANY(ids) AND $2 = ANY(ids)`, forced, plain))
}

// dryRun posts a dry run of ids and reads what it predicts for each.
func dryRun(t *testing.T, w *world, op *http.Client, ids []int64, force bool) map[int64]said {
	t.Helper()
	page := parseHTML(t, postReplay(t, w, op, ids, "dry", force))
	out := map[int64]said{}
	for _, tr := range findAll(byID(page, "replay-items"), hasAttr("data-msg")) {
		id, err := strconv.ParseInt(attr(tr, "data-msg"), 10, 64)
		require.NoError(t, err)
		p := findAll(tr, hasAttr("data-status"))
		require.Len(t, p, 1, "message %d", id)
		out[id] = said{attr(p[0], "data-status"), attr(p[0], "data-class"), attr(p[0], "data-reason")}
	}
	return out
}

func replay(t *testing.T, w *world, op *http.Client, ids []int64, force bool) {
	t.Helper()
	require.Contains(t, postReplay(t, w, op, ids, "replay", force), `id="outcome"`)
}

// postReplay posts the dead letters' replay form for ids (mode dry or replay) and returns the page.
func postReplay(t *testing.T, w *world, op *http.Client, ids []int64, mode string, force bool) string {
	t.Helper()
	_, body := get(t, op, w.srv.URL+"/dead")
	form := url.Values{"csrf": {csrfOf(t, body)}, "mode": {mode}, "reason": {"guidance test"}}
	for _, id := range ids {
		form.Add("id", itoa(id))
	}
	if force {
		form.Set("force", "1")
	}
	resp, err := op.PostForm(w.srv.URL+"/dead/replay", form)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
	return string(b)
}

func attempts(t *testing.T, w *world, id int64) []procstate.Attempt {
	t.Helper()
	a, err := procstate.Attempts(ctx, w.db.Pool, id)
	require.NoError(t, err)
	return a
}

var flidRE = regexp.MustCompile(`<FLID>(\d+)</FLID>`)

// setter is the message that last set unit of the flight message id names (its provenance).
func setter(t *testing.T, w *world, id int64, unit string) int64 {
	t.Helper()
	var raw string
	require.NoError(t, w.db.Pool.QueryRow(ctx, `SELECT raw FROM proc_state WHERE msg_id = $1`, id).Scan(&raw))
	m := flidRE.FindStringSubmatch(raw)
	require.NotNil(t, m, "message %d names a flight", id)
	flid, err := strconv.ParseInt(m[1], 10, 64)
	require.NoError(t, err)
	st, err := flightstore.Read(ctx, w.db.Pool, flid)
	require.NoError(t, err)
	require.NotNil(t, st)
	return st.P.Of(unit).MsgID
}

func styp(t *testing.T, w *world, id int64) string {
	t.Helper()
	var s string
	require.NoError(t, w.db.Pool.QueryRow(ctx, `SELECT COALESCE(msg_styp, '') FROM proc_state WHERE msg_id = $1`, id).Scan(&s))
	return s
}
