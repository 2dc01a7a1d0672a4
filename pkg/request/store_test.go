package request_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/clock"
	"github.com/msgx/msgx/pkg/dev/mailboxtest"
	"github.com/msgx/msgx/pkg/dev/testdb"
	"github.com/msgx/msgx/pkg/envconf"
	"github.com/msgx/msgx/pkg/mailbox"
	"github.com/msgx/msgx/pkg/request"
	"github.com/msgx/msgx/pkg/sis"
)

var ctx = context.Background()

// t0 is 08:00 airport time (Asia/Shanghai) on 2 December 2026.
var shanghai = func() *time.Location {
	l, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		panic(err)
	}
	return l
}()

var t0 = time.Date(2026, 12, 2, 8, 0, 0, 0, shanghai)

type bundle struct {
	pg      *testdb.DB
	mb      *mailboxtest.DB
	box     *mailbox.Mailbox
	clock   *clock.Fake
	store   *request.Store
	sender  *request.Sender
	sweeper *request.Sweeper
	metrics *request.Metrics
}

func setup(t *testing.T) *bundle {
	t.Helper()
	b := &bundle{pg: testdb.New(t), mb: mailboxtest.New(t), clock: clock.NewFake(t0), metrics: request.NewMetrics(nil)}
	var err error
	b.box, err = mailbox.Open(b.mb.DSN)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b.box.Close()) })
	cfg := request.Config{}
	envconf.Defaults(&cfg) // the binaries' defaults, then what the tests rely on
	cfg.SweepInterval, cfg.RoutingID, cfg.Timeout, cfg.Location = time.Second, "AODBREQ", 30*time.Minute, shanghai
	b.store, err = request.NewStore(b.pg.Pool, cfg)
	require.NoError(t, err)
	b.sender, err = request.NewSender(b.store, b.box, b.clock, false)
	require.NoError(t, err)
	b.sweeper = request.NewSweeper(b.store, b.sender, b.box, b.clock, b.metrics, zerolog.Nop())
	return b
}

func (b *bundle) outRows(t *testing.T) []outRow {
	t.Helper()
	rows, err := b.mb.SQL.QueryContext(ctx, `SELECT COUTMSGS_ID, ROUTINGID, COUTMSGS_CLOB_MSG FROM coutmsgs ORDER BY COUTMSGS_ID`)
	require.NoError(t, err)
	defer rows.Close()
	var out []outRow
	for rows.Next() {
		var r outRow
		require.NoError(t, rows.Scan(&r.id, &r.routing, &r.text))
		out = append(out, r)
	}
	require.NoError(t, rows.Err())
	return out
}

type outRow struct {
	id            int64
	routing, text string
}

func days(from, to int) request.Spec {
	return request.Spec{Kind: request.Schedule, Origin: request.Operator, Actor: "test",
		From: time.Date(2026, 12, from, 0, 0, 0, 0, time.UTC), To: time.Date(2026, 12, to, 0, 0, 0, 0, time.UTC)}
}

// complete closes id DONE the way the RESP guard does: in a transaction that locked it.
func (b *bundle) complete(t *testing.T, id, msgID int64) {
	t.Helper()
	require.NoError(t, pgx.BeginFunc(ctx, b.pg.Pool, func(tx pgx.Tx) error {
		cands, err := b.store.CandidatesTx(ctx, tx, request.Schedule, b.clock.Now())
		require.NoError(t, err)
		for _, c := range cands {
			if c.ID == id {
				return b.store.CompleteTx(ctx, tx, request.Matched{Request: c}, msgID, b.clock.Now(), request.MatchFallback)
			}
		}
		return fmt.Errorf("request %d awaits no answer", id)
	}))
}

