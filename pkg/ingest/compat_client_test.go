package ingest

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/httpauth"
)

// lockedBuffer is a log sink the server's goroutines write to and the test reads.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// The compat entry's log line of a stored message names the API client that sent it.
func TestCompatRecordsItsClient(t *testing.T) {
	t.Parallel()
	b := setup(t, testConfig)
	token, entry, err := httpauth.NewToken("aodb-gateway", httpauth.ScopeSend)
	require.NoError(t, err)
	gate := httpauth.NewGate(httpauth.Config{Tokens: httpauth.Clients{entry}}, time.Now)
	var logs lockedBuffer
	h := gate.RequireBody(httpauth.ScopeSend, 1<<20, NewCompat(CompatConfig{MaxBody: 1 << 20}, b.box, b.pg.Pool, b.clock, b.metrics, zerolog.New(&logs)))
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	req, err := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(sampleMsg))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/xml")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, logs.String(), `"client":"aodb-gateway"`)
	require.Contains(t, logs.String(), "compat: message stored in the mailbox")
}
