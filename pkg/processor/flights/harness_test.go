package flights_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/msgx/msgx/pkg/clock"
	"github.com/msgx/msgx/pkg/dev/sisbuild"
	"github.com/msgx/msgx/pkg/dev/testdb"
	"github.com/msgx/msgx/pkg/dev/tlsenv"
	"github.com/msgx/msgx/pkg/flight"
	"github.com/msgx/msgx/pkg/flightstore"
	"github.com/msgx/msgx/pkg/leader"
	"github.com/msgx/msgx/pkg/processor"
	"github.com/msgx/msgx/pkg/processor/plugins"
	"github.com/msgx/msgx/pkg/roles"
	"github.com/msgx/msgx/pkg/sis"
)

// TestMain checks for leaked goroutines, then stops the private TLS servers (pkg/dev/tlsenv)
// the corpus test started.
func TestMain(m *testing.M) { goleak.VerifyTestMain(tlsRun{m}) }

type tlsRun struct{ m *testing.M }

func (r tlsRun) Run() int { return tlsenv.Run(r.m) }

var t0 = time.Date(2026, 12, 2, 8, 0, 0, 0, time.UTC)

var airport = func() *time.Location {
	loc, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		panic(err)
	}
	return loc
}()

// processors is the map cmd/processor registers (without the request rules), with cache as the
// flight cache.
func processors(cache *flightstore.Cache) map[sis.Kind]processor.Handler {
	return plugins.Handlers(nil, cache)
}

// env is one test's pipeline: a fresh schema, the real pump with the real processors.
type env struct {
	db    *testdb.DB
	queue *pgxpool.Pool // enqueues as ingest does (db.Pool, or the ingest role's pool)
	clock *clock.Fake
	lease leader.Lease
	pump  *processor.Engine
	cache *flightstore.Cache // the flight cache, as cmd/processor runs it
	next  int64
}

func setup(t testing.TB, batch int) *env {
	t.Helper()
	db := testdb.New(t)
	return setupOn(t, db, db.Pool, db.Pool, batch, airport)
}

// setupProduction is setup the way production connects: the private TLS cluster (sslmode
// verify-full), the pump as the processor role and the enqueue as the ingest role (pkg/roles).
func setupProduction(t testing.TB, batch int) *env {
	t.Helper()
	db := tlsenv.PG(t).NewDB(t)
	r := db.Roles(t)
	return setupOn(t, db, r.Pool(t, roles.Processor), r.Pool(t, roles.Ingest), batch, airport)
}

// setupOn is setup on db for an airport in zone loc.
func setupOn(t testing.TB, db *testdb.DB, pumpPool, queue *pgxpool.Pool, batch int, loc *time.Location) *env {
	t.Helper()
	_, err := db.Pool.Exec(context.Background(), `INSERT INTO leader_lease VALUES ('processor', 1, 'test', 0, $1, $1)`, t0)
	require.NoError(t, err)
	e := &env{db: db, queue: queue, clock: clock.NewFake(t0), lease: leader.Lease{Role: "processor", Epoch: 1},
		cache: flightstore.NewCache(100_000)}
	e.pump = processor.New(processor.Config{
		Batch: batch, MaxAttempts: 5, BackoffBase: time.Second, BackoffMax: time.Minute,
		HeadDeadline: 10 * time.Minute, IdlePoll: 10 * time.Millisecond,
		IgnoreTypes: []string{"LDM", "REGN", "RSTA", "EROR"}, Location: loc,
	}, pumpPool, processors(e.cache), nil, e.clock, nil, zerolog.Nop())
	return e
}

// enqueue inserts proc_state rows as ingest does (verbatim raw copy) and moves W; it returns
// the msg_ids in order.
func (e *env) enqueue(t testing.TB, raws ...string) []int64 {
	t.Helper()
	ctx := context.Background()
	ids := make([]int64, len(raws))
	for i := range raws {
		e.next++
		ids[i] = e.next
	}
	_, err := e.queue.Exec(ctx, `INSERT INTO proc_state (msg_id, raw, raw_sha256, enqueued_at)
		SELECT id, raw, sha256(convert_to(raw, 'UTF8')), $3 FROM unnest($1::bigint[], $2::text[]) AS u(id, raw)`, ids, raws, e.clock.Now())
	require.NoError(t, err)
	_, err = e.queue.Exec(ctx, `UPDATE inbox_cursor SET watermark = GREATEST(watermark, $1)`, e.next)
	require.NoError(t, err)
	return ids
}

