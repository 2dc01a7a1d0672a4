package ingest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/msgx/msgx/pkg/dev/corpus"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/leader"
	"github.com/msgx/msgx/pkg/status"
)

func TestContiguousRowsAreEnqueuedWithTheirCopy(t *testing.T) {
	t.Parallel()
	b := setup(t, testConfig)
	var ids []int64
	for i := range 12 { // more than two full batches of 5
		ids = append(ids, b.insert(t, strings.Repeat("x", i)+"<MSG/>"))
	}
	b.drain(t, b.ing)
	require.Equal(t, ids, b.ids(t))
	requireCursor(t, cursor{W: ids[11]}, b.cursor(t))
	got := b.stored(t)
	for i, id := range ids {
		text := strings.Repeat("x", i) + "<MSG/>"
		require.Equal(t, text, *got[id].Raw)
		require.Equal(t, sha(text), got[id].Sum)
		require.Equal(t, "PENDING", got[id].Status)
		require.False(t, got[id].Late)
		require.Equal(t, time.Date(2026, 12, 2, 9, 0, 1, 0, time.UTC), *got[id].Received)
	}
	require.Equal(t, float64(ids[11]), metric(t, b.reg, "msgx_ingest_watermark"))
	require.Equal(t, 12.0, metric(t, b.reg, "msgx_ingest_rows_enqueued_total", "source", "poll"))
	require.Equal(t, 0.0, metric(t, b.reg, "msgx_ingest_last_success_poll_age_seconds"))
	b.clock.Advance(3 * time.Second)
	require.Equal(t, 3.0, metric(t, b.reg, "msgx_ingest_last_success_poll_age_seconds"))

	// A rescan from W=0 (a restart that lost its cursor) is idempotent.
	_, err := b.pg.Pool.Exec(context.Background(), `UPDATE inbox_cursor SET watermark = 0`)
	require.NoError(t, err)
	b.drain(t, b.newIngester(t))
	require.Equal(t, ids, b.ids(t))
}

func TestNullDateReceivedIsStoredAsNull(t *testing.T) {
	t.Parallel()
	b := setup(t, testConfig)
	_, err := b.mb.SQL.Exec(`INSERT INTO cminmsgs (CMINMSGS_CLOB_MSG) VALUES ('<MSG/>')`)
	require.NoError(t, err)
	b.drain(t, b.ing)
	got := b.stored(t)
	require.Len(t, got, 1)
	require.Nil(t, got[1].Received)
}

func TestOutOfOrderCommitsAreEnqueuedInOrder(t *testing.T) {
	t.Parallel()
	b := setup(t, testConfig)
	ctx := context.Background()
	first := b.insert(t, "<MSG>before</MSG>")

	txLow, err := b.mb.SQL.BeginTx(ctx, nil)
	require.NoError(t, err)
	defer func() { _ = txLow.Rollback() }()
	txHigh, err := b.mb.SQL.BeginTx(ctx, nil)
	require.NoError(t, err)
	defer func() { _ = txHigh.Rollback() }()
	low := insertWith(t, txLow, "<MSG>low</MSG>")
	high := insertWith(t, txHigh, "<MSG>high</MSG>")
	require.Less(t, low, high)
	require.NoError(t, txHigh.Commit()) // the higher id becomes visible first

	step(t, b.ing)
	require.Equal(t, []int64{first}, b.ids(t), "the higher id must wait for the lower one")
	requireCursor(t, cursor{W: first, GapStart: low, FirstSeen: t0}, b.cursor(t))
	require.Equal(t, 1.0, metric(t, b.reg, "msgx_ingest_open_gaps", "state", "blocking"))
	b.clock.Advance(5 * time.Second)
	require.Equal(t, 5.0, metric(t, b.reg, "msgx_ingest_oldest_gap_age_seconds", "state", "blocking"))
	require.False(t, step(t, b.ing))
	require.Equal(t, []int64{first}, b.ids(t))

	require.NoError(t, txLow.Commit())
	require.True(t, step(t, b.ing))
	require.Equal(t, []int64{first, low, high}, b.ids(t))
	requireCursor(t, cursor{W: high}, b.cursor(t))
	require.Empty(t, b.ledger(t))
	require.Equal(t, 0.0, metric(t, b.reg, "msgx_ingest_open_gaps", "state", "blocking"))
}

