package ingest

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/mailbox"
	"github.com/msgx/msgx/pkg/roles"
)

// The gap proof reads InnoDB's transaction list, which is the whole server's: these tests do not
// run beside the package's other tests (no t.Parallel), whose open transactions would hold it.

// proofBundle is a bundle whose Ingester reads the mailbox as msgx's ingest user, with or
// without the PROCESS privilege, and is given the transaction list.
func proofBundle(t *testing.T, process bool) *bundle {
	t.Helper()
	return proofBundleWith(t, process, zerolog.Nop(), func(box *mailbox.Mailbox) TrxSource { return box })
}

// proofBundleWith is proofBundle logging to log, its Ingester given the transaction list of
// source(the ingest user's mailbox).
func proofBundleWith(t *testing.T, process bool, log zerolog.Logger, source func(*mailbox.Mailbox) TrxSource) *bundle {
	t.Helper()
	b := setup(t, testConfig)
	users := b.mb.Users(t)
	require.NoError(t, roles.ApplyMySQL(context.Background(), b.mb.SQL,
		roles.MySQLOptions{Database: b.mb.Name, Prefix: users.Prefix, IngestProcess: process}))
	box, err := mailbox.Open(users.DSN(roles.Ingest))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, box.Close()) })
	b.ing, err = New(b.cfg, Deps{DB: b.pg.Pool, Mailbox: box, Transactions: source(box), Fence: b.lease, Clock: b.clock, Metrics: b.metrics, Log: log})
	require.NoError(t, err)
	return b
}

// stepUntil steps (the fake clock standing still, so no gap can age) until cond holds. The
// transaction list is InnoDB's copy, refreshed only after 100 ms unread, so this waits real time.
func (b *bundle) stepUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	var err error
	require.Eventually(t, func() bool {
		if _, err = b.ing.Step(context.Background()); err != nil {
			return true
		}
		return cond()
	}, 20*time.Second, 10*time.Millisecond, what)
	require.NoError(t, err)
}

func (b *bundle) proofReads(t *testing.T, outcome proofOutcome) float64 {
	return metric(t, b.reg, "msgx_ingest_gap_proof_reads_total", "outcome", string(outcome))
}

func (b *bundle) passedBy(t *testing.T) map[int64]passedBy {
	t.Helper()
	rows, err := b.pg.Pool.Query(context.Background(), `SELECT msg_id, passed_by FROM inbox_gap`)
	require.NoError(t, err)
	defer rows.Close()
	out := map[int64]passedBy{}
	for rows.Next() {
		var (
			id int64
			by string
		)
		require.NoError(t, rows.Scan(&id, &by))
		out[id] = passedBy(by)
	}
	require.NoError(t, rows.Err())
	return out
}

// heldGap commits a, holds an insert open in its own transaction, and commits c after it.
func (b *bundle) heldGap(t *testing.T) (a, held, c int64, rollback, commit func()) {
	t.Helper()
	a = b.insert(t, "<MSG>a</MSG>")
	tx, err := b.mb.SQL.BeginTx(context.Background(), nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = tx.Rollback() })
	held = insertWith(t, tx, "<MSG>held</MSG>")
	c = b.insert(t, "<MSG>c</MSG>")
	require.Less(t, held, c)
	return a, held, c, func() { require.NoError(t, tx.Rollback()) }, func() { require.NoError(t, tx.Commit()) }
}

func TestGapProvedOnceTheHoldingTransactionRollsBack(t *testing.T) {
	b := proofBundle(t, true)
	a, held, c, rollback, _ := b.heldGap(t)

	b.stepUntil(t, "the open transaction blocks two proofs", func() bool { return b.proofReads(t, proofBlocked) >= 2 })
	require.Equal(t, a, b.cursor(t).W, "not passed while the transaction that allocated the id is open")
	require.Equal(t, []int64{a}, b.ids(t))
	require.Zero(t, b.proofReads(t, proofProved))

	rollback()
	b.stepUntil(t, "the gap is proved and passed", func() bool { return b.cursor(t).W == c })
	require.Equal(t, []int64{a, c}, b.ids(t))
	require.Equal(t, map[int64]passedBy{held: passedProved}, b.passedBy(t))
	require.True(t, b.clock.Now().Equal(t0), "passed without ageing: the fake clock never moved")
	require.Equal(t, 1.0, metric(t, b.reg, "msgx_ingest_gap_ids_passed_total", "by", "proved"))
	require.Equal(t, 0.0, metric(t, b.reg, "msgx_ingest_gap_ids_passed_total", "by", "aged"))
	require.Equal(t, 1.0, metric(t, b.reg, "msgx_ingest_gap_ids_skipped_total"))
}