// drain steps until nothing is left or the head is FAILED, then (in tests, not benchmarks)
// checks that every flight the cache would hand the next batch is the stored one.
func (e *env) drain(t testing.TB) {
	t.Helper()
	for {
		res, err := e.pump.Step(context.Background(), e.lease)
		require.NoError(t, err)
		if res.Idle || res.Failed || !res.WaitUntil.IsZero() {
			break
		}
	}
	if _, bench := t.(*testing.B); bench {
		return // measured: the check is the tests'
	}
	require.NoError(t, pgx.BeginFunc(context.Background(), e.db.Pool, func(tx pgx.Tx) error {
		return e.cache.Verify(context.Background(), tx)
	}), "the flight cache differs from the database")
}

// run enqueues raws, drains, and returns their ids.
func (e *env) run(t testing.TB, raws ...string) []int64 {
	t.Helper()
	ids := e.enqueue(t, raws...)
	e.drain(t)
	return ids
}

type outcome struct{ Status, Class, Reason string }

func (e *env) outcome(t testing.TB, id int64) outcome {
	t.Helper()
	var o outcome
	var class, reason *string
	require.NoError(t, e.db.Pool.QueryRow(context.Background(),
		`SELECT status, error_class, reason FROM proc_state WHERE msg_id = $1`, id).Scan(&o.Status, &class, &reason))
	if class != nil {
		o.Class = *class
	}
	if reason != nil {
		o.Reason = *reason
	}
	return o
}

// state loads one flight through the store (nil when not stored).
func (e *env) state(t testing.TB, flid int64) *flight.State {
	t.Helper()
	var s *flight.State
	require.NoError(t, pgx.BeginFunc(context.Background(), e.db.Pool, func(tx pgx.Tx) error {
		l, err := flightstore.Load(context.Background(), tx, []int64{flid})
		s = l.States[flid]
		return err
	}))
	return s
}

// stateJSON is the state as a generic JSON object, its wall-clock times without instants.
func stateJSON(t testing.TB, s *flight.State) map[string]any {
	t.Helper()
	return jsonObject(t, s.AppendJSON(nil))
}

// publishedJSON is the state as msgx publishes it (instants in the airport's zone), as a
// generic JSON object.
func publishedJSON(t testing.TB, s *flight.State) map[string]any {
	t.Helper()
	return jsonObject(t, s.AppendJSONIn(nil, airport))
}

func jsonObject(t testing.TB, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	return m
}

type event struct {
	Target, Key, Type string
	Version, MsgID    int64
	Payload           map[string]any
}

// events returns the outbox rows of a flight in event order.
func (e *env) events(t testing.TB, flid int64) []event {
	t.Helper()
	rows, err := e.db.Pool.Query(context.Background(), `SELECT target, partition_key, event_type, state_version, msg_id, COALESCE(body, payload::text)
		FROM `+testdb.AllEvents+` WHERE partition_key = $1 ORDER BY event_id`, fmt.Sprint(flid))
	require.NoError(t, err)
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (event, error) {
		var ev event
		var payload []byte
		err := r.Scan(&ev.Target, &ev.Key, &ev.Type, &ev.Version, &ev.MsgID, &payload)
		if err == nil && payload != nil {
			err = json.Unmarshal(payload, &ev.Payload)
		}
		return ev, err
	})
	require.NoError(t, err)
	return out
}

func (e *env) countEvents(t testing.TB) int {
	t.Helper()
	var n int
	require.NoError(t, e.db.Pool.QueryRow(context.Background(), `SELECT count(*) FROM `+testdb.AllEvents).Scan(&n))
	return n
}

// seq numbers every message the tests build (sisbuild: the shared builders).
var seq sisbuild.Seq

func header(typ, styp string) string { return sisbuild.Header(seq.Next(), sisbuild.DTTM, typ, styp) }

// flop builds a FLOP message whose payload is body.
func flop(styp string, flid int64, body string) string {
	return sisbuild.FLOP(seq.Next(), styp, flid, body)
}

// schd builds a SCHD message with the records (FLTR bodies) and a matching RECS.
func schd(styp string, records ...string) string { return sisbuild.SCHD(seq.Next(), styp, records...) }

// fltr is a minimal valid schedule record plus extra elements.
func fltr(flid int64, flno, sodt, extra string) string { return sisbuild.FLTR(flid, flno, sodt, extra) }
