package console_test

import (
	"strconv"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/clock"
)

// TestBrowserSendsRequests: an operator previews an RQRD (dry run: nothing registered), sends it
// and an RQFD for real (registered with the user and the reason, audit rows written), and the
// jobs stage's sender, as its own PostgreSQL role and mailbox user, writes both into coutmsgs of
// the test MariaDB with the exact text the console showed.
func TestBrowserSendsRequests(t *testing.T) {
	t.Parallel()
	w := setup(t)
	run := browser(t)
	base := w.srv.URL
	day := w.day.Messages[0].At.In(w.loc).Format("2006-01-02")

	var outcome, preview string
	run(loginAs(base, operatorToken),
		chromedp.Navigate(base+"/requests"),
		chromedp.SendKeys(`#list`, "SLST", chromedp.ByID),
		navigating(chromedp.Click(`#rqrd-form button[value="dry"]`, chromedp.ByQuery)),
		chromedp.WaitVisible(`div#outcome`, chromedp.ByQuery),
		chromedp.Text(`div#outcome`, &outcome, chromedp.ByQuery),
		chromedp.Text(`div#outcome pre`, &preview, chromedp.ByQuery),
	)
	require.Contains(t, outcome, "Dry run: would register RQRD SLST")
	require.Contains(t, preview, "SLST", "the dry run shows the message it would write")
	require.Zero(t, w.count(t, `SELECT count(*) FROM req_track`), "a dry run registers nothing")
	require.Zero(t, w.count(t, `SELECT count(*) FROM replay_audit`), "nor audits anything")

	// For real: the form keeps the kind and list code of the dry run; Send shows what it sends
	// and registers nothing before the operator confirms it.
	var confirm string
	run(
		chromedp.SendKeys(`#rqrd-reason`, "reference lists stale after the AODB restart", chromedp.ByID),
		navigating(chromedp.Click(`#rqrd-form button[value="send"]`, chromedp.ByQuery)),
		chromedp.WaitVisible(`#request-confirm`, chromedp.ByID),
		chromedp.Text(`#request-confirm`, &confirm, chromedp.ByID),
	)
	require.Contains(t, confirm, "Confirm: this registers RQRD SLST")
	require.Zero(t, w.count(t, `SELECT count(*) FROM req_track`), "nothing registered before the confirmation")
	run(
		navigating(chromedp.Click(`#confirm-request`, chromedp.ByID)),
		chromedp.WaitVisible(`p#outcome, .form-error`, chromedp.ByQuery), // the dry run's page has div#outcome only
		chromedp.Text(`main`, &outcome, chromedp.ByQuery),
	)
	require.Contains(t, outcome, "Registered request")
	require.Contains(t, outcome, "RQRD SLST")
	run(
		chromedp.Navigate(base+"/requests"),
		chromedp.SetValue(`#from`, day, chromedp.ByID), chromedp.SetValue(`#to`, day, chromedp.ByID),
		chromedp.SendKeys(`#reason`, "schedule check", chromedp.ByID),
		navigating(chromedp.Click(`#rqfd-form button[value="send"]`, chromedp.ByQuery)),
		navigating(chromedp.Click(`#confirm-request`, chromedp.ByID)),
		chromedp.WaitVisible(`p#outcome`, chromedp.ByQuery),
		chromedp.Text(`p#outcome`, &outcome, chromedp.ByQuery),
	)
	require.Contains(t, outcome, "RQFD "+day)
	require.Equal(t, int64(2), w.count(t, `SELECT count(*) FROM req_track WHERE status = 'REGISTERED' AND origin = 'operator' AND actor = 'console:op'`))
	require.Equal(t, int64(1), w.count(t, `SELECT count(*) FROM replay_audit WHERE action = 'request' AND actor = 'console:op'
		AND reason = 'reference lists stale after the AODB restart' AND selector = 'RQRD SLST'`))
	require.Equal(t, int64(1), w.count(t, `SELECT count(*) FROM replay_audit WHERE action = 'request' AND actor = 'console:op' AND reason = 'schedule check'`))

	// The jobs stage sends them: its role, its mailbox user, the test MariaDB.
	sender, store, mb := w.jobsSender(t, clock.NewFake(w.day.Messages[0].At))
	open, err := store.ListOpen(ctx)
	require.NoError(t, err)
	require.Len(t, open, 2)
	for _, r := range open {
		out, err := sender.Send(ctx, r.ID)
		require.NoError(t, err)
		require.False(t, out.Found || out.Already)
		var text, routing string
		require.NoError(t, mb.SQL.QueryRowContext(ctx, `SELECT COUTMSGS_CLOB_MSG, ROUTINGID FROM coutmsgs WHERE COUTMSGS_ID = ?`, out.Request.OutMsgID).Scan(&text, &routing))
		require.Equal(t, r.XML, text, "request %d lands in coutmsgs as registered", r.ID)
		require.Equal(t, r.RoutingID, routing)
		require.Equal(t, int64(1), w.count(t, `SELECT count(*) FROM req_track WHERE req_id = $1 AND status = 'SENT' AND out_msg_id = $2`, r.ID, out.Request.OutMsgID))
	}
	var rows int
	require.NoError(t, mb.SQL.QueryRowContext(ctx, `SELECT count(*) FROM coutmsgs`).Scan(&rows))
	require.Equal(t, 2, rows)
}

