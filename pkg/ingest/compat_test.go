package ingest

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/mailbox"
)

const sampleMsg = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<MSG>\n\t<META>\n\t\t<SNDR>AODB</SNDR>\n\t\t<SEQN> 92643 </SEQN>\n\t\t<DTTM>20061210090311</DTTM>\n\t\t<TYPE>FLOP</TYPE>\n\t\t<STYP>ABTM</STYP>\n\t</META>\n\t<FLOP><FLID>15</FLID><REMC>备注</REMC></FLOP>\n</MSG>\n\n"

type compatBundle struct {
	*bundle
	cfg    CompatConfig
	server *httptest.Server
}

// setupCompat serves the compat entry on a real HTTP server, with mb and db as its stores.
func setupCompat(t *testing.T, cfg CompatConfig, mb Inserter, db DB) *compatBundle {
	t.Helper()
	b := setup(t, testConfig)
	if mb == nil {
		mb = b.box
	}
	if db == nil {
		db = b.pg.Pool
	}
	if cfg.MaxBody == 0 {
		cfg.MaxBody = 1 << 20
	}
	shanghai, err := time.LoadLocation("Asia/Shanghai")
	require.NoError(t, err)
	cfg.Location = shanghai
	mux := http.NewServeMux()
	mux.Handle(CompatPattern, NewCompat(cfg, mb, db, b.clock, b.metrics, zerolog.Nop()))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return &compatBundle{bundle: b, cfg: cfg, server: srv}
}

func (c *compatBundle) post(t *testing.T, contentType string, body io.Reader) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, c.server.URL+"/cminmsgs/send", body)
	require.NoError(t, err)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := c.server.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, "text/plain; charset=utf-8", resp.Header.Get("Content-Type"))
	return resp.StatusCode, string(out)
}

func (c *compatBundle) mailboxCount(t *testing.T) int {
	t.Helper()
	var n int
	require.NoError(t, c.mb.SQL.QueryRow(`SELECT count(*) FROM cminmsgs`).Scan(&n))
	return n
}

func TestCompatStoresAndEnqueues(t *testing.T) {
	t.Parallel()
	c := setupCompat(t, CompatConfig{}, nil, nil)
	code, body := c.post(t, "application/xml", strings.NewReader(sampleMsg))
	require.Equal(t, http.StatusOK, code, body)
	id, err := strconv.ParseInt(body, 10, 64)
	require.NoError(t, err, "body is the new CMINMSGS_ID")

	var (
		text, name, styp, typ, status string
		seq                           int64
		received, sent                time.Time
		processed                     *time.Time
	)
	require.NoError(t, c.mb.SQL.QueryRow(`SELECT CMINMSGS_CLOB_MSG, CMINMSGS_DATE_RECEIVED, CMINMSGS_DATE_PROCESSED, CMINMSGS_SUBSYSTEM_NAME,
		CMINMSGS_SUBSYSTEM_SEQUENCE, CMINMSGS_SUBSYSTEM_DATE_SENT, CMINMSGS_SUBSYSTEM_SUBTYPE, CMINMSGS_SUBSYSTEM_TYPE, CMINMSGS_STATUS
		FROM cminmsgs WHERE CMINMSGS_ID = ?`, id).Scan(&text, &received, &processed, &name, &seq, &sent, &styp, &typ, &status))
	require.Equal(t, sampleMsg, text)
	require.Equal(t, time.Date(2026, 12, 2, 16, 0, 0, 0, time.UTC), received, "DATE_RECEIVED is the airport's wall clock")
	require.Nil(t, processed)
	require.Equal(t, []any{"AODB", int64(92643), "ABTM", "FLOP", "VALID"}, []any{name, seq, styp, typ, status})
	require.Equal(t, time.Date(2006, 12, 10, 9, 3, 11, 0, time.UTC), sent)

	got := c.stored(t)
	require.Len(t, got, 1)
	require.Equal(t, sampleMsg, *got[id].Raw)
	require.Equal(t, sha(sampleMsg), got[id].Sum)
	require.Equal(t, time.Date(2026, 12, 2, 16, 0, 0, 0, time.UTC), *got[id].Received)
	require.False(t, got[id].Late)
	require.Equal(t, int64(0), c.cursor(t).W, "the compat entry does not move W (INV-4)")
	require.Equal(t, 1.0, metric(t, c.reg, "msgx_ingest_rows_enqueued_total", "source", "compat"))
	require.Equal(t, 1.0, metric(t, c.reg, "msgx_ingest_compat_requests_total", "code", "200"))

	// The poller reaches it later and conflicts harmlessly.
	c.drain(t, c.ing)
	require.Equal(t, []int64{id}, c.ids(t))
	require.Equal(t, id, c.cursor(t).W)
}

