package roles_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/msgx/msgx/pkg/clock"
	"github.com/msgx/msgx/pkg/dev/kafkatest"
	"github.com/msgx/msgx/pkg/dev/mailboxtest"
	"github.com/msgx/msgx/pkg/dev/sisbuild"
	"github.com/msgx/msgx/pkg/dev/testdb"
	"github.com/msgx/msgx/pkg/dev/tlsenv"
	"github.com/msgx/msgx/pkg/dispatch"
	"github.com/msgx/msgx/pkg/ingest"
	"github.com/msgx/msgx/pkg/jobs"
	"github.com/msgx/msgx/pkg/kafka"
	"github.com/msgx/msgx/pkg/leader"
	"github.com/msgx/msgx/pkg/mailbox"
	"github.com/msgx/msgx/pkg/outbox"
	"github.com/msgx/msgx/pkg/processor"
	"github.com/msgx/msgx/pkg/processor/plugins"
	"github.com/msgx/msgx/pkg/roles"
	"github.com/msgx/msgx/pkg/sis"
	"github.com/msgx/msgx/pkg/status"
)

func TestMain(m *testing.M) {
	// sarama's metrics library starts one global ticker goroutine that never stops.
	// tlsenv.Run stops the private TLS servers the TLS test started.
	code := tlsenv.Run(m)
	if code == 0 {
		if err := goleak.Find(goleak.IgnoreTopFunction("github.com/rcrowley/go-metrics.(*meterArbiter).tick")); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(code)
}

var (
	zeroLog = zerolog.Nop()
	ctx     = context.Background()
	t0      = time.Date(2026, 12, 2, 8, 0, 0, 0, time.UTC)
)

// bundle is one test's world: a fresh schema and mailbox database with msgx's roles and users
// applied under names of this test, a pool per PostgreSQL role and a mailbox per MySQL user.
type bundle struct {
	db    *testdb.DB
	roles *testdb.Roles
	mb    *mailboxtest.DB
	users *mailboxtest.Users
	clock *clock.Fake
	pools map[roles.Role]*pgxpool.Pool
	boxes map[roles.Role]*mailbox.Mailbox
}

func setup(t *testing.T) *bundle {
	t.Helper()
	return setupOn(t, testdb.New(t), mailboxtest.New(t))
}

// setupOn is setup on the given schema and mailbox database (e.g. on the TLS servers).
func setupOn(t *testing.T, db *testdb.DB, mb *mailboxtest.DB) *bundle {
	t.Helper()
	b := &bundle{db: db, roles: db.Roles(t), mb: mb, users: mb.Users(t), clock: clock.NewFake(t0),
		pools: map[roles.Role]*pgxpool.Pool{}, boxes: map[roles.Role]*mailbox.Mailbox{}}
	for _, r := range roles.PGRoles {
		b.pools[r] = b.roles.Pool(t, r)
	}
	for _, r := range roles.MySQLRoles {
		box, err := mailbox.Open(b.users.DSN(r))
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, box.Close()) })
		b.boxes[r] = box
	}
	return b
}

// lead wins the leader election of role as that role's database user (the real Elector) and
// returns the lease; leadership ends with the test.
func (b *bundle) lead(t *testing.T, role roles.Role) leader.Lease {
	t.Helper()
	l, stop := b.leadUntil(t, role)
	t.Cleanup(stop)
	return l
}

// leadUntil is lead with a function that ends the leadership (and waits for it).
func (b *bundle) leadUntil(t *testing.T, role roles.Role) (leader.Lease, func()) {
	t.Helper()
	cc, err := pgx.ParseConfig(b.roles.URL(role))
	require.NoError(t, err)
	e, err := leader.New(leader.Config{Role: string(role), Holder: "test", SessionTimeout: 5 * time.Second,
		Retry: 10 * time.Millisecond, Now: b.clock.Now}, cc, zerolog.Nop())
	require.NoError(t, err)
	runCtx, cancel := context.WithCancel(ctx)
	leases := make(chan leader.Lease, 1)
	done := make(chan error, 1)
	go func() {
		done <- e.Run(runCtx, func(ctx context.Context, l leader.Lease) error {
			leases <- l
			<-ctx.Done()
			return nil
		})
	}()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			require.NoError(t, <-done)
		})
	}
	select {
	case l := <-leases:
		return l, stop
	case err := <-done:
		t.Fatalf("%s never became leader: %v", role, err)
	case <-time.After(30 * time.Second):
		t.Fatalf("%s never became leader", role)
	}
	return leader.Lease{}, stop
}

