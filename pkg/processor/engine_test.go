package processor_test

import (
	"context"
	"errors"
	"github.com/msgx/msgx/pkg/dev/corpus"
	"github.com/msgx/msgx/pkg/dev/sisbuild"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/msgx/msgx/pkg/clock"
	"github.com/msgx/msgx/pkg/dev/mailboxtest"
	"github.com/msgx/msgx/pkg/dev/testdb"
	"github.com/msgx/msgx/pkg/leader"
	"github.com/msgx/msgx/pkg/mailbox"
	"github.com/msgx/msgx/pkg/processor"
	"github.com/msgx/msgx/pkg/procstate"
	"github.com/msgx/msgx/pkg/sis"
)

func TestMain(m *testing.M) {
	if os.Getenv("MSGX_PUMP_CHILD") != "" {
		os.Exit(child())
	}
	goleak.VerifyTestMain(m)
}

var t0 = time.Date(2026, 12, 2, 8, 0, 0, 0, time.UTC)

// bundle is one test's pipeline: a fresh schema, a leader lease, a fake clock and a pump whose
// processors the test chooses.
type bundle struct {
	db    *testdb.DB
	clock *clock.Fake
	lease leader.Lease
	cfg   processor.Config
	procs map[sis.Kind]processor.Handler
	mb    *mailboxtest.DB
}

func setup(t testing.TB) *bundle {
	t.Helper()
	return setupOn(t, testdb.New(t))
}

// setupOn is setup on a schema of the caller's (a server of its own).
func setupOn(t testing.TB, db *testdb.DB) *bundle {
	t.Helper()
	_, err := db.Pool.Exec(context.Background(),
		`INSERT INTO leader_lease VALUES ('processor', 1, 'test', 0, $1, $1)`, t0)
	require.NoError(t, err)
	_, err = db.Pool.Exec(context.Background(), `CREATE TABLE effect (msg_id bigint PRIMARY KEY, flid bigint, seq bigserial)`)
	require.NoError(t, err)
	return &bundle{
		db: db, clock: clock.NewFake(t0), lease: leader.Lease{Role: "processor", Epoch: 1},
		cfg: processor.Config{
			Batch: 100, MaxAttempts: 5, BackoffBase: time.Second, BackoffMax: 60 * time.Second,
			HeadDeadline: 10 * time.Minute, IdlePoll: 10 * time.Millisecond,
			IgnoreTypes: []string{"LDM", "REGN", "RSTA", "EROR"}, Location: time.UTC,
			IdentityWindow: 7 * 24 * time.Hour,
		},
		procs: map[sis.Kind]processor.Handler{},
	}
}

func (b *bundle) pump(t *testing.T) *processor.Engine {
	var marker processor.Marker
	if b.mb != nil {
		m, err := mailbox.Open(b.mb.DSN)
		require.NoError(t, err)
		t.Cleanup(func() { _ = m.Close() })
		marker = m
	}
	return processor.New(b.cfg, b.db.Pool, b.procs, marker, b.clock, nil, zerolog.Nop())
}

// flop returns a FLOP STND message for flid with sequence number seqn.
func flop(seqn int, flid int64, stand string) string {
	return sisbuild.Stand(int64(seqn), sisbuild.DTTM, flid, stand)
}

// enqueue inserts proc_state rows as ingest does and moves W to the largest id.
func (b *bundle) enqueue(t *testing.T, raws map[int64]*string) {
	t.Helper()
	ctx := context.Background()
	var maxID int64
	for id, raw := range raws {
		_, err := b.db.Pool.Exec(ctx, `INSERT INTO proc_state (msg_id, raw, raw_sha256, enqueued_at)
			VALUES ($1, $2, CASE WHEN $2::text IS NULL THEN NULL ELSE sha256(convert_to($2::text, 'UTF8')) END, $3)`, id, raw, b.clock.Now())
		require.NoError(t, err)
		maxID = max(maxID, id)
	}
	_, err := b.db.Pool.Exec(ctx, `UPDATE inbox_cursor SET watermark = GREATEST(watermark, $1)`, maxID)
	require.NoError(t, err)
}

