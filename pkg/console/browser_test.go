package console_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/dev/testdb"
)

// shared is the test binary's one headless Chromium (Debian's chromium, scripts/ensure-tools.sh)
// at 1280×900, started by the first browser test.
var shared struct {
	once sync.Once
	ctx  context.Context // the browser's; nil when it could not start
	err  error
	turn chan struct{} // one test drives the browser at a time (below)
}

// stopBrowser ends the shared browser (TestMain, after every test).
var stopBrowser = func() {}

func TestMain(m *testing.M) {
	code := m.Run()
	stopBrowser()
	os.Exit(code)
}

// browser opens a tab in the shared Chromium, waiting for the test before to finish with its own. The tabs share one cookie store, which scopes
// cookies by host and not by port: each world serves on its own loopback address (serve). Without Chromium the
// browser tests skip, except under CI where they must run.
func browser(t *testing.T) (run func(actions ...chromedp.Action)) {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("chromium is not installed: run scripts/ensure-tools.sh")
		}
		t.Skip("chromium is not installed (scripts/ensure-tools.sh installs it)")
	}
	shared.once.Do(func() {
		opts := append(chromedp.DefaultExecAllocatorOptions[:],
			chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.WindowSize(1280, 900),
			chromedp.Flag("disable-dev-shm-usage", true))
		actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
		bctx, cancel := chromedp.NewContext(actx)
		stopBrowser = func() { cancel(); cancelAlloc() }
		// The first Run starts the browser and ties it to its context.
		shared.ctx, shared.err = bctx, chromedp.Run(bctx)
		shared.turn = make(chan struct{}, 1)
	})
	require.NoError(t, shared.err)
	// One test at a time has a tab, in front: a tab behind others is hidden, and Chromium delays
	// its timers and loads (the tests' setups still run in parallel).
	shared.turn <- struct{}{}
	tab, cancel := chromedp.NewContext(shared.ctx) // its world's own host keeps its cookies apart
	t.Cleanup(func() { cancel(); <-shared.turn })
	require.NoError(t, chromedp.Run(tab, page.BringToFront()))
	return func(actions ...chromedp.Action) {
		t.Helper()
		tctx, stop := contextWithTimeout(tab, 60*time.Second)
		defer stop()
		require.NoError(t, chromedp.Run(tctx, actions...))
	}
}

// shot writes a screenshot of the viewport to docs/console/<name>.png when MSGX_CONSOLE_SCREENSHOTS=1
// (so that `make test` does not rewrite the committed files).
func shot(t *testing.T, name string) chromedp.Action {
	return chromedp.ActionFunc(func(c contextT) error {
		if os.Getenv("MSGX_CONSOLE_SCREENSHOTS") != "1" {
			return nil
		}
		var buf []byte
		if err := chromedp.CaptureScreenshot(&buf).Do(c); err != nil { // the 1280×900 viewport
			return err
		}
		dir := filepath.Join("..", "..", "docs", "console")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, name+".png"), buf, 0o644)
	})
}

func loginAs(base, token string) chromedp.Tasks {
	return chromedp.Tasks{
		chromedp.Navigate(base + "/login"),
		chromedp.WaitVisible(`#token`, chromedp.ByID),
		chromedp.SendKeys(`#token`, token, chromedp.ByID),
		// RunResponse waits for the navigation the submit starts (a query begun on the login
		// page may otherwise wait on a document that is gone).
		navigating(chromedp.Submit(`#token`, chromedp.ByID)),
		chromedp.WaitVisible(`#watermark`, chromedp.ByID),
	}
}

// navigating runs an action that starts a navigation (a click on a link or a submit) and waits
// until the new page has loaded.
func navigating(a chromedp.Action) chromedp.Action {
	return chromedp.ActionFunc(func(c contextT) error {
		_, err := chromedp.RunResponse(c, a)
		return err
	})
}