func TestRolledBackInsertIsSkippedAfterMaxCommitDelay(t *testing.T) {
	t.Parallel()
	b := setup(t, testConfig)
	ctx := context.Background()
	a := b.insert(t, "<MSG>a</MSG>")
	tx, err := b.mb.SQL.BeginTx(ctx, nil)
	require.NoError(t, err)
	lost := insertWith(t, tx, "<MSG>rolled back</MSG>")
	require.NoError(t, tx.Rollback())
	c := b.insert(t, "<MSG>c</MSG>")
	d := b.insert(t, "<MSG>d</MSG>")

	step(t, b.ing)
	requireCursor(t, cursor{W: a, GapStart: lost, FirstSeen: t0}, b.cursor(t))
	b.clock.Advance(testConfig.MaxCommitDelay - time.Millisecond)
	require.False(t, step(t, b.ing))
	require.Equal(t, a, b.cursor(t).W, "W stays below the gap until the max commit delay has passed")
	require.Equal(t, []int64{a}, b.ids(t))

	b.clock.Advance(time.Millisecond)
	require.True(t, step(t, b.ing))
	requireCursor(t, cursor{W: d}, b.cursor(t))
	require.Equal(t, []int64{a, c, d}, b.ids(t), "only the missing id is skipped")
	led := b.ledger(t)
	require.Len(t, led, 1)
	require.Equal(t, lost, led[0].ID)
	require.True(t, led[0].FirstSeen.Equal(t0))
	require.True(t, led[0].SkippedAt.Equal(b.clock.Now()))
	require.Nil(t, led[0].FoundAt)
	require.Equal(t, 1.0, metric(t, b.reg, "msgx_ingest_gap_ids_skipped_total"))
	require.Equal(t, 1.0, metric(t, b.reg, "msgx_ingest_open_gaps", "state", "reprobing"))
	require.Equal(t, 30.0, metric(t, b.reg, "msgx_ingest_oldest_gap_age_seconds", "state", "reprobing"))

	// A new gap after the old one was settled gets its own full window.
	tx2, err := b.mb.SQL.BeginTx(ctx, nil)
	require.NoError(t, err)
	lost2 := insertWith(t, tx2, "<MSG>rolled back too</MSG>")
	require.NoError(t, tx2.Rollback())
	e := b.insert(t, "<MSG>e</MSG>")
	b.clock.Advance(time.Minute)
	step(t, b.ing)
	requireCursor(t, cursor{W: d, GapStart: lost2, FirstSeen: b.clock.Now()}, b.cursor(t))
	b.clock.Advance(testConfig.MaxCommitDelay - time.Millisecond)
	step(t, b.ing)
	require.Equal(t, d, b.cursor(t).W)
	b.clock.Advance(time.Millisecond)
	step(t, b.ing)
	requireCursor(t, cursor{W: e}, b.cursor(t))
	require.Equal(t, []int64{a, c, d, e}, b.ids(t))
}