func (b *bundle) enqueueSeq(t *testing.T, from, to int64, raw func(id int64) string) {
	m := map[int64]*string{}
	for id := from; id <= to; id++ {
		s := raw(id)
		m[id] = &s
	}
	b.enqueue(t, m)
}

type row struct {
	Status, Class, Reason string
	Attempts              int
	Next                  *time.Time
	Identity              *string
	Differs               bool
	Owed                  bool
}

func (b *bundle) row(t *testing.T, id int64) row {
	t.Helper()
	var r row
	var class, reason *string
	require.NoError(t, b.db.Pool.QueryRow(context.Background(), `
		SELECT status, error_class, reason, attempts, next_attempt_at, identity_key, content_differs,
		       (backfill_next_at IS NOT NULL AND backfill_done_at IS NULL)
		        OR (status IN ('SUCCEEDED', 'SKIPPED', 'DEAD') AND EXISTS (SELECT 1 FROM marker_debt d WHERE msg_id = ANY (d.ids)))
		  FROM proc_state WHERE msg_id = $1`, id).
		Scan(&r.Status, &class, &reason, &r.Attempts, &r.Next, &r.Identity, &r.Differs, &r.Owed))
	if class != nil {
		r.Class = *class
	}
	if reason != nil {
		r.Reason = *reason
	}
	return r
}

// drain steps until idle or blocked, advancing nothing.
func (b *bundle) drain(t *testing.T, p *processor.Engine) {
	t.Helper()
	b.steps(t, p)
}

// steps is drain, returning how many messages each Step ended.
func (b *bundle) steps(t *testing.T, p *processor.Engine) []int {
	t.Helper()
	var sizes []int
	for range 100000 {
		res, err := p.Step(context.Background(), b.lease)
		require.NoError(t, err)
		if res.Idle || !res.WaitUntil.IsZero() {
			return sizes
		}
		sizes = append(sizes, res.Processed)
	}
	t.Fatal("pump did not settle")
	return nil
}

// recorder is a processor that records the order of applies and writes one effect row.
type recorder struct {
	mu    sync.Mutex
	order []int64
	fail  func(m processor.Message) error
}

func (r *recorder) Apply(ctx context.Context, tx pgx.Tx, m processor.Message) (processor.Outcome, error) {
	if _, err := tx.Exec(ctx, `INSERT INTO effect (msg_id, flid) VALUES ($1, $2)`, m.ID, m.Decoded.Flop.FLID); err != nil {
		return processor.Outcome{}, err
	}
	if r.fail != nil {
		if err := r.fail(m); err != nil {
			return processor.Outcome{}, err
		}
	}
	r.mu.Lock()
	r.order = append(r.order, m.ID)
	r.mu.Unlock()
	return processor.Outcome{}, nil
}

func effects(t *testing.T, b *bundle) []int64 {
	return b.db.Int64s(t, `SELECT msg_id FROM effect ORDER BY seq`)
}

func TestFailedHeadBlocksUntilDue(t *testing.T) {
	t.Parallel()
	b := setup(t)
	failed := false
	rec := &recorder{fail: func(m processor.Message) error {
		if m.ID == 1 && !failed {
			failed = true
			return errors.New("connection reset by peer")
		}
		return nil
	}}
	b.procs[sis.KindFlightUpdate] = rec
	b.enqueueSeq(t, 1, 3, func(id int64) string { return flop(int(id), 15, "S1") })
	p := b.pump(t)

	res, err := p.Step(context.Background(), b.lease)
	require.NoError(t, err)
	require.True(t, res.Failed)
	r := b.row(t, 1)
	require.Equal(t, "FAILED", r.Status)
	require.Equal(t, "INFRA", r.Class)
	require.Equal(t, 1, r.Attempts)
	require.Equal(t, t0.Add(time.Second), r.Next.UTC())
	require.Empty(t, effects(t, b), "the failed message's business effect was rolled back")

	res, err = p.Step(context.Background(), b.lease)
	require.NoError(t, err)
	require.Equal(t, t0.Add(time.Second), res.WaitUntil.UTC(), "the FAILED head blocks")
	require.Equal(t, "PENDING", b.row(t, 2).Status, "nothing overtakes the head")

	b.clock.Advance(time.Second)
	b.drain(t, p)
	require.Equal(t, []int64{1, 2, 3}, rec.order)
	require.Equal(t, []int64{1, 2, 3}, effects(t, b))
	for id := int64(1); id <= 3; id++ {
		r := b.row(t, id)
		require.Equal(t, "SUCCEEDED", r.Status)
		require.True(t, r.Owed, "terminal rows owe their marker (INV-8c)")
	}
	require.Equal(t, 2, b.row(t, 1).Attempts)
}