// campaignAs runs the real Elector for leaseRole connected as the database role of url until
// its first campaign ends, and returns that campaign's error (nil if it became leader). The
// Elector logs a failed campaign and retries; the test waits for that log line (bounded).
func campaignAs(t *testing.T, url string, leaseRole roles.Role) error {
	t.Helper()
	cc, err := pgx.ParseConfig(url)
	require.NoError(t, err)
	logs := &logWatch{lines: make(chan string, 64)}
	e, err := leader.New(leader.Config{Role: string(leaseRole), Holder: "intruder", SessionTimeout: 5 * time.Second,
		Retry: time.Hour}, cc, zerolog.New(logs))
	require.NoError(t, err)
	led := make(chan struct{}, 1)
	e.OnChange = func(leader bool, _ int64) {
		if leader {
			led <- struct{}{}
		}
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- e.Run(runCtx, func(context.Context, leader.Lease) error { return nil }) }()
	defer func() { cancel(); require.NoError(t, <-done) }()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case <-led:
			return nil
		case line := <-logs.lines:
			if strings.Contains(line, "leader campaign failed") {
				return errors.New(line)
			}
		case <-deadline:
			t.Fatal("the campaign neither led nor failed")
			return nil
		}
	}
}

// logWatch hands each log line to a channel (dropped when nobody reads).
type logWatch struct{ lines chan string }

func (w *logWatch) Write(p []byte) (int, error) {
	select {
	case w.lines <- string(p):
	default:
	}
	return len(p), nil
}

// requireDenied fails unless err is PostgreSQL's or MySQL's refusal of a privilege (or a
// row-level security policy).
func requireDenied(t *testing.T, err error, msgAndArgs ...any) {
	t.Helper()
	require.Error(t, err, msgAndArgs...)
	var pgErr *pgconn.PgError
	if ok := asPg(err, &pgErr); ok {
		require.Equal(t, "42501", pgErr.Code, "want insufficient_privilege, got %v", err)
		return
	}
	msg := err.Error()
	require.True(t, strings.Contains(msg, "Error 1142") || strings.Contains(msg, "Error 1143") ||
		strings.Contains(msg, "Error 1044") || strings.Contains(msg, "Error 1045") ||
		strings.Contains(msg, "Error 1698"),
		"want a MySQL privilege refusal, got %v", err)
}

func asPg(err error, target **pgconn.PgError) bool {
	for err != nil {
		if e, ok := err.(*pgconn.PgError); ok {
			*target = e
			return true
		}
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return false
		}
		err = u.Unwrap()
	}
	return false
}

var seq sisbuild.Seq

// schdAdd creates flight flid (a schedule ADD record).
func schdAdd(flid int64) string {
	return sisbuild.SCHD(seq.Next(), "ADD", sisbuild.FLTR(flid, "YG9028", "23JAN210535", "<STND>504</STND>"))
}

// flopCncl cancels flight flid.
func flopCncl(flid int64) string {
	return sisbuild.FLOP(seq.Next(), "CNCL", flid, "<CNCL>23JAN210600</CNCL>")
}

func processors() map[sis.Kind]processor.Handler {
	return plugins.Handlers(nil, nil)
}

func (b *bundle) pump(pool *pgxpool.Pool, marker processor.Marker) *processor.Engine {
	return processor.New(processor.Config{
		Batch: 100, MaxAttempts: 2, BackoffBase: time.Second, BackoffMax: time.Second,
		HeadDeadline: 10 * time.Minute, IdlePoll: 10 * time.Millisecond, Location: time.UTC,
	}, pool, processors(), marker, b.clock, nil, zerolog.Nop())
}

// drain steps the pump until it is idle, waiting on the fake clock through retries (bounded),
// and for each step's immediate marker writes.
func (b *bundle) drain(t *testing.T, p *processor.Engine, lease leader.Lease) {
	t.Helper()
	for range 1000 {
		res, err := p.Step(ctx, lease)
		require.NoError(t, err)
		p.WaitMarkers() // the immediate marker is written after the commit, off the FIFO path
		if res.Idle {
			return
		}
		if !res.WaitUntil.IsZero() {
			b.clock.Set(res.WaitUntil)
		}
		if res.Failed {
			b.clock.Advance(2 * time.Second)
		}
	}
	t.Fatal("the pump never went idle")
}

type outcome struct{ Status, Class string }