func TestGapFilledInTimeGivesTheNextGapAFullWindow(t *testing.T) {
	t.Parallel()
	b := setup(t, testConfig)
	ctx := context.Background()
	tx1, err := b.mb.SQL.BeginTx(ctx, nil)
	require.NoError(t, err)
	defer func() { _ = tx1.Rollback() }()
	id1 := insertWith(t, tx1, "<MSG>1</MSG>")
	id2 := b.insert(t, "<MSG>2</MSG>")

	step(t, b.ing) // gap at id1, first seen t0
	b.clock.Advance(20 * time.Second)
	require.NoError(t, tx1.Commit())
	// A new gap appears after the old one filled: id3 is allocated only now.
	tx3, err := b.mb.SQL.BeginTx(ctx, nil)
	require.NoError(t, err)
	defer func() { _ = tx3.Rollback() }()
	id3 := insertWith(t, tx3, "<MSG>3</MSG>")
	id4 := b.insert(t, "<MSG>4</MSG>")
	step(t, b.ing) // id1, id2 enqueued; the gap at id3 is first seen now (t0+20s)
	requireCursor(t, cursor{W: id2, GapStart: id3, FirstSeen: t0.Add(20 * time.Second)}, b.cursor(t))
	b.clock.Advance(20 * time.Second) // 40s after the old gap was seen, 20s after the new one
	step(t, b.ing)
	require.Equal(t, id2, b.cursor(t).W, "the new gap has its own full window")
	require.NoError(t, tx3.Commit())
	step(t, b.ing)
	require.Equal(t, []int64{id1, id2, id3, id4}, b.ids(t))
	require.Empty(t, b.ledger(t))
}

// Every missing id's window counts from when it was first seen missing, not from when W
// reaches it: two gaps seen together age together (otherwise each would wait a window in turn).
func TestGapAgeCountsFromFirstSeen(t *testing.T) {
	t.Parallel()
	b := setup(t, testConfig)
	ctx := context.Background()
	tx1, err := b.mb.SQL.BeginTx(ctx, nil)
	require.NoError(t, err)
	defer func() { _ = tx1.Rollback() }()
	id1 := insertWith(t, tx1, "<MSG>1</MSG>")
	id2 := b.insert(t, "<MSG>2</MSG>")
	tx3, err := b.mb.SQL.BeginTx(ctx, nil)
	require.NoError(t, err)
	defer func() { _ = tx3.Rollback() }()
	id3 := insertWith(t, tx3, "<MSG>3</MSG>")
	id4 := b.insert(t, "<MSG>4</MSG>")

	step(t, b.ing) // id1 and id3 both first seen missing at t0
	b.clock.Advance(20 * time.Second)
	require.NoError(t, tx1.Commit())
	step(t, b.ing)
	requireCursor(t, cursor{W: id2, GapStart: id3, FirstSeen: t0}, b.cursor(t))
	// The gap's readers judge it by this ingest's limit, which it recorded with the cursor.
	for _, tc := range []struct {
		at      time.Duration
		overdue bool
	}{{testConfig.MaxCommitDelay, false}, {testConfig.MaxCommitDelay + 31*time.Second, true}} {
		s, err := status.Read(ctx, b.pg.Pool, t0.Add(tc.at))
		require.NoError(t, err)
		require.NotNil(t, s.GapLimit)
		require.Equal(t, testConfig.MaxCommitDelay.Seconds(), *s.GapLimit)
		require.Equal(t, tc.overdue, s.GapOverdue(), "gap %s old", tc.at)
	}
	b.clock.Advance(testConfig.MaxCommitDelay - 20*time.Second)
	step(t, b.ing) // id3's window, counted from t0, ran out: skipped, id4 enqueued
	require.Equal(t, id4, b.cursor(t).W)
	require.Equal(t, []int64{id1, id2, id4}, b.ids(t))
	ledger := b.ledger(t)
	require.Len(t, ledger, 1)
	require.Equal(t, id3, ledger[0].ID)
	require.True(t, ledger[0].FirstSeen.Equal(t0), "the ledger keeps when the id was first seen missing")
}