// A poll whose batch holds a row the compat entry enqueued first, between rows nobody enqueued:
// every other row is enqueued, the compat entry's row is left as it was, once.
func TestPollAroundACompatRow(t *testing.T) {
	t.Parallel()
	c := setupCompat(t, CompatConfig{}, nil, nil)
	before := c.insert(t, sampleMsg)
	code, body := c.post(t, "application/xml", strings.NewReader(sampleMsg))
	require.Equal(t, http.StatusOK, code, body)
	compat, err := strconv.ParseInt(body, 10, 64)
	require.NoError(t, err)
	after := c.insert(t, sampleMsg)
	_, err = c.pg.Pool.Exec(context.Background(), `UPDATE proc_state SET received_at = NULL WHERE msg_id = $1`, compat)
	require.NoError(t, err) // marks the compat entry's row, so that a second write would show

	c.drain(t, c.ing)
	require.Equal(t, []int64{before, compat, after}, c.ids(t))
	got := c.stored(t)
	require.Nil(t, got[compat].Received, "the compat entry's row was written again")
	require.NotNil(t, got[before].Received)
	require.NotNil(t, got[after].Received)
	require.Equal(t, after, c.cursor(t).W)
}

func TestCompatSamplesAreStoredByteIdentical(t *testing.T) {
	t.Parallel()
	c := setupCompat(t, CompatConfig{}, nil, nil)
	want := map[int64]string{}
	for path, text := range samples(t) {
		code, body := c.post(t, "text/xml; charset=UTF-8", strings.NewReader(text))
		require.Equal(t, http.StatusOK, code, "%s: %s", path, body)
		id, err := strconv.ParseInt(body, 10, 64)
		require.NoError(t, err)
		want[id] = text
	}
	got := c.stored(t)
	require.Len(t, got, len(want))
	for id, text := range want {
		require.True(t, *got[id].Raw == text, "msg %d differs", id)
	}
}

func TestCompatClientRetryIsANewMailboxRow(t *testing.T) {
	t.Parallel()
	c := setupCompat(t, CompatConfig{}, nil, nil)
	code1, id1 := c.post(t, "text/plain", strings.NewReader(sampleMsg))
	code2, id2 := c.post(t, "text/plain", strings.NewReader(sampleMsg))
	require.Equal(t, []int{200, 200}, []int{code1, code2})
	require.NotEqual(t, id1, id2, "a retry is a new mailbox row; the processor dedups it by identity")
	got := c.stored(t)
	require.Len(t, got, 2)
	for _, s := range got {
		require.Equal(t, sha(sampleMsg), s.Sum)
	}
}

func TestCompatRefusals(t *testing.T) {
	t.Parallel()
	c := setupCompat(t, CompatConfig{MaxBody: 4096}, nil, nil)
	for _, tc := range []struct {
		name, contentType, body string
		code                    int
	}{
		{"json", "application/json", sampleMsg, http.StatusUnsupportedMediaType},
		{"no content type", "", sampleMsg, http.StatusUnsupportedMediaType},
		{"latin-1", "text/xml; charset=iso-8859-1", sampleMsg, http.StatusUnsupportedMediaType},
		{"bad media type", "text/xml; charset", sampleMsg, http.StatusUnsupportedMediaType},
		{"empty", "application/xml", "", http.StatusBadRequest},
		{"blank", "application/xml", " \n\t", http.StatusBadRequest},
		{"unclosed", "application/xml", "<MSG><META></MSG>", http.StatusBadRequest},
		{"not xml", "text/plain", "hello", http.StatusBadRequest},
		{"trailing content", "application/xml", "<MSG/><MSG/>", http.StatusBadRequest},
		{"trailing text", "application/xml", "<MSG/>tail", http.StatusBadRequest},
		{"invalid utf-8", "application/xml", "<MSG>\xff\xfe</MSG>", http.StatusBadRequest},
		{"undefined entity", "application/xml", "<MSG>&bomb;</MSG>", http.StatusBadRequest},
		{"doctype", "application/xml", `<!DOCTYPE MSG [<!ENTITY a "aaaa">]><MSG>&a;</MSG>`, http.StatusBadRequest},
		{"other encoding", "application/xml", `<?xml version="1.0" encoding="GBK"?><MSG/>`, http.StatusBadRequest},
		{"too deep", "application/xml", strings.Repeat("<a>", 100) + strings.Repeat("</a>", 100), http.StatusBadRequest},
		{"too large", "application/xml", "<MSG>" + strings.Repeat("x", 4096) + "</MSG>", http.StatusRequestEntityTooLarge},
	} {
		code, body := c.post(t, tc.contentType, strings.NewReader(tc.body))
		require.Equal(t, tc.code, code, "%s: %s", tc.name, body)
		require.NotEmpty(t, strings.TrimSpace(body), "%s: a plain reason", tc.name)
	}
	require.Zero(t, c.mailboxCount(t), "nothing written to the mailbox")
	require.Empty(t, c.ids(t))
	require.Equal(t, 4.0, metric(t, c.reg, "msgx_ingest_compat_requests_total", "code", "415"))

	// Other methods are not routed to the entry.
	resp, err := c.server.Client().Get(c.server.URL + "/cminmsgs/send")
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
}

// countingReader serves n bytes of an endless XML-ish body and counts what was read.
type countingReader struct {
	n, read atomic.Int64
}