// Property: whatever fails when, commits happen in msg_id order and every message ends terminal.
func TestFIFOUnderRandomFailures(t *testing.T) {
	t.Parallel()
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 7))
	b := setup(t)
	b.cfg.Batch, b.cfg.ReadAhead = 1+rng.IntN(20), rng.IntN(2) == 0
	b.cfg.MaxAttempts = 100
	var mu sync.Mutex
	rec := &recorder{fail: func(m processor.Message) error {
		mu.Lock()
		defer mu.Unlock()
		if rng.IntN(5) == 0 {
			return errors.New("injected")
		}
		return nil
	}}
	b.procs[sis.KindFlightUpdate] = rec
	const n = 300
	b.enqueueSeq(t, 1, n, func(id int64) string { return flop(int(id), id%7, "S") })
	p := b.pump(t)
	for range 10000 {
		res, err := p.Step(context.Background(), b.lease)
		require.NoError(t, err, "seed %d", seed)
		if res.Idle {
			break
		}
		if !res.WaitUntil.IsZero() {
			b.clock.Set(res.WaitUntil)
		}
	}
	want := make([]int64, n)
	for i := range want {
		want[i] = int64(i + 1)
	}
	require.Equal(t, want, rec.order, "seed %d: commit order", seed)
	require.Equal(t, want, effects(t, b), "seed %d: business effects once each, in order", seed)
}

func TestDuplicateIdentity(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rec := &recorder{}
	b.procs[sis.KindFlightUpdate] = rec
	same, other := flop(7, 15, "S1"), flop(7, 15, "S2")
	b.enqueue(t, map[int64]*string{1: &same, 2: &same, 3: &other})
	b.drain(t, b.pump(t))

	require.Equal(t, "SUCCEEDED", b.row(t, 1).Status, "%+v", b.row(t, 1))
	r2 := b.row(t, 2)
	require.Equal(t, "SKIPPED", r2.Status)
	require.Equal(t, "duplicate-of:1", r2.Reason)
	require.False(t, r2.Differs)
	r3 := b.row(t, 3)
	require.Equal(t, "SKIPPED", r3.Status)
	require.Equal(t, "duplicate-of:1 content-differs", r3.Reason)
	require.True(t, r3.Differs)
	require.Equal(t, []int64{1}, rec.order)
	require.Equal(t, "AODB|FLOP|STND|7", *b.row(t, 1).Identity)
}

func TestRetryKeepsItsOwnBinding(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tries := 0
	rec := &recorder{fail: func(processor.Message) error {
		tries++
		if tries < 3 {
			return processor.Errorf(procstate.ClassCodec, "not yet")
		}
		return nil
	}}
	b.procs[sis.KindFlightUpdate] = rec
	b.enqueueSeq(t, 1, 1, func(int64) string { return flop(9, 15, "S1") })
	p := b.pump(t)
	for range 3 {
		_, err := p.Step(context.Background(), b.lease)
		require.NoError(t, err)
		b.clock.Advance(time.Minute)
	}
	r := b.row(t, 1)
	require.Equal(t, "SUCCEEDED", r.Status)
	require.Equal(t, 3, r.Attempts)
}

