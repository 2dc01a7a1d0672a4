package ingest

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/msgx/msgx/pkg/clock"
	"github.com/msgx/msgx/pkg/dev/mailboxtest"
	"github.com/msgx/msgx/pkg/dev/testdb"
	"github.com/msgx/msgx/pkg/leader"
	"github.com/msgx/msgx/pkg/mailbox"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// t0 is the fake clock's start.
var t0 = time.Date(2026, 12, 2, 8, 0, 0, 0, time.UTC)

// testConfig is small and fast; tests move the fake clock past MaxCommitDelay and ReprobeEvery.
var testConfig = Config{
	PollInterval:   10 * time.Millisecond,
	ClaimBatch:     5,
	MaxCommitDelay: 30 * time.Second,
	ReprobeWindow:  24 * time.Hour,
	ReprobeEvery:   10 * time.Second,
	DBTimeout:      30 * time.Second,
}

// bundle is one test's world: a fresh PostgreSQL schema, a fresh mailbox database, a fake clock
// and an Ingester holding the ingest lease.
type bundle struct {
	pg      *testdb.DB
	mb      *mailboxtest.DB
	box     *mailbox.Mailbox
	clock   *clock.Fake
	reg     *prometheus.Registry
	metrics *Metrics
	lease   leader.Lease
	cfg     Config
	ing     *Ingester
}

func setup(t testing.TB, cfg Config) *bundle {
	t.Helper()
	b := &bundle{
		pg:    testdb.New(t),
		mb:    mailboxtest.New(t),
		clock: clock.NewFake(t0),
		reg:   prometheus.NewRegistry(),
		lease: leader.Lease{Role: "ingest", Epoch: 1},
		cfg:   cfg,
	}
	box, err := mailbox.Open(b.mb.DSN)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, box.Close()) })
	b.box = box
	b.metrics = NewMetrics(b.reg, b.clock)
	_, err = b.pg.Pool.Exec(context.Background(),
		`INSERT INTO leader_lease (role, epoch, holder, backend_pid, acquired_at, renewed_at) VALUES ('ingest', 1, 'test', 0, $1, $1)`, t0)
	require.NoError(t, err)
	b.ing = b.newIngester(t)
	return b
}

// newIngester is a fresh Ingester on the same databases (a restart, or a new leadership term).
func (b *bundle) newIngester(t testing.TB) *Ingester {
	t.Helper()
	ing, err := New(b.cfg, Deps{DB: b.pg.Pool, Mailbox: b.box, Fence: b.lease, Clock: b.clock, Metrics: b.metrics, Log: zerolog.Nop()})
	require.NoError(t, err)
	return ing
}

// insert commits one mailbox row with text and returns its id.
func (b *bundle) insert(t testing.TB, text string) int64 {
	t.Helper()
	return insertWith(t, b.mb.SQL, text)
}

type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

func insertWith(t testing.TB, db execer, text string) int64 {
	t.Helper()
	res, err := db.ExecContext(context.Background(),
		`INSERT INTO cminmsgs (CMINMSGS_CLOB_MSG, CMINMSGS_DATE_RECEIVED, CMINMSGS_STATUS) VALUES (?, ?, 'VALID')`,
		text, "2026-12-02 09:00:01")
	require.NoError(t, err)
	id, err := res.LastInsertId()
	require.NoError(t, err)
	return id
}

// drain steps until a step makes no progress (bounded).
func (b *bundle) drain(t testing.TB, ing *Ingester) {
	t.Helper()
	for range 100000 {
		progressed, err := ing.Step(context.Background())
		require.NoError(t, err)
		if !progressed {
			return
		}
	}
	t.Fatal("ingest did not settle")
}

// step runs one step and requires success.
func step(t testing.TB, ing *Ingester) bool {
	t.Helper()
	progressed, err := ing.Step(context.Background())
	require.NoError(t, err)
	return progressed
}

type stored struct {
	Raw      *string
	Bytes    []byte // raw_bytes: the mailbox bytes when the text copy is not them
	Sum      []byte
	Status   string
	Late     bool
	Received *time.Time
}

// stored returns every proc_state row by msg_id.
func (b *bundle) stored(t testing.TB) map[int64]stored {
	t.Helper()
	rows, err := b.pg.Pool.Query(context.Background(), `SELECT msg_id, raw, raw_bytes, raw_sha256, status, late, received_at FROM proc_state`)
	require.NoError(t, err)
	out := map[int64]stored{}
	for rows.Next() {
		var (
			id int64
			s  stored
		)
		require.NoError(t, rows.Scan(&id, &s.Raw, &s.Bytes, &s.Sum, &s.Status, &s.Late, &s.Received))
		out[id] = s
	}
	require.NoError(t, rows.Err())
	return out
}

func (b *bundle) ids(t testing.TB) []int64 {
	t.Helper()
	return b.pg.Int64s(t, `SELECT msg_id FROM proc_state ORDER BY msg_id`)
}

func (b *bundle) cursor(t testing.TB) cursor {
	t.Helper()
	c, err := loadCursor(context.Background(), b.pg.Pool)
	require.NoError(t, err)
	return c
}

type ledgerEntry struct {
	ID        int64
	FirstSeen time.Time
	SkippedAt time.Time
	FoundAt   *time.Time
}

func (b *bundle) ledger(t testing.TB) []ledgerEntry {
	t.Helper()
	rows, err := b.pg.Pool.Query(context.Background(), `SELECT msg_id, first_seen_at, skipped_at, found_at FROM inbox_gap ORDER BY msg_id`)
	require.NoError(t, err)
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[ledgerEntry])
	require.NoError(t, err)
	return out
}

// mailboxIDs returns every committed mailbox id.
func (b *bundle) mailboxIDs(t testing.TB) []int64 {
	t.Helper()
	rows, err := b.mb.SQL.QueryContext(context.Background(), `SELECT CMINMSGS_ID FROM cminmsgs ORDER BY CMINMSGS_ID`)
	require.NoError(t, err)
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		require.NoError(t, rows.Scan(&id))
		ids = append(ids, id)
	}
	require.NoError(t, rows.Err())
	return ids
}

func sha(s string) []byte {
	sum := sha256.Sum256([]byte(s))
	return sum[:]
}

// metric returns the value of the gauge or counter name with the given labels.
func metric(t testing.TB, reg *prometheus.Registry, name string, labels ...string) float64 {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	next:
		for _, m := range f.GetMetric() {
			want := map[string]string{}
			for i := 0; i+1 < len(labels); i += 2 {
				want[labels[i]] = labels[i+1]
			}
			for _, lp := range m.GetLabel() {
				if v, ok := want[lp.GetName()]; ok && v != lp.GetValue() {
					continue next
				}
			}
			return value(m)
		}
	}
	t.Fatalf("metric %s%v not found", name, labels)
	return 0
}

func value(m *dto.Metric) float64 {
	switch {
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Counter != nil:
		return m.Counter.GetValue()
	}
	panic(fmt.Sprintf("unsupported metric %v", m))
}

// requireCursor compares the watermark and the gap; the horizon is plan's detail (plan_test.go).
func requireCursor(t testing.TB, want, got cursor) {
	t.Helper()
	got.Horizon, want.Horizon = 0, 0
	require.True(t, want.equal(got), "cursor %+v, want %+v", got, want)
}