func TestLateRowIsFoundByReprobe(t *testing.T) {
	t.Parallel()
	b := setup(t, testConfig)
	ctx := context.Background()
	tx, err := b.mb.SQL.BeginTx(ctx, nil)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback() }()
	late := insertWith(t, tx, "<MSG>slow writer</MSG>")
	next := b.insert(t, "<MSG>next</MSG>")

	step(t, b.ing)
	b.clock.Advance(testConfig.MaxCommitDelay)
	step(t, b.ing)
	require.Equal(t, []int64{next}, b.ids(t))
	require.Equal(t, next, b.cursor(t).W)

	require.NoError(t, tx.Commit()) // commits after its id was skipped
	b.clock.Advance(testConfig.ReprobeEvery - time.Millisecond)
	require.False(t, step(t, b.ing), "not re-probed before its period")
	b.clock.Advance(time.Millisecond)
	require.True(t, step(t, b.ing))

	got := b.stored(t)
	require.Len(t, got, 2)
	require.True(t, got[late].Late)
	require.Equal(t, "<MSG>slow writer</MSG>", *got[late].Raw)
	require.Equal(t, "PENDING", got[late].Status)
	require.False(t, got[next].Late)
	led := b.ledger(t)
	require.Len(t, led, 1)
	require.NotNil(t, led[0].FoundAt)
	require.True(t, led[0].FoundAt.Equal(b.clock.Now()))
	require.Equal(t, next, b.cursor(t).W, "W does not move back")
	require.Equal(t, 1.0, metric(t, b.reg, "msgx_ingest_late_rows_total"))
	require.Equal(t, 1.0, metric(t, b.reg, "msgx_ingest_rows_enqueued_total", "source", "late"))
	require.Equal(t, 0.0, metric(t, b.reg, "msgx_ingest_open_gaps", "state", "reprobing"))

	// The late row is the pump's head: the smallest open msg_id ≤ W.
	var head int64
	require.NoError(t, b.pg.Pool.QueryRow(ctx,
		`SELECT min(msg_id) FROM proc_state WHERE status IN ('PENDING','FAILED') AND msg_id <= (SELECT watermark FROM inbox_cursor)`).Scan(&head))
	require.Equal(t, late, head)

	// Found once: later probes change nothing.
	b.clock.Advance(testConfig.ReprobeEvery)
	require.False(t, step(t, b.ing))
	require.Equal(t, 1.0, metric(t, b.reg, "msgx_ingest_late_rows_total"))
}

func TestReprobeWindowEnds(t *testing.T) {
	t.Parallel()
	b := setup(t, testConfig)
	ctx := context.Background()
	tx, err := b.mb.SQL.BeginTx(ctx, nil)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback() }()
	insertWith(t, tx, "<MSG>very slow</MSG>")
	next := b.insert(t, "<MSG>next</MSG>")
	step(t, b.ing)
	b.clock.Advance(testConfig.MaxCommitDelay)
	step(t, b.ing)
	require.NoError(t, tx.Commit())
	b.clock.Advance(testConfig.ReprobeWindow)
	require.False(t, step(t, b.ing), "past the re-probe window the ledger entry is no longer probed")
	require.Equal(t, []int64{next}, b.ids(t))
	require.Equal(t, 0.0, metric(t, b.reg, "msgx_ingest_open_gaps", "state", "reprobing"))
}