// TestBrowserOperator: log in, read the pipeline, find a flight of the simulated day by its
// number and day and check its page against PostgreSQL, open the DEAD message (its hostile text
// shown as text, no script run), dry-run its replay (later messages of the same flight named),
// replay it for real (audit row with the user).
func TestBrowserOperator(t *testing.T) {
	t.Parallel()
	w := setup(t)
	run := browser(t)
	base := w.srv.URL

	var watermark string
	run(loginAs(base, operatorToken), chromedp.Text(`#watermark`, &watermark, chromedp.ByID))
	require.Equal(t, strconv.FormatInt(w.lastID, 10), watermark)

	// A flight of the day, by flight number and operation day.
	var flid int64
	var flno, day, stand string
	var version int64
	require.NoError(t, w.db.Pool.QueryRow(ctx, `SELECT flid, flno, operation_day::text, state_version, COALESCE(stnd, '')
		FROM flight WHERE state = 'ACTIVE' AND stnd IS NOT NULL ORDER BY state_version DESC, flid LIMIT 1`).Scan(&flid, &flno, &day, &version, &stand))
	var gotFLID, gotVersion, gotStand, versionsText string
	run(
		chromedp.Navigate(base+"/flights"),
		chromedp.SendKeys(`#q`, flno, chromedp.ByID), // the AODB's FLNO carries the airline code
		chromedp.SetValue(`#day`, day, chromedp.ByID),
		chromedp.Submit(`#q`, chromedp.ByID),
		chromedp.WaitVisible(`#flid`, chromedp.ByID),
		chromedp.Text(`#flid`, &gotFLID, chromedp.ByID),
		chromedp.Text(`#version`, &gotVersion, chromedp.ByID),
		chromedp.Text(`td[data-field="stnd"]`, &gotStand, chromedp.ByQuery),
		chromedp.Text(`#versions`, &versionsText, chromedp.ByID),
		shot(t, "flight-found"),
	)
	require.Equal(t, strconv.FormatInt(flid, 10), gotFLID)
	require.Equal(t, strconv.FormatInt(version, 10), gotVersion)
	require.Equal(t, stand, gotStand)
	var events int64
	require.NoError(t, w.db.Pool.QueryRow(ctx, `SELECT count(*) FROM `+testdb.AllEvents+` WHERE partition_key = $1`, gotFLID).Scan(&events))
	require.Equal(t, int(events), strings.Count(versionsText, "KAFKA:"), "one row per event of the flight")

	// The DEAD message: hostile text as text, nothing executed.
	var raw, reason, title string
	var scripts int
	run(
		chromedp.Navigate(base+"/messages/"+strconv.FormatInt(w.deadID, 10)),
		chromedp.WaitVisible(`#raw`, chromedp.ByID),
		chromedp.Text(`#raw`, &raw, chromedp.ByID),
		chromedp.Text(`#reason`, &reason, chromedp.ByID),
		chromedp.Title(&title),
		chromedp.Evaluate(`document.querySelectorAll('script:not([src="/static/console.js"])').length + document.querySelectorAll('a[href^="javascript:"]').length`, &scripts),
		shot(t, "message"),
	)
	// Its attempt history: every attempt with its class and reason, in order.
	var attempts string
	run(
		chromedp.ScrollIntoView(`#attempts`, chromedp.ByID),
		chromedp.Text(`#attempts`, &attempts, chromedp.ByID),
		shot(t, "message-attempts"),
	)
	require.Regexp(t, `(?s)FAILED.*decode REMC: first try.*DEAD.*decode REMC: <script>`, attempts)
	require.Contains(t, reason, hostile, "the reason (hostile text) reads as the text it is")
	require.Contains(t, raw, "<REMC>&lt;script&gt;document.title=", "the raw message reads as its XML")
	var stored string
	require.NoError(t, w.db.Pool.QueryRow(ctx, `SELECT raw FROM proc_state WHERE msg_id = $1`, w.deadID).Scan(&stored))
	require.Equal(t, stored, raw, "the raw text is shown byte-exact")
	require.NotContains(t, title, "pwned")
	require.Zero(t, scripts, "no script element and no javascript: link came from the message")

	// Dry run, then the replay for real.
	var outcome, items string
	run(
		chromedp.Click(`#dry-run`, chromedp.ByID),
		chromedp.WaitVisible(`#outcome-dry`, chromedp.ByID),
		chromedp.Text(`#outcome-dry`, &outcome, chromedp.ByID),
		chromedp.Text(`#replay-items`, &items, chromedp.ByID),
		shot(t, "replay-dry-run"),
	)
	require.Contains(t, outcome, "Dry run: nothing changed")
	require.Contains(t, items, strconv.FormatInt(w.deadFL, 10), "the flight it touches")
	var later int64
	require.NoError(t, w.db.Pool.QueryRow(ctx, `SELECT last_msg_id FROM flight WHERE flid = $1`, w.deadFL).Scan(&later))
	require.Contains(t, items, strconv.FormatInt(later, 10), "a later message of the same flight is named")
	require.Equal(t, int64(1), w.count(t, `SELECT count(*) FROM proc_state WHERE msg_id = $1 AND status = 'DEAD'`, w.deadID), "a dry run changes nothing")

	run(
		chromedp.SendKeys(`#reason`, "codec fixed in 1.4.2", chromedp.ByID),
		chromedp.Click(`button[value="replay"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`#outcome`, chromedp.ByID), // the dry run's page has #outcome-dry only
		chromedp.Text(`#outcome`, &outcome, chromedp.ByID),
	)
	require.Contains(t, outcome, "Requeued 1 message")
	require.Equal(t, int64(1), w.count(t, `SELECT count(*) FROM replay_audit WHERE action = 'replay' AND actor = 'console:op' AND reason = 'codec fixed in 1.4.2' AND $1 = ANY(ids)`, w.deadID))
	require.Equal(t, int64(1), w.count(t, `SELECT count(*) FROM proc_state WHERE msg_id = $1 AND status = 'PENDING'`, w.deadID))

	// The other pages, for the screenshots and to see them render in a browser.
	var h1 string
	run(chromedp.Navigate(base+"/dead"), chromedp.Text(`h1`, &h1, chromedp.ByQuery))
	require.Equal(t, "Dead letters", h1)
	run(chromedp.Navigate(base+"/requests"),
		chromedp.SetValue(`#from`, day, chromedp.ByID), chromedp.SetValue(`#to`, day, chromedp.ByID),
		navigating(chromedp.Click(`#rqfd-form button[value="dry"]`, chromedp.ByQuery)),
		chromedp.WaitVisible(`#outcome`, chromedp.ByID),
		chromedp.Text(`#outcome`, &outcome, chromedp.ByID), shot(t, "requests-dry-run"))
	require.Contains(t, outcome, "Dry run: would register RQFD")
	require.Zero(t, w.count(t, `SELECT count(*) FROM req_track`), "a dry run registers nothing")
}

// TestBrowserViewerRefused: a viewer reads the DEAD message and is refused its replay.
func TestBrowserViewerRefused(t *testing.T) {
	t.Parallel()
	w := setup(t)
	run := browser(t)
	var h1, msg string
	run(loginAs(w.srv.URL, viewerToken),
		chromedp.Navigate(w.srv.URL+"/messages/"+strconv.FormatInt(w.deadID, 10)),
		chromedp.WaitVisible(`#replay`, chromedp.ByID),
		chromedp.SendKeys(`#reason-input`, "viewer tries", chromedp.ByID),
		chromedp.Click(`#replay`, chromedp.ByID),
		chromedp.WaitVisible(`p.notice.bad`, chromedp.ByQuery),
		chromedp.Text(`h1`, &h1, chromedp.ByQuery),
		chromedp.Text(`p.notice.bad`, &msg, chromedp.ByQuery),
		shot(t, "viewer-refused"),
	)
	require.Equal(t, "403", h1)
	require.Contains(t, msg, "read scope only")
	require.Zero(t, w.count(t, `SELECT count(*) FROM replay_audit`))
	require.Equal(t, int64(1), w.count(t, `SELECT count(*) FROM proc_state WHERE msg_id = $1 AND status = 'DEAD'`, w.deadID))
}

type contextT = context.Context

func contextWithTimeout(parent context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(parent, d)
}
