package jobs_test

import (
	"context"
	"database/sql"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/msgx/msgx/pkg/clock"
	"github.com/msgx/msgx/pkg/dev/mailboxtest"
	"github.com/msgx/msgx/pkg/dev/testdb"
	"github.com/msgx/msgx/pkg/jobs"
	"github.com/msgx/msgx/pkg/leader"
	"github.com/msgx/msgx/pkg/mailbox"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// t0 is 08:00 airport time (UTC in these tests) on 2 December 2026.
var t0 = time.Date(2026, 12, 2, 8, 0, 0, 0, time.UTC)

var ctx = context.Background()

// bundle is one test's stage: fresh PostgreSQL schema and mailbox database, leases for jobs
// and processor, a fake clock, and a marker that counts and can be cut off.
type bundle struct {
	db     *testdb.DB
	mb     *mailboxtest.DB
	clock  *clock.Fake
	lease  leader.Lease
	please leader.Lease
	cfg    jobs.Config
	marker *switchMarker
}

func setup(t *testing.T) *bundle {
	t.Helper()
	return setupOn(t, testdb.New(t))
}

// setupOn is setup on a schema of the caller's (a server of its own).
func setupOn(t *testing.T, db *testdb.DB) *bundle {
	t.Helper()
	_, err := db.Pool.Exec(ctx, `INSERT INTO leader_lease VALUES ('jobs', 1, 'test', 0, $1, $1), ('processor', 1, 'test', 0, $1, $1)`, t0)
	require.NoError(t, err)
	mb := mailboxtest.New(t)
	real, err := mailbox.Open(mb.DSN)
	require.NoError(t, err)
	t.Cleanup(func() { _ = real.Close() })
	cfg := jobs.Defaults()
	cfg.RunBudget = time.Minute
	return &bundle{
		db: db, mb: mb, clock: clock.NewFake(t0),
		lease: leader.Lease{Role: "jobs", Epoch: 1}, please: leader.Lease{Role: "processor", Epoch: 1},
		cfg: cfg, marker: &switchMarker{up: real, written: map[int64]int{}},
	}
}

func (b *bundle) jobs(t *testing.T) *jobs.Jobs {
	t.Helper()
	j, err := jobs.New(b.cfg, b.db.Pool, b.marker, b.clock, jobs.NewMetrics(nil, b.clock), zerolog.Nop())
	require.NoError(t, err)
	return j
}

// switchMarker is the real mailbox, or during an outage a mailbox on a closed port, or failing
// with a given error; it counts every marker written per id.
type switchMarker struct {
	up   *mailbox.Mailbox
	mu   sync.Mutex
	down *mailbox.Mailbox
	fail error // set: every call fails with it
	// written counts MarkWritten outcomes per id.
	written map[int64]int
	calls   map[int64]int
}

func (s *switchMarker) outage(t *testing.T, on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !on {
		s.down = nil
		return
	}
	// Port 1 on loopback: connection refused at once, a real driver error.
	m, err := mailbox.Open("root@tcp(127.0.0.1:1)/nowhere?timeout=1s")
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close() })
	s.down = m
}

func (s *switchMarker) MarkEach(ctx context.Context, ids []int64, at time.Time, status string) (map[int64]mailbox.MarkOutcome, error) {
	s.mu.Lock()
	m := s.up
	if s.down != nil {
		m = s.down
	}
	if s.calls == nil {
		s.calls = map[int64]int{}
	}
	for _, id := range ids {
		s.calls[id]++
	}
	fail := s.fail
	s.mu.Unlock()
	if fail != nil {
		return nil, fail
	}
	out, err := m.MarkEach(ctx, ids, at, status)
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, o := range out {
		if o == mailbox.MarkWritten {
			s.written[id]++
		}
	}
	return out, err
}

// failWith makes every call fail with err (nil: no longer).
func (s *switchMarker) failWith(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail = err
}

func (s *switchMarker) writes(id int64) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.written[id]
}

// mailboxRow inserts a cminmsgs row with the given id (processed marker as given).
func (b *bundle) mailboxRow(t *testing.T, id int64, processed *time.Time) {
	t.Helper()
	_, err := b.mb.SQL.ExecContext(ctx, `INSERT INTO cminmsgs (CMINMSGS_ID, CMINMSGS_CLOB_MSG, CMINMSGS_DATE_RECEIVED, CMINMSGS_DATE_PROCESSED, CMINMSGS_STATUS)
		VALUES (?, 'x', ?, ?, 'VALID')`, id, t0, processed)
	require.NoError(t, err)
}

// mark returns the mailbox row's processed marker and status.
func (b *bundle) mark(t *testing.T, id int64) (*time.Time, string) {
	t.Helper()
	var at sql.NullTime
	var status sql.NullString
	require.NoError(t, b.mb.SQL.QueryRowContext(ctx, `SELECT CMINMSGS_DATE_PROCESSED, CMINMSGS_STATUS FROM cminmsgs WHERE CMINMSGS_ID = ?`, id).Scan(&at, &status))
	if !at.Valid {
		return nil, status.String
	}
	return &at.Time, status.String
}

// terminal inserts a proc_state row that became terminal at finished (status SUCCEEDED unless
// given) and owes its marker, as the processor's terminal statement leaves it.
func (b *bundle) terminal(t *testing.T, id int64, enqueued, finished time.Time, received *time.Time) {
	t.Helper()
	_, err := b.db.Pool.Exec(ctx, `INSERT INTO proc_state (msg_id, raw, status, attempts, enqueued_at, received_at, finished_at, backfill_next_at)
		VALUES ($1, 'x', 'SUCCEEDED', 1, $2, $3, $4, $4)`, id, enqueued, received, finished)
	require.NoError(t, err)
}

// open inserts a PENDING (or FAILED) proc_state row.
func (b *bundle) open(t *testing.T, id int64, status string) {
	t.Helper()
	_, err := b.db.Pool.Exec(ctx, `INSERT INTO proc_state (msg_id, raw, status, enqueued_at, next_attempt_at)
		VALUES ($1, 'x', $2, $3, CASE WHEN $2 = 'FAILED' THEN $3::timestamptz END)`, id, status, b.clock.Now())
	require.NoError(t, err)
}

type backfillRow struct {
	Outcome     *string
	Attempts    int
	Error       *string
	NextAt      *time.Time
	DoneAt      *time.Time
	AbandonedAt *time.Time
}

func (b *bundle) backfillRow(t *testing.T, id int64) backfillRow {
	t.Helper()
	var r backfillRow
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT backfill_outcome, backfill_attempts, backfill_error, backfill_next_at, backfill_done_at, backfill_abandoned_at
		FROM proc_state WHERE msg_id = $1`, id).Scan(&r.Outcome, &r.Attempts, &r.Error, &r.NextAt, &r.DoneAt, &r.AbandonedAt))
	return r
}

func (b *bundle) count(t *testing.T, q string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, b.db.Pool.QueryRow(ctx, q, args...).Scan(&n))
	return n
}