func TestLifecycleRegisterSendDone(t *testing.T) {
	t.Parallel()
	b := setup(t)
	reg, err := b.store.Register(ctx, days(2, 3), b.clock.Now())
	require.NoError(t, err)
	r := reg.Request
	require.Equal(t, request.Registered, r.Status)
	require.Equal(t, "2026-12-02..2026-12-03", r.Scope)
	require.Equal(t, 1, r.SEQN)
	require.Empty(t, b.outRows(t), "registering sends nothing")

	b.clock.Advance(time.Second)
	out, err := b.sender.Send(ctx, r.ID)
	require.NoError(t, err)
	require.False(t, out.Found)
	rows := b.outRows(t)
	require.Len(t, rows, 1)
	require.Equal(t, "AODBREQ", rows[0].routing, "ROUTINGID from configuration")
	require.Equal(t, r.XML, rows[0].text)
	m, err := sis.Decode([]byte(rows[0].text), sis.Options{Location: shanghai})
	require.NoError(t, err)
	require.Equal(t, "MSGX", m.Meta.SNDR)
	require.Equal(t, "000001", m.Meta.SEQN)
	require.Equal(t, "RQFD", m.Meta.TYPE)
	require.True(t, m.Meta.DTTM.Equal(t0), "DTTM is the registration time, airport wall clock")
	require.Contains(t, rows[0].text, "<STDB>02DEC260000</STDB>")
	require.Contains(t, rows[0].text, "<STDE>03DEC262359</STDE>")

	got, err := b.store.Get(ctx, r.ID)
	require.NoError(t, err)
	require.Equal(t, request.Sent, got.Status)
	require.Equal(t, rows[0].id, got.OutMsgID)
	require.True(t, got.SentAt.Equal(t0.Add(time.Second)))

	// The transport takes the row: WAITING.
	_, err = b.mb.SQL.ExecContext(ctx, `UPDATE coutmsgs SET COUTMSGS_DATE_SENT = '2026-12-02 08:00:02'`)
	require.NoError(t, err)
	res, err := b.sweeper.Sweep(ctx)
	require.NoError(t, err)
	require.Equal(t, request.SweepResult{Waiting: 1}, res)
	got, err = b.store.Get(ctx, r.ID)
	require.NoError(t, err)
	require.Equal(t, request.Waiting, got.Status)

	b.complete(t, r.ID, 77)
	got, err = b.store.Get(ctx, r.ID)
	require.NoError(t, err)
	require.Equal(t, request.Done, got.Status)
	require.Equal(t, int64(77), got.ResponseID)
	require.Equal(t, request.MatchFallback, got.MatchKind)

	// A closed request is final: the sweep at the timeout leaves it DONE, a second send does nothing.
	b.clock.Advance(time.Hour)
	res, err = b.sweeper.Sweep(ctx)
	require.NoError(t, err)
	require.Zero(t, res.Expired)
	again, err := b.sender.Send(ctx, r.ID)
	require.NoError(t, err)
	require.True(t, again.Already)
	require.Len(t, b.outRows(t), 1)
}

func TestLifecycleExpiresAtTimeout(t *testing.T) {
	t.Parallel()
	b := setup(t)
	reg, err := b.store.Register(ctx, request.Spec{Kind: request.List, ListCode: "SLST", Origin: request.Operator}, b.clock.Now())
	require.NoError(t, err)
	_, err = b.sender.Send(ctx, reg.Request.ID)
	require.NoError(t, err)

	b.clock.Advance(30*time.Minute - time.Second)
	res, err := b.sweeper.Sweep(ctx)
	require.NoError(t, err)
	require.Zero(t, res.Expired, "not yet due")
	require.Equal(t, 1.0, testutil.ToFloat64(b.metrics.Open.WithLabelValues("RQRD")))
	require.Equal(t, (30*time.Minute - time.Second).Seconds(), testutil.ToFloat64(b.metrics.OldestOpen.WithLabelValues("RQRD")))

	b.clock.Advance(time.Second)
	res, err = b.sweeper.Sweep(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, res.Expired)
	got, err := b.store.Get(ctx, reg.Request.ID)
	require.NoError(t, err)
	require.Equal(t, request.Expired, got.Status)
	require.Equal(t, request.ReasonTimeout, got.CloseReason)
	require.Equal(t, 0.0, testutil.ToFloat64(b.metrics.Open.WithLabelValues("RQRD")))
	require.Equal(t, 1.0, testutil.ToFloat64(b.metrics.Outcomes.WithLabelValues("RQRD", request.OutcomeExpired)))

	// A late response finds nothing to close.
	require.NoError(t, pgx.BeginFunc(ctx, b.pg.Pool, func(tx pgx.Tx) error {
		cands, err := b.store.CandidatesTx(ctx, tx, request.List, b.clock.Now())
		require.NoError(t, err)
		require.Empty(t, cands)
		require.Error(t, b.store.CompleteTx(ctx, tx, request.Matched{Request: reg.Request}, 5, b.clock.Now(), request.MatchFallback))
		return nil
	}))
}

