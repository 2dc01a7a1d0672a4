package console_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestPipelineNamesBlockedBroker: the dispatcher's report that its sends to a broker have been
// blocked for 12 s, while events wait, reaches the pipeline page's live verdict with the broker,
// the topic and the events waiting; with the report gone stale the page says the dispatcher's
// send state is unknown.
func TestPipelineNamesBlockedBroker(t *testing.T) {
	t.Parallel()
	w := setup(t)
	waiting := w.count(t, `SELECT count(*) FROM msg_event_delivery WHERE target = 'KAFKA:msg' AND status = 'PENDING'`)
	require.Positive(t, waiting, "the day's events wait for a dispatcher")
	now := w.clk.Now()
	_, err := w.db.Pool.Exec(ctx, `INSERT INTO dispatch_send (target, topic, epoch, blocked_since, error_class, error, brokers, brokers_silent,
		stall_after, report_every, reported_at)
		VALUES ('KAFKA:msg', 'msgx.flight.changes', 1, $1, 'stalled', 'kafka send waiting for the brokers for 11.5s', '{127.0.0.1:9093}', true,
		        '5s', '5s', $2)`, now.Add(-12*time.Second), now)
	require.NoError(t, err)
	vi := w.login(t, viewerToken)
	code, body := get(t, vi, w.srv.URL+"/")
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, reasonsOf(t, body), "<li>Kafka broker 127.0.0.1:9093 not answering for 12s: "+itoa(waiting)+" events waiting (msgx.flight.changes): kafka send waiting for the brokers for 11.5s</li>")

	w.clk.Advance(16 * time.Second)
	_, body = get(t, vi, w.srv.URL+"/")
	require.Contains(t, reasonsOf(t, body), "<li>dispatcher&#39;s send state unknown for msgx.flight.changes: its last report is 16s old (it reports every 5s)</li>")
}

// reasonsOf is the verdict's list of reasons on a pipeline page.
func reasonsOf(t *testing.T, body string) string {
	t.Helper()
	i := strings.Index(body, `<ul id="verdict-reasons">`)
	require.NotEqual(t, -1, i, "the page lists reasons: %s", body)
	return body[i : i+strings.Index(body[i:], "</ul>")]
}