func (r *countingReader) Read(p []byte) (int, error) {
	left := r.n.Load() - r.read.Load()
	if left <= 0 {
		return 0, io.EOF
	}
	k := min(int64(len(p)), left)
	for i := range k {
		p[i] = 'x'
	}
	r.read.Add(k)
	return int(k), nil
}

func TestCompat64MiBBodyIsRefusedWithoutReadingIt(t *testing.T) {
	t.Parallel()
	const size = 64 << 20
	c := setupCompat(t, CompatConfig{}, nil, nil)
	h := NewCompat(c.cfg, c.box, c.pg.Pool, c.clock, c.metrics, zerolog.Nop())

	// Declared length: refused before reading one byte.
	body := &countingReader{}
	body.n.Store(size)
	req := httptest.NewRequest(http.MethodPost, "/cminmsgs/send", body)
	req.Header.Set("Content-Type", "application/xml")
	req.ContentLength = size
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	require.Equal(t, http.StatusRequestEntityTooLarge, rec.Code)
	require.Zero(t, body.read.Load())
	require.Equal(t, "close", rec.Header().Get("Connection"))

	// Unknown length (chunked): reading stops just past the limit.
	body = &countingReader{}
	body.n.Store(size)
	req = httptest.NewRequest(http.MethodPost, "/cminmsgs/send", body)
	req.Header.Set("Content-Type", "application/xml")
	req.ContentLength = -1
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	require.Equal(t, http.StatusRequestEntityTooLarge, rec.Code)
	require.Less(t, body.read.Load(), int64(c.cfg.MaxBody+64<<10))

	// Over a real connection the client is answered long before it could send 64 MiB.
	for _, chunked := range []bool{false, true} {
		body = &countingReader{}
		body.n.Store(size)
		req, err := http.NewRequest(http.MethodPost, c.server.URL+"/cminmsgs/send", body)
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/xml")
		if !chunked {
			req.ContentLength = size
		}
		resp, err := c.server.Client().Do(req)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
		require.Less(t, body.read.Load(), int64(size/2), "chunked=%v: the server must not read the whole body", chunked)
	}
	require.Zero(t, c.mailboxCount(t))
}

func TestCompatShadowModeRefusesWrites(t *testing.T) {
	t.Parallel()
	c := setupCompat(t, CompatConfig{Shadow: true}, nil, nil)
	code, body := c.post(t, "application/xml", strings.NewReader(sampleMsg))
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.Contains(t, body, "shadow")
	require.Zero(t, c.mailboxCount(t), "shadow mode writes nothing to MySQL")
	require.Empty(t, c.ids(t))
}

func TestCompatMailboxDown(t *testing.T) {
	t.Parallel()
	down, err := mailbox.Open("root@tcp(127.0.0.1:1)/nowhere?timeout=2s")
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, down.Close()) })
	c := setupCompat(t, CompatConfig{DBTimeout: 5 * time.Second}, down, nil)
	code, body := c.post(t, "application/xml", strings.NewReader(sampleMsg))
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.Contains(t, body, "mailbox unavailable")
	require.Empty(t, c.ids(t), "nothing written")
	require.Zero(t, c.mailboxCount(t))
}

func TestCompatEnqueueFailureStillAnswers200(t *testing.T) {
	t.Parallel()
	b := setup(t, testConfig) // only for a schema to point a doomed pool at
	broken, err := pgxpool.New(context.Background(), b.pg.URL)
	require.NoError(t, err)
	broken.Close() // every enqueue on it fails
	c := setupCompat(t, CompatConfig{}, nil, broken)

	code, body := c.post(t, "application/xml", strings.NewReader(sampleMsg))
	require.Equal(t, http.StatusOK, code, body)
	id, err := strconv.ParseInt(body, 10, 64)
	require.NoError(t, err)
	require.Empty(t, c.ids(t), "the enqueue failed")
	require.Equal(t, 1, c.mailboxCount(t))

	// The poller catches it up with the same verbatim copy.
	c.drain(t, c.ing)
	got := c.stored(t)
	require.Equal(t, sampleMsg, *got[id].Raw)
}

func TestCompatRetryAfter503Succeeds(t *testing.T) {
	t.Parallel()
	flaky := &flakyInserter{}
	c := setupCompat(t, CompatConfig{}, flaky, nil)
	flaky.real = c.box
	code, _ := c.post(t, "application/xml", bytes.NewReader([]byte(sampleMsg)))
	require.Equal(t, http.StatusServiceUnavailable, code)
	code, body := c.post(t, "application/xml", bytes.NewReader([]byte(sampleMsg)))
	require.Equal(t, http.StatusOK, code, body)
	require.Equal(t, 1, c.mailboxCount(t))
}

// flakyInserter fails its first insert (a hand-written fake: a mailbox that fails exactly once
// cannot be arranged with the real server).
type flakyInserter struct {
	calls atomic.Int32
	real  Inserter
}

func (f *flakyInserter) Insert(ctx context.Context, msg mailbox.NewMessage) (int64, error) {
	if f.calls.Add(1) == 1 {
		return 0, io.ErrUnexpectedEOF
	}
	return f.real.Insert(ctx, msg)
}