func TestArchivedIdentityStillCounts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.procs[sis.KindFlightUpdate] = &recorder{}
	b.enqueueSeq(t, 1, 1, func(int64) string { return flop(11, 15, "S1") })
	b.drain(t, b.pump(t))
	// Archive as the jobs stage does: the row moves to proc_state_hst.
	_, err := b.db.Pool.Exec(context.Background(), `
		WITH moved AS (DELETE FROM proc_state WHERE msg_id = 1 RETURNING *)
		INSERT INTO proc_state_hst
		SELECT (jsonb_populate_record(NULL::proc_state_hst, to_jsonb(m) || jsonb_build_object('archived_at', $1::timestamptz))).*
		  FROM moved m`, t0)
	require.NoError(t, err)
	b.enqueueSeq(t, 2, 2, func(int64) string { return flop(11, 15, "S1") })
	b.drain(t, b.pump(t))
	require.Equal(t, "duplicate-of:1", b.row(t, 2).Reason)
}

func TestErrorClassesFromRealInputs(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.procs[sis.KindFlightUpdate] = &recorder{fail: func(m processor.Message) error {
		if m.ID == 5 {
			// An INFRA failure in the middle of the transaction: a statement error aborts it.
			return errors.New("injected after a write")
		}
		return nil
	}}
	empty := "   "
	notWellFormed := `<MSG><META><SNDR>AODB</SNDR></MSG>`
	// The catalogue's FLOP/03_FDIV (kept back from the corpus): the real 01_FDIV with DDIR="TOO".
	sample, err := os.ReadFile(corpus.File("FLOP/01_FDIV.xml"))
	require.NoError(t, err)
	protocolS := strings.Replace(string(sample), `DDIR="TO"`, `DDIR="TOO"`, 1)
	infra := flop(5, 15, "S5")
	unsupported := strings.Replace(flop(6, 15, "S6"), "<TYPE>FLOP</TYPE>", "<TYPE>XXXX</TYPE>", 1)
	ignored := strings.Replace(flop(7, 15, "S7"), "<TYPE>FLOP</TYPE>", "<TYPE>LDM</TYPE>", 1)
	b.enqueue(t, map[int64]*string{1: nil, 2: &empty, 3: &notWellFormed, 4: &protocolS, 5: &infra})
	p := b.pump(t)
	b.drain(t, p)

	for _, c := range []struct {
		id            int64
		status, class string
		reason        string
	}{
		{1, "DEAD", "MALFORMED", "raw text empty or missing"},
		{2, "DEAD", "MALFORMED", "raw text empty or missing"},
		{3, "DEAD", "MALFORMED", "MSG/META"},
		{4, "DEAD", "PROTOCOL", "FDIV@DDIR"},
		{5, "FAILED", "INFRA", "injected after a write"},
	} {
		r := b.row(t, c.id)
		require.Equal(t, c.status, r.Status, "msg %d", c.id)
		require.Equal(t, c.class, r.Class, "msg %d", c.id)
		require.Contains(t, r.Reason, c.reason, "msg %d", c.id)
		require.Equal(t, c.status == "DEAD", r.Owed, "msg %d: a marker is owed by terminal rows only", c.id)
	}
	require.Empty(t, effects(t, b), "the INFRA failure rolled back its write")

	// UNSUPPORTED is retried, then DEAD EXHAUSTED; the ignore rule skips after binding.
	b.procs[sis.KindFlightUpdate] = &recorder{}
	b.clock.Advance(time.Minute)
	b.enqueue(t, map[int64]*string{6: &unsupported, 7: &ignored})
	for range 5 {
		b.drain(t, p)
		b.clock.Advance(time.Minute)
	}
	b.drain(t, p)
	r := b.row(t, 6)
	require.Equal(t, "DEAD", r.Status)
	require.Equal(t, "EXHAUSTED", r.Class)
	require.Equal(t, 5, r.Attempts)
	require.Contains(t, r.Reason, "after 5 attempts: UNSUPPORTED")
	r = b.row(t, 7)
	require.Equal(t, "SKIPPED", r.Status)
	require.Equal(t, "ignored:LDM", r.Reason)
	require.NotNil(t, r.Identity)
}