// TestBrowserKafkaDeadLetters: the dead-letter form for Kafka events: a dry run changes nothing,
// replay puts an event back to PENDING and skip gives one up, each with its audit row naming the
// user and the reason.
func TestBrowserKafkaDeadLetters(t *testing.T) {
	t.Parallel()
	w := setup(t)
	run := browser(t)
	base := w.srv.URL
	var ids []int64
	rows, err := w.db.Pool.Query(ctx, `UPDATE msg_event SET status = 'DEAD', sent_at = NULL, last_error = 'broker said no'
		WHERE event_id IN (SELECT event_id FROM msg_event ORDER BY event_id DESC LIMIT 2) RETURNING event_id`)
	require.NoError(t, err)
	for rows.Next() {
		var id int64
		require.NoError(t, rows.Scan(&id))
		ids = append(ids, id)
	}
	require.NoError(t, rows.Err())
	require.Len(t, ids, 2)
	replayID, skipID := strconv.FormatInt(ids[0], 10), strconv.FormatInt(ids[1], 10)
	tick := func(id string) chromedp.Action {
		return chromedp.Click(`input[name="event"][value="`+id+`"]`, chromedp.ByQuery)
	}

	var outcome string
	run(loginAs(base, operatorToken),
		chromedp.Navigate(base+"/dead"),
		tick(replayID),
		chromedp.Click(`button[value="replay"][type="submit"]:not(.primary)`, chromedp.ByQuery),
		chromedp.WaitVisible(`#outcome`, chromedp.ByID),
		chromedp.Text(`#outcome`, &outcome, chromedp.ByID),
	)
	require.Contains(t, outcome, "Dry run, nothing changed: would replay 1 event(s): "+replayID)
	require.Equal(t, int64(2), w.count(t, `SELECT count(*) FROM msg_event_delivery WHERE status = 'DEAD'`), "a dry run changes nothing")
	require.Zero(t, w.count(t, `SELECT count(*) FROM replay_audit`))

	for _, step := range []struct{ id, mode, reason, want, status string }{
		{replayID, "replay", "broker ACLs fixed", "Did replay 1 event(s): " + replayID, "PENDING"},
		{skipID, "skip", "consumer rebuilt the state", "Did skip 1 event(s): " + skipID, "SKIPPED"},
	} {
		run(
			chromedp.Navigate(base+"/dead"),
			tick(step.id),
			chromedp.SendKeys(`#ereason`, step.reason, chromedp.ByID),
			chromedp.Click(`input[name="dry"]`, chromedp.ByQuery), // untick the dry run
			chromedp.Click(`button[value="`+step.mode+`"][type="submit"]:not(.primary)`, chromedp.ByQuery),
			chromedp.WaitVisible(`#outcome`, chromedp.ByID),
			chromedp.Text(`#outcome`, &outcome, chromedp.ByID),
		)
		require.Contains(t, outcome, step.want)
		require.Equal(t, int64(1), w.count(t, `SELECT count(*) FROM msg_event_delivery WHERE event_id = $1 AND status = $2`, step.id, step.status), step.mode)
		require.Equal(t, int64(1), w.count(t, `SELECT count(*) FROM replay_audit WHERE action = $1 AND actor = 'console:op' AND reason = $2`,
			"dlq-"+step.mode, step.reason), step.mode)
	}
}