func TestGapHeldByACommittingTransactionIsIngestedInOrder(t *testing.T) {
	b := proofBundle(t, true)
	a, held, c, _, commit := b.heldGap(t)

	b.stepUntil(t, "the open transaction blocks the proof", func() bool { return b.proofReads(t, proofBlocked) >= 2 })
	require.Equal(t, a, b.cursor(t).W)
	commit()
	b.stepUntil(t, "the held row is ingested", func() bool { return b.cursor(t).W == c })
	require.Equal(t, []int64{a, held, c}, b.ids(t))
	require.Empty(t, b.ledger(t))
	require.False(t, b.stored(t)[held].Late)
}

func TestGapAgesWithoutProcess(t *testing.T) {
	b := proofBundle(t, false)
	a, held, c, rollback, _ := b.heldGap(t)
	rollback()

	b.stepUntil(t, "the account is refused the transaction list", func() bool { return b.proofReads(t, proofUnavailable) >= 1 })
	require.Equal(t, a, b.cursor(t).W)
	b.clock.Advance(testConfig.MaxCommitDelay - time.Millisecond)
	step(t, b.ing)
	require.Equal(t, a, b.cursor(t).W, "W stays below the gap until the max commit delay has passed")
	b.clock.Advance(time.Millisecond)
	step(t, b.ing)
	require.Equal(t, c, b.cursor(t).W)
	require.Equal(t, map[int64]passedBy{held: passedAged}, b.passedBy(t))
	require.Equal(t, 1.0, metric(t, b.reg, "msgx_ingest_gap_ids_passed_total", "by", "aged"))
	require.Zero(t, b.proofReads(t, proofProved)+b.proofReads(t, proofBlocked))
}

// A transaction held open past the max commit delay: the gap ages as before (nothing proves it),
// and the row, committed a minute after its insert, is found by the re-probe: late, never lost.
func TestGapHeldPastTheDelayEndsWithTheRowProcessedLate(t *testing.T) {
	b := proofBundle(t, true)
	a, held, c, _, commit := b.heldGap(t)

	b.stepUntil(t, "the open transaction blocks the proof", func() bool { return b.proofReads(t, proofBlocked) >= 1 })
	b.clock.Advance(testConfig.MaxCommitDelay)
	step(t, b.ing)
	require.Equal(t, c, b.cursor(t).W)
	require.Equal(t, map[int64]passedBy{held: passedAged}, b.passedBy(t))

	b.clock.Advance(time.Minute - testConfig.MaxCommitDelay)
	commit()
	b.clock.Advance(testConfig.ReprobeEvery)
	require.True(t, step(t, b.ing))
	require.Equal(t, []int64{a, held, c}, b.ids(t))
	require.True(t, b.stored(t)[held].Late)
	require.Equal(t, 1.0, metric(t, b.reg, "msgx_ingest_late_rows_total"))
}

// A prepared XA transaction may still commit its ids whatever the list shows: no proof while one
// exists, even after the session that prepared it is gone.
func TestNoProofWhileAnXATransactionIsPrepared(t *testing.T) {
	b := proofBundle(t, true)
	ctx := context.Background()
	a := b.insert(t, "<MSG>a</MSG>")
	xa, err := sql.Open("mysql", b.mb.DSN) // its own pool, closed to leave the transaction detached
	require.NoError(t, err)
	conn, err := xa.Conn(ctx)
	require.NoError(t, err)
	xid := "'msgx-gapproof-" + b.mb.Name + "'"
	for _, stmt := range []string{"XA START " + xid, ""} {
		if stmt == "" {
			insertWith(t, conn, "<MSG>xa</MSG>")
			continue
		}
		_, err = conn.ExecContext(ctx, stmt)
		require.NoError(t, err)
	}
	for _, stmt := range []string{"XA END " + xid, "XA PREPARE " + xid} {
		_, err = conn.ExecContext(ctx, stmt)
		require.NoError(t, err)
	}
	require.NoError(t, conn.Close())
	require.NoError(t, xa.Close()) // the session ends; the prepared transaction stays
	t.Cleanup(func() { _, _ = b.mb.SQL.Exec("XA ROLLBACK " + xid) })
	c := b.insert(t, "<MSG>c</MSG>")

	b.stepUntil(t, "the prepared transaction stops the proof", func() bool { return b.proofReads(t, proofXA) >= 2 })
	require.Equal(t, a, b.cursor(t).W)
	require.Zero(t, b.proofReads(t, proofProved))

	_, err = b.mb.SQL.Exec("XA ROLLBACK " + xid)
	require.NoError(t, err)
	b.stepUntil(t, "the gap is proved once the XA transaction rolled back", func() bool { return b.cursor(t).W == c })
	require.Len(t, b.passedBy(t), 1)
	require.Contains(t, b.passedBy(t), a+1)
	require.Equal(t, passedProved, b.passedBy(t)[a+1])
}

