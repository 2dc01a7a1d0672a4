package readapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/msgx/msgx/docs"
	"github.com/msgx/msgx/pkg/clock"
	"github.com/msgx/msgx/pkg/dev/sisbuild"
	"github.com/msgx/msgx/pkg/dev/testdb"
	"github.com/msgx/msgx/pkg/flight"
	"github.com/msgx/msgx/pkg/flightstore"
	"github.com/msgx/msgx/pkg/leader"
	"github.com/msgx/msgx/pkg/processor"
	"github.com/msgx/msgx/pkg/processor/flights"
	"github.com/msgx/msgx/pkg/readapi"
	"github.com/msgx/msgx/pkg/sis"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var t0 = time.Date(2026, 12, 2, 8, 0, 0, 0, time.UTC)

// The operation days of the SODTs the tests use (airport wall clock).
const (
	day1 = "2021-01-23" // SODT 23JAN21…
	day2 = "2021-01-24" // SODT 24JAN21…
)

// bundle is one test's world: a fresh schema, the real pump with the flight processor (flights
// are made the way production makes them), and the read API on an httptest server.
type bundle struct {
	db     *testdb.DB
	pump   *processor.Engine
	lease  leader.Lease
	next   int64
	base   string
	client *http.Client
}

// airport is the airport's zone, the processor's and the read API's.
var airport = func() *time.Location {
	loc, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		panic(err)
	}
	return loc
}()

func setup(t *testing.T) *bundle {
	t.Helper()
	db := testdb.New(t)
	_, err := db.Pool.Exec(context.Background(), `INSERT INTO leader_lease VALUES ('processor', 1, 'test', 0, $1, $1)`, t0)
	require.NoError(t, err)
	proc := flights.Handler{}
	p := processor.New(processor.Config{
		Batch: 10, MaxAttempts: 5, BackoffBase: time.Second, BackoffMax: time.Minute,
		HeadDeadline: 10 * time.Minute, IdlePoll: 10 * time.Millisecond, Location: airport,
	}, db.Pool, map[sis.Kind]processor.Handler{
		sis.KindFlightUpdate: proc, sis.KindFlightDelete: proc,
		sis.KindScheduleSnapshot: proc, sis.KindScheduleAdd: proc, sis.KindScheduleDelete: proc,
	}, nil, clock.NewFake(t0), nil, zerolog.Nop())

	// Chunk 2: a day listing of a few flights already takes several Load calls.
	srv := serve(t, readapi.New(readapi.Config{DBTimeout: 10 * time.Second, Chunk: 2, Location: airport}, db.Pool, zerolog.Nop()))
	return &bundle{db: db, pump: p, lease: leader.Lease{Role: "processor", Epoch: 1}, base: srv.URL, client: srv.Client()}
}