func TestRegisterSupersedesSameScope(t *testing.T) {
	t.Parallel()
	b := setup(t)
	first, err := b.store.Register(ctx, days(2, 2), b.clock.Now())
	require.NoError(t, err)
	_, err = b.sender.Send(ctx, first.Request.ID)
	require.NoError(t, err)
	other, err := b.store.Register(ctx, days(3, 3), b.clock.Now())
	require.NoError(t, err)
	require.Empty(t, other.Superseded, "another scope is another request")

	b.clock.Advance(time.Minute)
	second, err := b.store.Register(ctx, days(2, 2), b.clock.Now())
	require.NoError(t, err)
	require.Equal(t, []int64{first.Request.ID}, second.Superseded)
	require.Equal(t, 3, second.Request.SEQN, "the SEQN counter advances per request")
	got, err := b.store.Get(ctx, first.Request.ID)
	require.NoError(t, err)
	require.Equal(t, request.Expired, got.Status)
	require.Equal(t, request.ReasonSuperseded, got.CloseReason)
	open, err := b.store.ListOpen(ctx)
	require.NoError(t, err)
	require.Len(t, open, 2)
}

func TestSEQNCounterWrapsInTheDatabase(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := b.pg.Pool.Exec(ctx, `UPDATE req_seqn SET last = 999998`)
	require.NoError(t, err)
	var seqns []int
	for _, code := range []string{"SLST", "GLST", "BLST"} {
		reg, err := b.store.Register(ctx, request.Spec{Kind: request.List, ListCode: code, Origin: request.Operator}, b.clock.Now())
		require.NoError(t, err)
		seqns = append(seqns, reg.Request.SEQN)
	}
	require.Equal(t, []int{999999, 1, 2}, seqns)
}

var errKilled = errors.New("killed")

// TestKillBetweenOutboundInsertAndLocalCommit crashes a send 20 times at a random step — before
// the look-up, after it, after the committed coutmsgs insert, after SENT was written but not
// committed (that one by terminating the PostgreSQL session, as a dying process would) — then
// sends again with a fresh sender, as a restarted jobs stage does. Every request ends SENT with
// exactly one outbound row.
func TestKillBetweenOutboundInsertAndLocalCommit(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rng := rand.New(rand.NewPCG(17, 17))
	steps := []string{request.StepLocked, request.StepLookedUp, request.StepInserted, request.StepMarked}
	killedAfterInsert := 0
	for i := range 20 {
		reg, err := b.store.Register(ctx, request.Spec{Kind: request.Schedule, Origin: request.Operator,
			From: time.Date(2026, 12, 1+i, 0, 0, 0, 0, time.UTC), To: time.Date(2026, 12, 1+i, 0, 0, 0, 0, time.UTC)}, b.clock.Now())
		require.NoError(t, err)
		kill := steps[rng.IntN(len(steps))]
		if kill == request.StepInserted || kill == request.StepMarked {
			killedAfterInsert++
		}
		crashing, err := request.NewSender(b.store, b.box, b.clock, false)
		require.NoError(t, err)
		crashing.SetStep(func(name string) error {
			if name != kill {
				return nil
			}
			if name == request.StepMarked {
				// The process dies with SENT written but not committed: its session goes away.
				var killed int
				// The session is the one holding this test's req_track (its schema's table: the other
				// tests' sessions run the same statements on tables of their own).
				require.NoError(t, b.pg.Pool.QueryRow(ctx, `SELECT count(*) FROM (SELECT pg_terminate_backend(a.pid) FROM pg_stat_activity a
				  WHERE a.pid <> pg_backend_pid() AND a.state = 'idle in transaction' AND a.query LIKE 'UPDATE req_track SET status = ''SENT''%'
				    AND a.pid IN (SELECT pid FROM pg_locks WHERE relation = 'req_track'::regclass AND mode = 'RowExclusiveLock')) k`).Scan(&killed))
				require.Equal(t, 1, killed, "the sending session is terminated mid-transaction")
			}
			return errKilled
		})
		_, err = crashing.Send(ctx, reg.Request.ID)
		require.Error(t, err, "send %d killed at %s", i, kill)
		got, err := b.store.Get(ctx, reg.Request.ID)
		require.NoError(t, err)
		require.Equal(t, request.Registered, got.Status, "a killed send leaves the request REGISTERED (%s)", kill)

		b.clock.Advance(time.Second)
		res, err := b.sweeper.Sweep(ctx) // the restarted jobs stage resends
		require.NoError(t, err)
		require.Equal(t, 1, res.Sent)
		got, err = b.store.Get(ctx, reg.Request.ID)
		require.NoError(t, err)
		require.Equal(t, request.Sent, got.Status)
		n := 0
		for _, row := range b.outRows(t) {
			if row.text == got.XML {
				n++
				require.Equal(t, row.id, got.OutMsgID, "the request records the one outbound row")
			}
		}
		require.Equal(t, 1, n, "exactly one outbound row for request %d (killed at %s)", i, kill)
	}
	require.Len(t, b.outRows(t), 20)
	require.Positive(t, killedAfterInsert, "some kills fell between the outbound insert and the local commit")
}