func TestHeadDeadline(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.cfg.MaxAttempts = 1000
	b.procs[sis.KindFlightUpdate] = &recorder{fail: func(m processor.Message) error {
		if m.ID == 1 {
			return errors.New("always")
		}
		return nil
	}}
	b.enqueueSeq(t, 1, 3, func(id int64) string { return flop(int(id), 15, "S") })
	p := b.pump(t)
	for b.row(t, 1).Status != "DEAD" {
		res, err := p.Step(context.Background(), b.lease)
		require.NoError(t, err)
		if !res.WaitUntil.IsZero() {
			b.clock.Set(res.WaitUntil)
		}
		require.True(t, b.clock.Now().Before(t0.Add(11*time.Minute)), "the head deadline ends it")
	}
	r := b.row(t, 1)
	require.Equal(t, "EXHAUSTED", r.Class)
	require.Contains(t, r.Reason, "head deadline")
	require.GreaterOrEqual(t, b.clock.Now().Sub(t0), 10*time.Minute)
	b.drain(t, p)
	require.Equal(t, "SUCCEEDED", b.row(t, 3).Status, "messages behind it flow")
}

// A deposed leader's batch commits nothing (its every transaction is fenced): no status, no
// effect, no start mark, no marker debt, and no marker in the mailbox (INV-17, INV-8c).
func TestFencedLeaderCommitsNothing(t *testing.T) {
	t.Parallel()
	b := setupMailbox(t, 2)
	b.enqueueSeq(t, 1, 2, func(id int64) string { return flop(int(id), 15, "S") })
	_, err := b.db.Pool.Exec(context.Background(), `UPDATE leader_lease SET epoch = 2`)
	require.NoError(t, err)
	p := b.pump(t)
	_, err = p.Step(context.Background(), b.lease)
	require.ErrorIs(t, err, leader.ErrFenced)
	p.WaitMarkers()
	require.Equal(t, "PENDING", b.row(t, 1).Status)
	require.Empty(t, effects(t, b))
	var debts, inMailbox int
	require.NoError(t, b.db.Pool.QueryRow(context.Background(), `SELECT count(*) FROM marker_debt`).Scan(&debts))
	require.Zero(t, debts, "a fenced batch left a marker debt")
	require.NoError(t, b.mb.SQL.QueryRowContext(context.Background(), `SELECT count(*) FROM cminmsgs WHERE CMINMSGS_DATE_PROCESSED IS NOT NULL`).Scan(&inMailbox))
	require.Zero(t, inMailbox, "a fenced batch marked the mailbox")
	var marked int
	require.NoError(t, b.db.Pool.QueryRow(context.Background(), `
SELECT count(*) FROM proc_state WHERE processing_started_at IS NOT NULL OR processing_through IS NOT NULL OR deaths > 0`).Scan(&marked))
	require.Zero(t, marked, "a deposed leader stamps no start mark either: the next leader would read it as an attempt that died")
}

// setupMailbox is setup with a mailbox holding n unmarked FLOPs for flight 15 (ids 1..n), a
// processed value, and a FLOP processor that records.
func setupMailbox(t *testing.T, n int) *bundle {
	t.Helper()
	return withMailbox(t, setup(t), n)
}

// withMailbox gives b what setupMailbox adds to setup's bundle.
func withMailbox(t *testing.T, b *bundle, n int) *bundle {
	t.Helper()
	b.mb = mailboxtest.New(t)
	b.cfg.ProcessedValue = "DONE"
	b.procs[sis.KindFlightUpdate] = &recorder{}
	for i := 1; i <= n; i++ {
		_, err := b.mb.SQL.ExecContext(context.Background(), `INSERT INTO cminmsgs (CMINMSGS_CLOB_MSG, CMINMSGS_STATUS) VALUES (?, 'VALID')`, flop(i, 15, "S"))
		require.NoError(t, err)
	}
	return b
}