// serve mounts h the way cmd/ingest does (one ServeMux, every pattern).
func serve(t *testing.T, h http.Handler) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	for _, p := range readapi.Patterns {
		mux.Handle(p, h)
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// run enqueues raws as ingest does, moves W, and drains the head; every message must succeed.
func (b *bundle) run(t *testing.T, raws ...string) {
	t.Helper()
	ctx := context.Background()
	ids := make([]int64, len(raws))
	for i := range raws {
		b.next++
		ids[i] = b.next
	}
	_, err := b.db.Pool.Exec(ctx, `INSERT INTO proc_state (msg_id, raw, raw_sha256, enqueued_at)
		SELECT id, raw, sha256(convert_to(raw, 'UTF8')), $3 FROM unnest($1::bigint[], $2::text[]) AS u(id, raw)`, ids, raws, t0)
	require.NoError(t, err)
	_, err = b.db.Pool.Exec(ctx, `UPDATE inbox_cursor SET watermark = GREATEST(watermark, $1)`, b.next)
	require.NoError(t, err)
	for {
		res, err := b.pump.Step(ctx, b.lease)
		require.NoError(t, err)
		require.False(t, res.Failed)
		if res.Idle {
			break
		}
	}
	var bad int
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT count(*) FROM proc_state WHERE msg_id = ANY($1) AND status <> 'SUCCEEDED'`, ids).Scan(&bad))
	require.Zero(t, bad, "every message succeeds")
}

// published returns the KAFKA:schd (msgx.flight.state) payload of the flight's latest event
// and that event's state_version; the payload is "" for a TOMBSTONE.
func (b *bundle) published(t *testing.T, flid int64) (string, int64) {
	t.Helper()
	var payload *string
	var version int64
	require.NoError(t, b.db.Pool.QueryRow(context.Background(), `SELECT COALESCE(body, payload::text), state_version FROM `+testdb.AllEvents+`
		WHERE target = 'KAFKA:schd' AND partition_key = $1 ORDER BY event_id DESC LIMIT 1`, fmt.Sprint(flid)).Scan(&payload, &version))
	if payload == nil {
		return "", version
	}
	return *payload, version
}

// stored is the flight's state as package flightstore loads it, in the published JSON form.
func (b *bundle) stored(t *testing.T, flid int64) string {
	t.Helper()
	var out string
	require.NoError(t, pgx.BeginFunc(context.Background(), b.db.Pool, func(tx pgx.Tx) error {
		l, err := flightstore.Load(context.Background(), tx, []int64{flid})
		if s := l.States[flid]; s != nil {
			out = string(s.AppendJSONIn(nil, airport))
		}
		return err
	}))
	require.NotEmpty(t, out, "flight %d stored", flid)
	return out
}

type response struct {
	code   int
	header http.Header
	body   string
}

func (b *bundle) get(t *testing.T, path string, header ...string) response {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, b.base+path, nil)
	require.NoError(t, err)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Add(header[i], header[i+1])
	}
	resp, err := b.client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return response{resp.StatusCode, resp.Header, string(body)}
}

var seq sisbuild.Seq

func flop(styp string, flid int64, body string) string {
	return sisbuild.FLOP(seq.Next(), styp, flid, body)
}

func schd(styp string, records ...string) string { return sisbuild.SCHD(seq.Next(), styp, records...) }

func fltr(flid int64, flno, sodt, extra string) string { return sisbuild.FLTR(flid, flno, sodt, extra) }

// child is a code-share child of master.
func child(flid int64, flno, sodt string, master int64) string {
	return fltr(flid, flno, sodt, fmt.Sprintf("<CSOP>CA</CSOP><CSFT>CA100</CSFT><MAID>%d</MAID>", master))
}

const stands = `<PSDT PSNO="1"><PSST>504</PSST><STST>23JAN210237</STST></PSDT><PSDT PSNO="2"><PSST>503</PSST></PSDT>`

// TestFlight: the body is exactly the state msgx publishes on msgx.flight.state for the
// flight's latest version (MAFL and details included), ETag its state_version.
func TestFlight(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.run(t, schd("DNLD", fltr(100, "CA100", "23JAN210800", stands), child(101, "MU101", "23JAN210800", 100), child(102, "ZH102", "23JAN210800", 100)))
	b.run(t, flop("STND", 100, "<STND>215</STND>"))

	for _, flid := range []int64{100, 101, 102} {
		r := b.get(t, fmt.Sprintf("/flights/%d", flid))
		require.Equal(t, http.StatusOK, r.code, r.body)
		require.Equal(t, "application/json", r.header.Get("Content-Type"))
		payload, version := b.published(t, flid)
		require.JSONEq(t, payload, r.body, "flight %d: the published state", flid)
		require.Equal(t, b.stored(t, flid), r.body, "flight %d: byte for byte what the processor publishes", flid)
		require.Equal(t, fmt.Sprintf(`"%d"`, version), r.header.Get("ETag"))
	}

	var m struct {
		Version int64          `json:"state_version"`
		Stnd    string         `json:"stnd"`
		MAFL    []flight.Child `json:"mafl"`
		Stands  []any          `json:"psdt"`
	}
	require.NoError(t, json.Unmarshal([]byte(b.get(t, "/flights/100").body), &m))
	require.Equal(t, int64(2), m.Version)
	require.Equal(t, "215", m.Stnd)
	require.Equal(t, []flight.Child{{FLID: 101, FLNO: "MU101"}, {FLID: 102, FLNO: "ZH102"}}, m.MAFL)
	require.Equal(t, `"2"`, b.get(t, "/flights/100").header.Get("ETag"))

	// The largest FLID is valid and simply unknown.
	r := b.get(t, "/flights/9223372036854775807")
	require.Equal(t, http.StatusNotFound, r.code)
}

func TestFlightUnknown(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := b.get(t, "/flights/999")
	require.Equal(t, http.StatusNotFound, r.code)
	require.Equal(t, "text/plain; charset=utf-8", r.header.Get("Content-Type"))
	require.Equal(t, "no flight 999\n", r.body)
	require.Empty(t, r.header.Get("ETag"))
}

// TestFlightDeleted: a DELETED flight is served with its state until the history sweep purges
// it; then it is unknown.
func TestFlightDeleted(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.run(t, schd("DNLD", fltr(100, "CA100", "23JAN210800", stands), child(101, "MU101", "23JAN210800", 100)))
	b.run(t, flop("FDEL", 100, "<FDEL/>"))

	r := b.get(t, "/flights/100")
	require.Equal(t, http.StatusOK, r.code, r.body)
	require.Equal(t, `"2"`, r.header.Get("ETag"))
	require.Equal(t, b.stored(t, 100), r.body)
	var s map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.body), &s))
	require.Equal(t, "DELETED", s["state"])
	require.Equal(t, 2.0, s["state_version"])
	require.Equal(t, []any{}, s["mafl"], "a DELETED master has no projection")
	require.Len(t, s["psdt"], 2, "details are kept until the purge")
	payload, version := b.published(t, 100)
	require.Empty(t, payload, "msgx.flight.state got a tombstone")
	require.Equal(t, int64(2), version)

	// The history sweep's purge deletes the row (details cascade): unknown from then on.
	_, err := b.db.Pool.Exec(context.Background(), `DELETE FROM flight WHERE flid = 100`)
	require.NoError(t, err)
	require.Equal(t, http.StatusNotFound, b.get(t, "/flights/100").code)
	require.Equal(t, http.StatusOK, b.get(t, "/flights/101").code)
}

func TestFlightConditional(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.run(t, schd("DNLD", fltr(100, "CA100", "23JAN210800", "")))
	r := b.get(t, "/flights/100")
	require.Equal(t, http.StatusOK, r.code)
	require.Equal(t, `"1"`, r.header.Get("ETag"))
	require.Equal(t, "no-cache", r.header.Get("Cache-Control"))

	for _, inm := range []string{`"1"`, `W/"1"`, `"7", "1"`, `*`} {
		r := b.get(t, "/flights/100", "If-None-Match", inm)
		require.Equal(t, http.StatusNotModified, r.code, inm)
		require.Empty(t, r.body, inm)
		require.Equal(t, `"1"`, r.header.Get("ETag"), inm)
	}
	for _, inm := range []string{`"2"`, `1`, `"10"`, ``} {
		r := b.get(t, "/flights/100", "If-None-Match", inm)
		require.Equal(t, http.StatusOK, r.code, inm)
		require.NotEmpty(t, r.body, inm)
	}
	// Unknown flight: no representation, so even * does not match.
	require.Equal(t, http.StatusNotFound, b.get(t, "/flights/5", "If-None-Match", "*").code)

	// A change makes the old tag stale.
	b.run(t, flop("STND", 100, "<STND>215</STND>"))
	r = b.get(t, "/flights/100", "If-None-Match", `"1"`)
	require.Equal(t, http.StatusOK, r.code)
	require.Equal(t, `"2"`, r.header.Get("ETag"))
	payload, _ := b.published(t, 100)
	require.JSONEq(t, payload, r.body)
	require.Equal(t, http.StatusNotModified, b.get(t, "/flights/100", "If-None-Match", `"2"`).code)
}

func TestBadParameters(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, path := range []string{
		"/flights/abc", "/flights/-1", "/flights/0", "/flights/%2B5", "/flights/1.5", "/flights/1e3",
		"/flights/%201", "/flights/9223372036854775808", "/flights/99999999999999999999",
		"/all/flights", "/all/flights?day=", "/all/flights?date=2021-01-23", "/all/flights?day=2021-13-01",
		"/all/flights?day=2021-02-29", "/all/flights?day=20210123", "/all/flights?day=2021-1-23",
		"/all/flights?day=0000-01-01", "/all/flights?day=2021-01-23T00:00:00Z", "/all/flights?day=%2B2021-01-23",
		"/all/flights?day=2021-01-23&day=2021-01-24",
	} {
		r := b.get(t, path)
		require.Equal(t, http.StatusBadRequest, r.code, path)
		require.Equal(t, "text/plain; charset=utf-8", r.header.Get("Content-Type"), path)
		require.True(t, strings.HasSuffix(r.body, "\n") && strings.Count(r.body, "\n") == 1, "%s: one-line reason %q", path, r.body)
	}
	resp, err := b.client.Post(b.base+"/flights/1", "application/json", nil)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
}

// TestDay: every flight of the operation day, ACTIVE and DELETED, in FLID order, each exactly
// as GET /flights/{flid} serves it; other days' flights never.
func TestDay(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.run(t,
		schd("DNLD",
			fltr(300, "CA300", "23JAN210800", stands), child(102, "ZH102", "23JAN212300", 300), child(101, "MU101", "23JAN210900", 300),
			fltr(205, "CA205", "23JAN211000", ""), fltr(200, "CA200", "24JAN210100", ""), fltr(400, "CA400", "24JAN212200", "")),
	)
	b.run(t, flop("FDEL", 205, "<FDEL/>"))

	list := func(day string) []json.RawMessage {
		t.Helper()
		r := b.get(t, "/all/flights?day="+day)
		require.Equal(t, http.StatusOK, r.code, r.body)
		require.Equal(t, "application/json", r.header.Get("Content-Type"))
		var out []json.RawMessage
		require.NoError(t, json.Unmarshal([]byte(r.body), &out))
		return out
	}
	check := func(day string, want ...int64) {
		t.Helper()
		got := list(day)
		require.Len(t, got, len(want), day)
		for i, flid := range want {
			var s struct {
				FLID int64  `json:"flid"`
				Day  string `json:"operation_day"`
			}
			require.NoError(t, json.Unmarshal(got[i], &s))
			require.Equal(t, flid, s.FLID, day)
			require.Equal(t, day, s.Day)
			require.Equal(t, b.get(t, fmt.Sprintf("/flights/%d", flid)).body, string(got[i]), "flight %d", flid)
		}
	}
	check(day1, 101, 102, 205, 300) // three Load chunks of 2
	check(day2, 200, 400)
	r := b.get(t, "/all/flights?day=2021-01-25")
	require.Equal(t, http.StatusOK, r.code)
	require.Equal(t, "[]", r.body)

	var deleted map[string]any
	require.NoError(t, json.Unmarshal(list(day1)[2], &deleted))
	require.Equal(t, "DELETED", deleted["state"])
	var master map[string]any
	require.NoError(t, json.Unmarshal(list(day1)[3], &master))
	require.Len(t, master["mafl"], 2)
	payload, _ := b.published(t, 300)
	require.JSONEq(t, payload, string(list(day1)[3]))
}

// TestDatabaseDown: a database failure is a 503 with a retry hint, never a partial answer.
func TestDatabaseDown(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	pool, err := pgxpool.New(context.Background(), db.URL)
	require.NoError(t, err)
	pool.Close()
	srv := serve(t, readapi.New(readapi.Config{DBTimeout: 5 * time.Second}, pool, zerolog.Nop()))
	for _, path := range []string{"/flights/1", "/all/flights?day=2021-01-23"} {
		resp, err := srv.Client().Get(srv.URL + path)
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, path)
		require.Equal(t, "1", resp.Header.Get("Retry-After"))
		require.Contains(t, string(body), "retry later")
	}
}

// failingDB fails every statement once fail is set (the test sets it when the first bytes of an
// answer have been written).
type failingDB struct {
	pool *pgxpool.Pool
	fail *atomic.Bool
}

func (d failingDB) BeginTx(ctx context.Context, opts pgx.TxOptions) (pgx.Tx, error) {
	tx, err := d.pool.BeginTx(ctx, opts)
	return failingTx{Tx: tx, fail: d.fail}, err
}

type failingTx struct {
	pgx.Tx
	fail *atomic.Bool
}

func (t failingTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if t.fail.Load() {
		return nil, errors.New("database gone")
	}
	return t.Tx.Query(ctx, sql, args...)
}

func (t failingTx) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	if t.fail.Load() {
		_ = t.Tx.Conn().Close(ctx) // the batch then fails like a lost connection
	}
	return t.Tx.SendBatch(ctx, b)
}

// writeSpy sets fail at the handler's first Write.
type writeSpy struct {
	http.ResponseWriter
	fail *atomic.Bool
}

func (w writeSpy) Write(p []byte) (int, error) { w.fail.Store(true); return w.ResponseWriter.Write(p) }
func (w writeSpy) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// TestDayStreamed: a day listing is sent chunk by chunk (no Content-Length: nothing is built
// whole), and a failure after the first chunk cuts the connection rather than ending the array:
// the client sees an error, never a shorter valid day.
func TestDayStreamed(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.run(t, schd("DNLD", fltr(300, "CA300", "23JAN210800", ""), fltr(101, "MU101", "23JAN210900", ""),
		fltr(205, "CA205", "23JAN211000", ""), fltr(206, "CA206", "23JAN211100", ""), fltr(207, "CA207", "23JAN211200", "")))

	resp, err := b.client.Get(b.base + "/all/flights?day=" + day1)
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, int64(-1), resp.ContentLength, "streamed: no Content-Length")
	require.Equal(t, []string{"chunked"}, resp.TransferEncoding)
	var all []json.RawMessage
	require.NoError(t, json.Unmarshal(body, &all))
	require.Len(t, all, 5)

	var fail atomic.Bool
	h := readapi.New(readapi.Config{DBTimeout: 10 * time.Second, Chunk: 2, Location: airport}, failingDB{pool: b.db.Pool, fail: &fail}, zerolog.Nop())
	mux := http.NewServeMux()
	mux.Handle(readapi.DayPattern, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(writeSpy{ResponseWriter: w, fail: &fail}, r)
	}))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	resp, err = srv.Client().Get(srv.URL + "/all/flights?day=" + day1)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "the first chunk went out")
	body, err = io.ReadAll(resp.Body)
	require.ErrorIs(t, err, io.ErrUnexpectedEOF, "the connection is cut, not the array closed")
	require.NoError(t, resp.Body.Close())
	require.True(t, strings.HasPrefix(string(body), "["))
	require.Error(t, json.Unmarshal(body, &all), "what arrived is not a valid array: %s", body)
}

// TestContractDocuments: the read API serves the committed contract documents (JSON Schemas,
// AsyncAPI, examples) and nothing else under /contract/.
func TestContractDocuments(t *testing.T) {
	t.Parallel()
	srv := serve(t, readapi.New(readapi.Config{}, nil, zerolog.Nop()))
	get := func(path string) (int, string) {
		resp, err := srv.Client().Get(srv.URL + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}
	for _, name := range []string{"asyncapi.json", "msgx.flight.state.value.schema.json", "msgx.record.headers.schema.json", "examples/msgx.flight.state.value.json"} {
		want, err := fs.ReadFile(docs.Contract, "contract/"+name)
		require.NoError(t, err)
		code, body := get("/contract/" + name)
		require.Equal(t, http.StatusOK, code, name)
		require.Equal(t, string(want), body, name)
	}
	for _, bad := range []string{"/contract/nothing.json", "/contract/../embed.go", "/contract/examples", "/contract/"} {
		code, _ := get(bad)
		require.Equal(t, http.StatusNotFound, code, bad)
	}
}