func TestSweepSendsNothingInShadowMode(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := request.NewSender(b.store, nil, b.clock, false)
	require.Error(t, err)
	shadow, err := request.NewSender(b.store, nil, b.clock, true)
	require.NoError(t, err)
	reg, err := b.store.Register(ctx, days(2, 2), b.clock.Now())
	require.NoError(t, err)
	_, err = shadow.Send(ctx, reg.Request.ID)
	require.ErrorIs(t, err, request.ErrShadow)
	res, err := request.NewSweeper(b.store, nil, nil, b.clock, nil, zerolog.Nop()).Sweep(ctx)
	require.NoError(t, err)
	require.Zero(t, res.Sent)
	require.Empty(t, b.outRows(t))
}

func TestPreviewWritesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	first, err := b.store.Register(ctx, days(2, 3), b.clock.Now())
	require.NoError(t, err)
	prev, err := b.store.Preview(ctx, days(2, 2), b.clock.Now())
	require.NoError(t, err)
	require.Equal(t, []int64{first.Request.ID}, prev.Superseded)
	require.Equal(t, "2026-12-02..2026-12-02", prev.Asked)
	require.Equal(t, "2026-12-02..2026-12-03", prev.Request.Scope, "it would ask for the days of the request it expires too")
	require.Equal(t, 2, prev.Request.SEQN)
	require.True(t, strings.Contains(prev.Request.XML, "<SEQN>000002</SEQN>"))
	open, err := b.store.ListOpen(ctx)
	require.NoError(t, err)
	require.Len(t, open, 1)
	require.Equal(t, first.Request.ID, open[0].ID, "the dry run supersedes nothing")
	var last int
	require.NoError(t, b.pg.Pool.QueryRow(ctx, `SELECT last FROM req_seqn`).Scan(&last))
	require.Equal(t, 1, last, "the dry run takes no SEQN")
}

// Requests narrowed by an earlier msgx (an older request left open over its range while a newer
// one took some of its days) are replaced whole: a registration over any of their days expires
// every request so linked and asks for every day they asked for.
func TestRegisterReplacesRequestsNarrowedBefore(t *testing.T) {
	t.Parallel()
	b := setup(t)
	older, err := b.store.Register(ctx, days(2, 3), b.clock.Now())
	require.NoError(t, err)
	newer, err := b.store.Register(ctx, days(9, 11), b.clock.Now())
	require.NoError(t, err)
	// What the narrowing left: the newer request asked for 3..5 December and holds them, the
	// older one holds 2 December only.
	_, err = b.pg.Pool.Exec(ctx, `UPDATE req_track SET scope = '2026-12-03..2026-12-05', scope_from = '2026-12-03',
		scope_to = '2026-12-05' WHERE req_id = $1`, newer.Request.ID)
	require.NoError(t, err)
	_, err = b.pg.Pool.Exec(ctx, `DELETE FROM req_open_day WHERE req_id = $1 OR operation_day = '2026-12-03'`, newer.Request.ID)
	require.NoError(t, err)
	_, err = b.pg.Pool.Exec(ctx, `INSERT INTO req_open_day (req_type, sender, operation_day, req_id)
		SELECT 'RQFD', 'MSGX', d::date, $1 FROM generate_series('2026-12-03'::date, '2026-12-05', interval '1 day') d`, newer.Request.ID)
	require.NoError(t, err)

	reg, err := b.store.Register(ctx, days(2, 2), b.clock.Now())
	require.NoError(t, err)
	require.Equal(t, []int64{older.Request.ID, newer.Request.ID}, reg.Superseded)
	require.Equal(t, "2026-12-02..2026-12-05", reg.Request.Scope)
	var held int
	require.NoError(t, b.pg.Pool.QueryRow(ctx, `SELECT count(*) FROM req_open_day WHERE req_id = $1`, reg.Request.ID).Scan(&held))
	require.Equal(t, 4, held, "it holds every day of its range")
	open, err := b.store.ListOpen(ctx)
	require.NoError(t, err)
	require.Len(t, open, 1)
}