func (b *bundle) outcomes(t *testing.T) map[int64]outcome {
	t.Helper()
	rows, err := b.db.Pool.Query(ctx, `SELECT msg_id, status, coalesce(error_class, '') FROM proc_state ORDER BY msg_id`)
	require.NoError(t, err)
	out := map[int64]outcome{}
	for rows.Next() {
		var id int64
		var o outcome
		require.NoError(t, rows.Scan(&id, &o.Status, &o.Class))
		out[id] = o
	}
	require.NoError(t, rows.Err())
	return out
}

func (b *bundle) count(t *testing.T, sql string, args ...any) int64 {
	t.Helper()
	var n int64
	require.NoError(t, b.db.Pool.QueryRow(ctx, sql, args...).Scan(&n))
	return n
}

// ingestAll runs ingest (as its role, with its mailbox user) until W reaches the mailbox's end.
func (b *bundle) ingestAll(t *testing.T, lease leader.Lease) {
	t.Helper()
	ing := b.ingester(t, lease)
	for range 100 {
		progressed, err := ing.Step(ctx)
		require.NoError(t, err)
		if !progressed {
			return
		}
	}
	t.Fatal("ingest never caught up")
}

// TestStagesRunUnderTheirRoles runs every stage's real code as its own PostgreSQL role and
// MySQL user, from the compat entry's insert to Kafka and the jobs' sweeps: the grants are
// enough for the real work.
func TestStagesRunUnderTheirRoles(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, kcfg := kafkatest.Broker(t)
	b.runStages(t, kcfg)
}

// TestStagesRunUnderTheirRolesOverTLS is the same over verified TLS everywhere: the private
// PostgreSQL (verify-full, SCRAM passwords of the roles), MariaDB (tls=msgx-tlsenv, the users'
// passwords) and Kafka (TLS + SASL/SCRAM-SHA-512).
func TestStagesRunUnderTheirRolesOverTLS(t *testing.T) {
	t.Parallel()
	pg, my := tlsenv.PG(t), tlsenv.MySQL(t)
	b := setupOn(t, pg.NewDB(t), my.NewDB(t))
	_, kcfg := tlsenv.Kafka(t, "msgx-dispatcher", testdb.RandomSuffix())
	b.runStages(t, kcfg)
}

