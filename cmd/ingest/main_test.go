package main

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/msgx/msgx/pkg/dev/mailboxtest"
	"github.com/msgx/msgx/pkg/dev/testdb"
	"github.com/msgx/msgx/pkg/dev/tlsenv"
	"github.com/msgx/msgx/pkg/httpauth"
	"github.com/msgx/msgx/pkg/obs"
)

// TestMain checks for leaked goroutines, then stops the private TLS servers (pkg/dev/tlsenv).
func TestMain(m *testing.M) { goleak.VerifyTestMain(tlsRun{m}) }

type tlsRun struct{ m *testing.M }

func (r tlsRun) Run() int { return tlsenv.Run(r.m) }

func TestRunIngestsAndServesCompat(t *testing.T) {
	t.Parallel()
	pg := testdb.New(t)
	mb := mailboxtest.New(t)
	cfg, err := load()
	require.NoError(t, err)
	cfg.PGURL, cfg.Mailbox.MySQLDSN, cfg.HTTPAddr, cfg.API.Addr = pg.URL, mb.DSN, "127.0.0.1:0", "127.0.0.1:0"
	token, entry, err := httpauth.NewToken("aodb", httpauth.ScopeSend)
	require.NoError(t, err)
	cfg.API.Access.Tokens = httpauth.Clients{entry}
	cfg.Ingest.PollInterval = 20 * time.Millisecond
	cfg.ShutdownTimeout, cfg.ShutdownDrain = 5*time.Second, 0

	for _, text := range []string{"<MSG>1</MSG>", "<MSG>2</MSG>"} {
		_, err := mb.SQL.Exec(`INSERT INTO cminmsgs (CMINMSGS_CLOB_MSG) VALUES (?)`, text)
		require.NoError(t, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addr := make(chan [2]string, 1)
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, cfg, obs.NewLogger(io.Discard, "info", "ingest"), obs.NewRegistry(), func(ops, api *obs.Server) { addr <- [2]string{ops.Addr(), api.Addr()} })
	}()
	addrs := <-addr
	base, apiBase := "http://"+addrs[0], "http://"+addrs[1]

	count := func() int { // -1 when it cannot be read (it runs in require.Eventually's goroutine)
		var n int
		if err := pg.Pool.QueryRow(context.Background(), `SELECT count(*) FROM proc_state`).Scan(&n); err != nil {
			return -1
		}
		return n
	}
	require.Eventually(t, func() bool { return count() == 2 }, 20*time.Second, 10*time.Millisecond, "the backlog to be enqueued")

	// The ops listener does not serve the API.
	resp, err := http.Post(base+"/cminmsgs/send", "application/xml", strings.NewReader("<MSG>3</MSG>"))
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusNotFound, resp.StatusCode)

	req, err := http.NewRequest(http.MethodPost, apiBase+"/cminmsgs/send", strings.NewReader("<MSG>3</MSG>"))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/xml")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	require.Equal(t, "3", string(body))
	require.Eventually(t, func() bool {
		var w int64
		err := pg.Pool.QueryRow(context.Background(), `SELECT watermark FROM inbox_cursor`).Scan(&w)
		return err == nil && w == 3
	}, 20*time.Second, 10*time.Millisecond, "W to reach the compat row")
	require.Equal(t, 3, count())

	resp, err = http.Get(base + "/metrics")
	require.NoError(t, err)
	metrics, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Contains(t, string(metrics), "msgx_ingest_watermark 3")
	require.Contains(t, string(metrics), `msgx_ingest_compat_requests_total{code="200"} 1`)

	cancel()
	require.NoError(t, <-done)
}