// A step that dies after its inserts, before its commit, commits nothing, and the next step (of
// this Ingester or a new one) duplicates nothing. The step is held there from outside: the test
// holds the cursor row's lock, so the step waits on its last statement (the cursor move), and
// then cancels it or terminates its backend.
func TestCrashBetweenReadAndCommit(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		crash func(t *testing.T, b *bundle, pid int32, cancel context.CancelFunc)
	}{
		{"transaction cancelled", func(_ *testing.T, _ *bundle, _ int32, cancel context.CancelFunc) { cancel() }},
		{"backend killed", func(t *testing.T, b *bundle, pid int32, _ context.CancelFunc) {
			_, err := b.pg.Pool.Exec(context.Background(), `SELECT pg_terminate_backend($1)`, pid)
			require.NoError(t, err)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, testConfig)
			var ids []int64
			for i := range 8 {
				ids = append(ids, b.insert(t, "<MSG>"+strings.Repeat("y", i)+"</MSG>"))
			}
			step(t, b.ing) // first batch of 5 committed
			require.Equal(t, ids[:5], b.ids(t))

			bg := context.Background()
			hold, err := b.pg.Pool.Begin(bg)
			require.NoError(t, err)
			defer func() { _ = hold.Rollback(bg) }()
			var holder int32
			require.NoError(t, hold.QueryRow(bg, `SELECT pg_backend_pid() FROM inbox_cursor FOR UPDATE`).Scan(&holder))

			ctx, cancel := context.WithCancel(bg)
			defer cancel()
			done := make(chan error, 1)
			go func() { _, err := b.ing.Step(ctx); done <- err }()
			var pid int32
			require.Eventually(t, func() bool {
				err := b.pg.Pool.QueryRow(bg, `SELECT pid FROM pg_stat_activity
				 WHERE $1 = ANY(pg_blocking_pids(pid)) AND query LIKE 'UPDATE inbox_cursor%'`, holder).Scan(&pid)
				return err == nil
			}, 10*time.Second, 5*time.Millisecond, "the step waits on its cursor move")
			require.Equal(t, ids[:5], b.ids(t), "the step's inserts are not visible before its commit")
			tc.crash(t, b, pid, cancel)
			require.Error(t, <-done)
			require.NoError(t, hold.Rollback(bg))
			require.Equal(t, ids[:5], b.ids(t), "nothing of the crashed step is committed")
			require.Equal(t, ids[4], b.cursor(t).W)

			// Restart: a new Ingester (new process) resumes from the persisted cursor.
			b.drain(t, b.newIngester(t))
			require.Equal(t, ids, b.ids(t))
			require.Equal(t, ids[7], b.cursor(t).W)
			// The crashed Ingester itself recovers too (it reloads its cursor) and duplicates nothing.
			b.drain(t, b.ing)
			require.Equal(t, ids, b.ids(t))
		})
	}
}

func TestFencedStepWritesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t, testConfig)
	b.insert(t, "<MSG/>")
	_, err := b.pg.Pool.Exec(context.Background(), `UPDATE leader_lease SET epoch = 2 WHERE role = 'ingest'`)
	require.NoError(t, err)
	_, err = b.ing.Step(context.Background())
	require.ErrorIs(t, err, leader.ErrFenced)
	require.Empty(t, b.ids(t))
	requireCursor(t, cursor{}, b.cursor(t))
	require.Equal(t, 1.0, metric(t, b.reg, "msgx_ingest_poll_errors_total", "store", "postgres"))
	// Run ends with ErrFenced so the elector steps down.
	require.ErrorIs(t, b.newIngester(t).Run(context.Background()), leader.ErrFenced)
}

func TestMailboxOutageStopsOnlyDiscovery(t *testing.T) {
	t.Parallel()
	b := setup(t, testConfig)
	id := b.insert(t, "<MSG/>")
	b.drain(t, b.ing)
	require.NoError(t, b.box.Close()) // the mailbox is gone
	_, err := b.ing.Step(context.Background())
	require.Error(t, err)
	require.Equal(t, 1.0, metric(t, b.reg, "msgx_ingest_poll_errors_total", "store", "mailbox"))
	// The copy in PostgreSQL stays readable for the processor.
	got := b.stored(t)
	require.Equal(t, "<MSG/>", *got[id].Raw)
}

func TestUnstorableTextDoesNotBlockIngest(t *testing.T) {
	t.Parallel()
	b := setup(t, testConfig)
	bad := b.insert(t, "<MSG>nul\x00byte</MSG>")
	good := b.insert(t, "<MSG/>")
	b.drain(t, b.ing)
	got := b.stored(t)
	require.Nil(t, got[bad].Raw)
	require.Equal(t, sha("<MSG>nul\x00byte</MSG>"), got[bad].Sum)
	require.Equal(t, "<MSG/>", *got[good].Raw)
	require.Equal(t, 1.0, metric(t, b.reg, "msgx_ingest_unstorable_rows_total"))
}

// samplesDir holds the real SIS samples (testdata/sis-samples, or $MSGX_SIS_SAMPLES).
var samplesDir = corpus.Dir()