func (b *bundle) runStages(t *testing.T, kcfg kafka.Config) {

	// Leader election of every binary, as itself.
	leases := map[roles.Role]leader.Lease{}
	for _, r := range roles.LeaseRoles {
		leases[r] = b.lead(t, r)
		require.Equal(t, int64(1), leases[r].Epoch)
	}

	// ingest: the compat entry's insert, then the poll loop.
	var ids []int64
	for _, raw := range []string{schdAdd(15), flopCncl(15), flopCncl(99), schdAdd(16)} {
		id, err := b.boxes[roles.Ingest].Insert(ctx, mailbox.NewMessage{Text: raw, Received: t0})
		require.NoError(t, err)
		ids = append(ids, id)
	}
	b.ingestAll(t, leases[roles.Ingest])
	require.Equal(t, int64(4), b.count(t, `SELECT count(*) FROM proc_state`))

	// processor: flights created (flight_history read for new FLIDs), events, markers.
	b.drain(t, b.pump(b.pools[roles.Processor], b.boxes[roles.Processor]), leases[roles.Processor])
	got := b.outcomes(t)
	require.Equal(t, outcome{"SUCCEEDED", ""}, got[ids[0]])
	require.Equal(t, outcome{"SUCCEEDED", ""}, got[ids[1]])
	require.Equal(t, "SKIPPED", got[ids[2]].Status, "a FLOP for an unknown flight is skipped, not dead")
	require.Equal(t, outcome{"SUCCEEDED", ""}, got[ids[3]])
	require.Equal(t, int64(2), b.count(t, `SELECT count(*) FROM flight`))
	var marked int
	require.NoError(t, b.mb.SQL.QueryRowContext(ctx, `SELECT count(*) FROM cminmsgs WHERE CMINMSGS_DATE_PROCESSED IS NOT NULL`).Scan(&marked))
	require.Equal(t, 4, marked, "the processor's user writes the markers")

	// dispatcher: claims the outbox and marks it SENT.
	disp := b.dispatcher(t, kcfg)
	require.NoError(t, disp.ReadTail(ctx, leases[roles.Dispatcher]), "the term start: timeline, identity, the topics' tail")
	sent := 0
	for range 10 { // until nothing is left to claim
		res, err := disp.StepMsg(ctx, leases[roles.Dispatcher])
		require.NoError(t, err)
		if res.Claimed == 0 {
			break
		}
		sent += res.Sent
	}
	require.Positive(t, sent)
	res, err := disp.FlushStates(ctx, leases[roles.Dispatcher])
	require.NoError(t, err)
	require.Positive(t, res.Sent)
	require.NoError(t, disp.RefreshStats(ctx))
	require.Zero(t, b.count(t, `SELECT count(*) FROM `+testdb.AllEvents+` WHERE status <> 'SENT'`))

	// jobs: backfill (nothing owed but it reads), history sweep purges the 2021 flights, retention.
	cfg := jobs.Defaults()
	cfg.RunBudget = time.Minute
	cfg.ProcStateRetention = time.Hour
	j, err := jobs.New(cfg, b.pools[roles.Jobs], b.boxes[roles.Jobs], b.clock, nil, zerolog.Nop())
	require.NoError(t, err)
	b.clock.Advance(48 * time.Hour)
	for _, job := range []string{"backfill", "history", "retention"} {
		_, err := j.RunOnce(ctx, job, leases[roles.Jobs])
		require.NoError(t, err, job)
	}
	require.Zero(t, b.count(t, `SELECT count(*) FROM flight`), "the history sweep purged the flights")
	require.Equal(t, int64(2), b.count(t, `SELECT count(*) FROM flight_history`))
	require.Equal(t, int64(4), b.count(t, `SELECT count(*) FROM proc_state_hst`), "retention archived the settled rows")

	// processor again: a purged FLID comes back, its version continues from flight_history.
	id, err := b.boxes[roles.Ingest].Insert(ctx, mailbox.NewMessage{Text: schdAdd(15), Received: b.clock.Now()})
	require.NoError(t, err)
	b.ingestAll(t, leases[roles.Ingest])
	b.drain(t, b.pump(b.pools[roles.Processor], nil), leases[roles.Processor]) // no immediate marker
	require.Equal(t, outcome{"SUCCEEDED", ""}, b.outcomes(t)[id])
	var version int64
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT state_version FROM flight WHERE flid = 15`).Scan(&version))
	require.Greater(t, version, int64(1), "the version continues after the purged one")

	// jobs: the backfill sweep writes the owed marker with the jobs user (SELECT … FOR UPDATE).
	b.clock.Advance(time.Hour)
	res2, err := j.RunOnce(ctx, "backfill", leases[roles.Jobs])
	require.NoError(t, err)
	require.Equal(t, 1, res2.Done)
	var processed sql.NullTime
	require.NoError(t, b.mb.SQL.QueryRowContext(ctx, `SELECT CMINMSGS_DATE_PROCESSED FROM cminmsgs WHERE CMINMSGS_ID = ?`, id).Scan(&processed))
	require.True(t, processed.Valid, "the jobs user wrote the marker")

	// msgxctl's read-only role reads the status.
	s, err := status.Read(ctx, b.pools[roles.Reader], b.clock.Now())
	require.NoError(t, err)
	require.Len(t, s.Leaders, 4)
}

// TestProcessorNeedsFlightHistory: without SELECT on flight_history the processor cannot create
// a flight: the head is refused and held, charged nothing (INV-23d), and nothing behind it runs.
// Revoking the grant brings the refusal back; TestStagesRunUnderTheirRoles passes with it.
func TestProcessorNeedsFlightHistory(t *testing.T) {
	t.Parallel()
	b := setup(t)
	proc := pgx.Identifier{b.roles.Name(roles.Processor)}.Sanitize()
	_, err := b.db.Pool.Exec(ctx, "REVOKE SELECT ON flight_history FROM "+proc)
	require.NoError(t, err)
	li, lp := b.lead(t, roles.Ingest), b.lead(t, roles.Processor)
	for _, raw := range []string{schdAdd(15), flopCncl(99)} {
		_, err := b.boxes[roles.Ingest].Insert(ctx, mailbox.NewMessage{Text: raw, Received: t0})
		require.NoError(t, err)
	}
	b.ingestAll(t, li)
	p := b.pump(b.pools[roles.Processor], nil)
	for range 3 {
		_, err := p.Step(ctx, lp)
		require.ErrorContains(t, err, "permission denied for table flight_history")
		b.clock.Advance(time.Minute)
	}
	require.Equal(t, map[int64]outcome{1: {"PENDING", ""}, 2: {"PENDING", ""}}, b.outcomes(t))
	require.Zero(t, b.count(t, `SELECT count(*) FROM flight`))

	_, err = b.db.Pool.Exec(ctx, "GRANT SELECT ON flight_history TO "+proc)
	require.NoError(t, err)
	b.drain(t, p, lp)
	require.Equal(t, map[int64]outcome{1: {"SUCCEEDED", ""}, 2: {"SKIPPED", ""}}, b.outcomes(t))
	require.EqualValues(t, 1, b.count(t, `SELECT count(*) FROM flight`))
}

// A stage refused a privilege steps down (leader.ErrStepDown) instead of keeping the lock: in a
// rollback the previous release's roles apply revokes the grants on tables it does not know,
// while this release's instances still lead; another release's instance may have the grant.
// The dispatcher is refused at its term start (the database's identity reads msg_state_log),
// ingest at its copy into proc_state.
func TestStagesStepDownWhenRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, kcfg := kafkatest.Broker(t)
	revoke := func(what string, r roles.Role) {
		_, err := b.db.Pool.Exec(ctx, "REVOKE "+what+" FROM "+pgx.Identifier{b.roles.Name(r)}.Sanitize())
		require.NoError(t, err)
	}

	disp := b.dispatcher(t, kcfg)
	lease := b.lead(t, roles.Dispatcher)
	stepsDown := func(what string) {
		t.Helper()
		dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		err := disp.Run(dctx, lease)
		require.NoError(t, dctx.Err(), "it stepped down at once, not at the test's timeout")
		require.ErrorIs(t, err, leader.ErrStepDown)
		require.True(t, leader.Refused(err), "%v", err)
		require.ErrorContains(t, err, what)
	}
	revoke("DELETE ON msg_state_log", roles.Dispatcher) // the fold's: a loop's step
	stepsDown("fold states")
	revoke("SELECT ON msg_state_log", roles.Dispatcher) // the database's identity: the term start
	stepsDown("the topics' tail")

	revoke("INSERT ON proc_state", roles.Ingest)
	_, err := b.boxes[roles.Ingest].Insert(ctx, mailbox.NewMessage{Text: schdAdd(15), Received: t0})
	require.NoError(t, err)
	ictx, icancel := context.WithTimeout(ctx, 30*time.Second)
	defer icancel()
	err = b.ingester(t, b.lead(t, roles.Ingest)).Run(ictx)
	require.ErrorIs(t, err, leader.ErrStepDown)
	require.True(t, leader.Refused(err), "%v", err)
	require.NoError(t, ictx.Err(), "it stepped down at once, not at the test's timeout")
	require.Zero(t, b.count(t, `SELECT count(*) FROM proc_state`))
}

// ingester is the ingest stage on its role's pool and mailbox user, fenced by lease.
func (b *bundle) ingester(t *testing.T, lease leader.Lease) *ingest.Ingester {
	t.Helper()
	ing, err := ingest.New(ingest.Config{PollInterval: 10 * time.Millisecond, ClaimBatch: 50,
		MaxCommitDelay: 30 * time.Second, ReprobeWindow: time.Hour, ReprobeEvery: 10 * time.Second, DBTimeout: 30 * time.Second},
		ingest.Deps{DB: b.pools[roles.Ingest], Mailbox: b.boxes[roles.Ingest], Fence: lease, Clock: b.clock,
			Metrics: ingest.NewMetrics(prometheus.NewRegistry(), b.clock), Log: zerolog.Nop()})
	require.NoError(t, err)
	return ing
}

// dispatcher is the dispatcher stage on its role's pool, producing to kcfg's broker.
func (b *bundle) dispatcher(t *testing.T, kcfg kafka.Config) *dispatch.Dispatcher {
	t.Helper()
	prod, err := kafka.Dial(kcfg)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, prod.Close()) })
	store, err := outbox.New(b.pools[roles.Dispatcher], outbox.Policy{MaxAttempts: 3, BackoffBase: time.Second, BackoffMax: 4 * time.Second})
	require.NoError(t, err)
	disp, err := dispatch.New(dispatch.Config{Batch: 500, FlushPeriod: time.Second, FlushLimit: 500,
		TopicChanges: kcfg.TopicChanges, TopicState: kcfg.TopicState,
		TailReader: func(ctx context.Context, topic string, since time.Time, fn func(kafka.ConsumedRecord) error) error {
			_, err := kafka.ReadCommittedSince(ctx, kcfg, topic, since, fn)
			return err
		}}, store, prod, b.clock, prometheus.NewRegistry(), zerolog.Nop())
	require.NoError(t, err)
	return disp
}