func TestImmediateMarker(t *testing.T) {
	t.Parallel()
	b := setupMailbox(t, 3)
	ctx := context.Background()
	// Row 2 was already marked by someone else: never overwritten (INV-7).
	_, err := b.mb.SQL.ExecContext(ctx, `UPDATE cminmsgs SET CMINMSGS_DATE_PROCESSED = '2020-01-01 00:00:00' WHERE CMINMSGS_ID = 2`)
	require.NoError(t, err)
	b.enqueueSeq(t, 1, 3, func(id int64) string { return flop(int(id), 15, "S") })
	p := b.pump(t)
	b.drain(t, p)
	p.WaitMarkers()

	rows, err := b.mb.SQL.QueryContext(ctx, `SELECT CMINMSGS_ID, CMINMSGS_DATE_PROCESSED, CMINMSGS_STATUS FROM cminmsgs ORDER BY 1`)
	require.NoError(t, err)
	defer rows.Close()
	got := map[int64]string{}
	for rows.Next() {
		var id int64
		var at time.Time
		var status string
		require.NoError(t, rows.Scan(&id, &at, &status))
		got[id] = at.Format(time.DateTime) + " " + status
	}
	require.NoError(t, rows.Err())
	require.Equal(t, map[int64]string{1: "2026-12-02 08:00:00 DONE", 2: "2020-01-01 00:00:00 VALID", 3: "2026-12-02 08:00:00 DONE"}, got)
	// A partial write leaves the batch's markers to the sweep, which settles each row.
	require.True(t, b.row(t, 1).Owed)
}