// TestPropertyProofSkipsNoIdThatCommits: random inserts, commits, rollbacks and autocommit
// inserts from several connections, interleaved with steps while the fake clock stands still (so
// no gap can age: every gap passed is proved). No id is ever skipped while its transaction is
// open, so no committed row is ever late, and every committed row is enqueued once.
func TestPropertyProofSkipsNoIdThatCommits(t *testing.T) {
	b := proofBundle(t, true)
	ctx := context.Background()
	seed := *seedFlag
	if seed == 0 {
		seed = rand.Uint64()
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("seed %d: rerun with go test -run TestPropertyProofSkipsNoIdThatCommits -ingest.seed=%d", seed, seed)
		}
	})
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	writers := openWriters(t, b, 3)
	committed, skippedOpen := map[int64]bool{}, map[int64]bool{}
	n := 0
	// Until a dozen reads of the list proved or were blocked, a few of them proving (the list is
	// read at most every mailbox.TrxListIdle, real time).
	deadline := time.Now().Add(60 * time.Second)
	for b.proofReads(t, proofProved) < 3 || b.proofReads(t, proofProved)+b.proofReads(t, proofBlocked) < 12 {
		require.True(t, time.Now().Before(deadline), "too few proofs in 60 s")
		w := writers[rng.IntN(len(writers))]
		op := rng.IntN(10)
		if w == writers[0] && op >= 2 && op < 5 && rng.IntN(30) > 0 {
			op = 9 // the first writer's transactions stay open across many reads of the list
		}
		switch {
		case op < 2:
			if w.tx == nil {
				tx, err := w.conn.BeginTx(ctx, nil)
				require.NoError(t, err)
				w.tx = tx
			}
			n++
			w.ids = append(w.ids, insertWith(t, w.tx, fmt.Sprintf("<MSG>%d</MSG>", n)))
		case op < 4 && w.tx != nil:
			w.commit(t, committed)
		case op < 5 && w.tx != nil:
			require.NoError(t, w.tx.Rollback())
			w.tx, w.ids = nil, nil
		case op < 6:
			n++
			committed[insertWith(t, b.mb.SQL, fmt.Sprintf("<MSG>%d</MSG>", n))] = true
		default:
			stepNoting(t, b, writers, skippedOpen)
		}
	}
	t.Logf("%d inserts; reads of the transaction list: %v proved, %v blocked; %d ids proved",
		n, b.proofReads(t, proofProved), b.proofReads(t, proofBlocked), len(b.passedBy(t)))
	require.Empty(t, skippedOpen, "ids skipped while their transaction was open")
	for _, w := range writers {
		w.commit(t, committed)
	}
	for all := b.mailboxIDs(t); b.cursor(t).W < all[len(all)-1]; {
		b.clock.Advance(testConfig.MaxCommitDelay) // what the proof did not pass ages
		b.drain(t, b.ing)
	}
	var want []int64
	for id := range committed {
		want = append(want, id)
	}
	slices.Sort(want)
	require.Equal(t, want, b.ids(t), "every committed row enqueued exactly once")
	for id, s := range b.stored(t) {
		require.False(t, s.Late, "msg %d late: its id was skipped before it committed", id)
	}
	for id, by := range b.passedBy(t) {
		require.False(t, committed[id], "msg %d committed but skipped (%s)", id, by)
	}
}