func samples(t testing.TB) map[string]string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(samplesDir, "*", "*.xml"))
	require.NoError(t, err)
	require.NotEmpty(t, paths, "no samples under %s", samplesDir)
	out := map[string]string{}
	for _, p := range paths {
		raw, err := os.ReadFile(p)
		require.NoError(t, err)
		out[p] = string(raw)
	}
	return out
}

// bigMessage is a 4 MB message with Chinese text, tabs and trailing newlines.
func bigMessage() string {
	var sb strings.Builder
	sb.WriteString("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<MSG>\n\t<META><SNDR>AODB</SNDR><SEQN>1</SEQN><DTTM>20261202080000</DTTM><TYPE>SCHD</TYPE><STYP>DNLD</STYP></META>\n\t<SCHD>\n")
	for sb.Len() < 4<<20 {
		sb.WriteString("\t\t<FLTR><FLID>15</FLID><REMC>航班延误 备注\t混合 tab</REMC></FLTR>\r\n")
	}
	sb.WriteString("\t</SCHD>\n</MSG>\n\n\n")
	return sb.String()
}

func TestStoredCopyIsByteIdentical(t *testing.T) {
	t.Parallel()
	b := setup(t, testConfig)
	want := map[int64]string{}
	for _, text := range samples(t) {
		want[b.insert(t, text)] = text
	}
	big := bigMessage()
	require.Greater(t, len(big), 4<<20)
	want[b.insert(t, big)] = big
	b.drain(t, b.ing)

	got := b.stored(t)
	require.Len(t, got, len(want))
	for id, text := range want {
		require.NotNil(t, got[id].Raw, "msg %d", id)
		require.True(t, *got[id].Raw == text, "msg %d differs from the mailbox text", id)
		require.Equal(t, sha(text), got[id].Sum, "msg %d", id)
	}
	// And through PostgreSQL's own hash of the stored text.
	var mismatches int
	require.NoError(t, b.pg.Pool.QueryRow(context.Background(),
		`SELECT count(*) FROM proc_state WHERE sha256(convert_to(raw, 'UTF8')) <> raw_sha256`).Scan(&mismatches))
	require.Zero(t, mismatches)
}

func TestRunStopsOnCancel(t *testing.T) {
	t.Parallel()
	b := setup(t, testConfig)
	id := b.insert(t, "<MSG/>")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.ing.Run(ctx) }()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		var n int
		assert.NoError(c, b.pg.Pool.QueryRow(context.Background(), `SELECT count(*) FROM proc_state WHERE msg_id = $1`, id).Scan(&n))
		assert.Equal(c, 1, n, "row not enqueued by Run")
	}, 10*time.Second, 5*time.Millisecond)
	cancel()
	err := <-done
	require.True(t, err == nil || errors.Is(err, context.Canceled), "Run: %v", err)
}

// Under load ingest gathers: after a poll that enqueued a tenth of MSGX_CLAIM_BATCH or more it
// waits MSGX_INGEST_GATHER before the next poll instead of the poll interval, so every stage
// after it commits fewer, larger batches at a high arrival rate; an idle or quiet mailbox is
// still polled at the poll interval.
func TestIngestGathersUnderLoad(t *testing.T) {
	t.Parallel()
	cfg := testConfig
	cfg.ClaimBatch, cfg.Gather = 20, 80*time.Millisecond
	b := setup(t, cfg)
	require.Equal(t, cfg.PollInterval, b.ing.pollWait(), "idle: the poll interval")
	b.insert(t, "<MSG/>")
	_, err := b.ing.Step(context.Background())
	require.NoError(t, err)
	require.Equal(t, cfg.PollInterval, b.ing.pollWait(), "one row: the poll interval")
	for range 2 {
		b.insert(t, "<MSG/>")
	}
	_, err = b.ing.Step(context.Background())
	require.NoError(t, err)
	require.Equal(t, cfg.Gather, b.ing.pollWait(), "a tenth of the claim batch: gather")
	_, err = b.ing.Step(context.Background())
	require.NoError(t, err)
	require.Equal(t, cfg.PollInterval, b.ing.pollWait(), "nothing new: the poll interval again")
}