// A batch whose immediate marker is written in full rewrites none of its terminal rows: the
// marker debt is one row per batch (marker_debt), written by the terminal statement and deleted
// when the mailbox write succeeded, so the hottest table gets no second version per message.
func TestImmediateMarkerRewritesNoRow(t *testing.T) {
	t.Parallel()
	b := setupMailbox(t, 3)
	ctx := context.Background()
	// Every update of a row that was already terminal, logged by a trigger of this test's schema.
	_, err := b.db.Pool.Exec(ctx, `
CREATE TABLE rewrite (msg_id bigint);
CREATE FUNCTION log_rewrite() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER AS $$
BEGIN
  IF OLD.status IN ('SUCCEEDED', 'SKIPPED', 'DEAD') THEN INSERT INTO rewrite VALUES (NEW.msg_id); END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER log_rewrite AFTER UPDATE ON proc_state FOR EACH ROW EXECUTE FUNCTION log_rewrite();`)
	require.NoError(t, err)
	b.enqueueSeq(t, 1, 3, func(id int64) string { return flop(int(id), 15, "S") })
	p := b.pump(t)
	b.drain(t, p)
	p.WaitMarkers()

	var marked int
	require.NoError(t, b.mb.SQL.QueryRowContext(ctx, `SELECT count(*) FROM cminmsgs WHERE CMINMSGS_DATE_PROCESSED IS NOT NULL`).Scan(&marked))
	require.Equal(t, 3, marked)
	var rewrites int
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT count(*) FROM rewrite`).Scan(&rewrites))
	require.Zero(t, rewrites, "the immediate marker rewrote terminal rows")
	for id := int64(1); id <= 3; id++ {
		require.False(t, b.row(t, id).Owed, "message %d still owes its marker", id)
	}
}

// An immediate marker that fails moves its batch's debt onto the rows at once, with the error
// and the time the backfill sweep tries again.
func TestImmediateMarkerFailureMovesTheDebt(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.procs[sis.KindFlightUpdate] = &recorder{}
	down, err := mailbox.Open("root@tcp(127.0.0.1:1)/nowhere?timeout=1s") // connection refused at once
	require.NoError(t, err)
	t.Cleanup(func() { _ = down.Close() })
	b.enqueueSeq(t, 1, 2, func(id int64) string { return flop(int(id), 15, "S") })
	p := processor.New(b.cfg, b.db.Pool, b.procs, down, b.clock, nil, zerolog.Nop())
	b.drain(t, p)
	p.WaitMarkers()

	var debts int
	require.NoError(t, b.db.Pool.QueryRow(context.Background(), `SELECT count(*) FROM marker_debt`).Scan(&debts))
	require.Zero(t, debts, "the debt moved onto the rows")
	for id := int64(1); id <= 2; id++ {
		var attempts int
		var next *time.Time
		var msg *string
		require.NoError(t, b.db.Pool.QueryRow(context.Background(),
			`SELECT backfill_attempts, backfill_next_at, backfill_error FROM proc_state WHERE msg_id = $1`, id).Scan(&attempts, &next, &msg))
		require.Equal(t, 1, attempts, "message %d", id)
		require.Equal(t, t0.Add(30*time.Second), next.UTC(), "message %d", id)
		require.NotNil(t, msg, "message %d", id)
		require.True(t, b.row(t, id).Owed, "message %d", id)
	}
}

// child runs the pump in a separate process for the crash tests (see crash_test.go).
func child() int {
	return runChild()
}

// lockHold is how long TestMarkerNeverBlocksFIFO holds the mailbox row lock
// (MSGX_TEST_LOCK_HOLD, e.g. 60s for a lock held a minute; the assertion is about progress).
func lockHold(t *testing.T) time.Duration {
	if v := os.Getenv("MSGX_TEST_LOCK_HOLD"); v != "" {
		d, err := time.ParseDuration(v)
		require.NoError(t, err)
		return d
	}
	return 3 * time.Second
}

// A row lock held on a mailbox row by another session (the AODB) never stalls processing: the
// immediate marker write runs off the FIFO path with a bounded time, and the marker is written
// after the lock goes.
func TestMarkerNeverBlocksFIFO(t *testing.T) {
	t.Parallel()
	b := setupMailbox(t, 6)
	ctx := context.Background()
	hold := lockHold(t)
	conn, err := b.mb.SQL.Conn(ctx)
	require.NoError(t, err)
	defer conn.Close()
	_, err = conn.ExecContext(ctx, `BEGIN`)
	require.NoError(t, err)
	_, err = conn.ExecContext(ctx, `SELECT CMINMSGS_ID FROM cminmsgs WHERE CMINMSGS_ID = 2 FOR UPDATE`)
	require.NoError(t, err)
	locked := time.Now()

	p := b.pump(t)
	defer p.WaitMarkers()
	b.enqueueSeq(t, 1, 3, func(id int64) string { return flop(int(id), 15, "S") })
	b.drain(t, p)
	b.enqueueSeq(t, 4, 6, func(id int64) string { return flop(int(id), 15, "S") })
	b.drain(t, p)
	require.Less(t, time.Since(locked), hold, "processing did not wait for the lock")
	for id := int64(1); id <= 6; id++ {
		require.Equal(t, "SUCCEEDED", b.row(t, id).Status)
	}
	marked := func(id int64) bool {
		var at *time.Time
		require.NoError(t, b.mb.SQL.QueryRowContext(ctx, `SELECT CMINMSGS_DATE_PROCESSED FROM cminmsgs WHERE CMINMSGS_ID = ?`, id).Scan(&at))
		return at != nil
	}
	require.Eventually(t, func() bool { return marked(5) }, 10*time.Second, 10*time.Millisecond, "a later batch is marked while the lock is held")
	require.False(t, marked(2), "the locked row cannot be marked yet")

	time.Sleep(time.Until(locked.Add(hold))) // the other session's hold, not a wait for our code
	_, err = conn.ExecContext(ctx, `ROLLBACK`)
	require.NoError(t, err)
	p.WaitMarkers()
	if !marked(2) {
		// The immediate attempt gave up within its bound: the sweep owes it (INV-8c).
		require.True(t, b.row(t, 2).Owed, "the marker is still owed")
	}
}

// A step says whether open rows wait beyond its batch (More): the run loop reads the head again
// at once only then; after a batch that took the whole run it waits for ingest's wake-up, so an
// arrival rate costs no head reads that find nothing.
func TestStepSaysWhetherMoreWait(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.cfg.Batch = 2
	b.procs[sis.KindFlightUpdate] = &recorder{}
	b.enqueueSeq(t, 1, 3, func(id int64) string { return flop(int(id), 15, "S") })
	p := b.pump(t)
	ctx := context.Background()
	res, err := p.Step(ctx, b.lease)
	require.NoError(t, err)
	require.Equal(t, 2, res.Processed)
	require.True(t, res.More, "a full batch: more may wait")
	res, err = p.Step(ctx, b.lease)
	require.NoError(t, err)
	require.Equal(t, 1, res.Processed)
	require.False(t, res.More, "the batch took the whole run")
	res, err = p.Step(ctx, b.lease)
	require.NoError(t, err)
	require.True(t, res.Idle)
}
