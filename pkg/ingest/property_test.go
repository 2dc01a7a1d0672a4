package ingest

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var seedFlag = flag.Uint64("ingest.seed", 0, "seed of TestPropertyRandomCommits (0: random)")

// writer is one MySQL connection of the property test, with its open transaction if any.
type writer struct {
	conn *sql.Conn
	tx   *sql.Tx
	ids  []int64 // allocated by tx, not committed yet
}

// openWriters opens n writers on the test's mailbox; their open transactions roll back and their
// connections close when the test ends.
func openWriters(t *testing.T, b *bundle, n int) []*writer {
	t.Helper()
	writers := make([]*writer, n)
	for i := range writers {
		conn, err := b.mb.SQL.Conn(context.Background())
		require.NoError(t, err)
		writers[i] = &writer{conn: conn}
	}
	t.Cleanup(func() {
		for _, w := range writers {
			if w.tx != nil {
				_ = w.tx.Rollback()
			}
			_ = w.conn.Close()
		}
	})
	return writers
}

// commit commits the writer's open transaction, if any, and notes its ids in committed.
func (w *writer) commit(t *testing.T, committed map[int64]bool) {
	t.Helper()
	if w.tx == nil {
		return
	}
	require.NoError(t, w.tx.Commit())
	for _, id := range w.ids {
		committed[id] = true
	}
	w.tx, w.ids = nil, nil
}

// TestPropertyRandomCommits runs 100 rounds of interleaved inserts, rollbacks and delayed
// commits from several MySQL connections against steps of the Ingester and a moving fake clock.
// After every step: W never passes a committed row that is not enqueued (a committed id ≤ W is in
// proc_state, or was skipped while it was still uncommitted), and nothing is enqueued that is not
// in the mailbox. At the end every committed row is enqueued exactly once.
func TestPropertyRandomCommits(t *testing.T) {
	t.Parallel()
	seed := *seedFlag
	if seed == 0 {
		seed = rand.Uint64()
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("TestPropertyRandomCommits seed %d: rerun with go test -run TestPropertyRandomCommits -ingest.seed=%d", seed, seed)
		}
	})
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	cfg := testConfig
	cfg.ClaimBatch = 4
	b := setup(t, cfg)
	ctx := context.Background()

	writers := openWriters(t, b, 4)

	committed := map[int64]bool{}   // ids the test committed
	skippedOpen := map[int64]bool{} // ids skipped while their transaction was still open
	n := 0

	check := func(round int) {
		t.Helper()
		w := b.cursor(t).W
		stored := b.stored(t)
		inMailbox := map[int64]bool{}
		for _, id := range b.mailboxIDs(t) {
			inMailbox[id] = true
		}
		for id := range stored {
			require.True(t, inMailbox[id], "round %d: msg %d enqueued but not in the mailbox", round, id)
		}
		for id := range inMailbox {
			if id <= w {
				if _, ok := stored[id]; !ok {
					require.True(t, skippedOpen[id], "round %d: W=%d passed committed msg %d that is not enqueued", round, w, id)
				}
			}
		}
		for _, e := range b.ledger(t) {
			require.False(t, committed[e.ID] && !skippedOpen[e.ID], "round %d: committed msg %d was skipped", round, e.ID)
		}
	}

	for round := range 100 {
		for range 4 + rng.IntN(12) {
			w := writers[rng.IntN(len(writers))]
			switch op := rng.IntN(10); {
			case op < 3: // insert into the writer's transaction (opening one if needed)
				if w.tx == nil {
					tx, err := w.conn.BeginTx(ctx, nil)
					require.NoError(t, err)
					w.tx = tx
				}
				for range 1 + rng.IntN(3) {
					n++
					w.ids = append(w.ids, insertWith(t, w.tx, fmt.Sprintf("<MSG>%d</MSG>", n)))
				}
			case op < 5: // commit (possibly long after the ids were allocated: a delayed commit)
				w.commit(t, committed)
			case op < 6: // rollback: permanent gap
				if w.tx != nil {
					require.NoError(t, w.tx.Rollback())
					w.tx, w.ids = nil, nil
				}
			case op < 7: // autocommit insert (on a pooled connection: w.conn may be inside w.tx)
				n++
				committed[insertWith(t, b.mb.SQL, fmt.Sprintf("<MSG>%d</MSG>", n))] = true
			case op < 9: // a step, after some time
				b.clock.Advance(time.Duration(rng.IntN(int(cfg.MaxCommitDelay/time.Second)+5)) * time.Second)
				stepNoting(t, b, writers, skippedOpen)
				check(round)
			default: // a step at the same time: it may still skip ids whose window ran out earlier
				stepNoting(t, b, writers, skippedOpen)
				check(round)
			}
		}
	}

	// Settle: commit every open transaction, let every gap age, re-probe, drain.
	for _, w := range writers {
		w.commit(t, committed)
	}
	all := b.mailboxIDs(t)
	for i := 0; b.cursor(t).W < all[len(all)-1]; i++ {
		require.Less(t, i, 1000, "W does not reach the last mailbox id")
		b.clock.Advance(cfg.MaxCommitDelay)
		b.drain(t, b.ing)
	}
	b.clock.Advance(cfg.ReprobeEvery)
	b.drain(t, b.ing)
	check(100)
	var want []int64
	for id := range committed {
		want = append(want, id)
	}
	slices.Sort(want)
	require.Equal(t, want, b.ids(t), "every committed row enqueued exactly once")
	require.Equal(t, b.mailboxIDs(t), want)
	for id, s := range b.stored(t) {
		require.Equal(t, fmt.Sprintf("<MSG>%d</MSG>", mustText(t, b, id)), *s.Raw)
		require.Equal(t, skippedOpen[id], s.Late, "msg %d late flag", id)
	}
}

// mustText returns the n of "<MSG>n</MSG>" stored in the mailbox for id.
func mustText(t *testing.T, b *bundle, id int64) int {
	t.Helper()
	var n int
	require.NoError(t, b.mb.SQL.QueryRow(`SELECT CAST(REPLACE(REPLACE(CMINMSGS_CLOB_MSG, '<MSG>', ''), '</MSG>', '') AS SIGNED) FROM cminmsgs WHERE CMINMSGS_ID = ?`, id).Scan(&n))
	return n
}

// stepNoting runs one step and notes every id it skipped while its transaction was still open
// (a legitimate skip: it was allocated at least a max-commit-delay window before).
func stepNoting(t *testing.T, b *bundle, writers []*writer, skippedOpen map[int64]bool) {
	t.Helper()
	open := map[int64]bool{}
	for _, w := range writers {
		for _, id := range w.ids {
			open[id] = true
		}
	}
	before := len(b.ledger(t))
	step(t, b.ing)
	for _, e := range b.ledger(t)[before:] {
		if open[e.ID] {
			skippedOpen[e.ID] = true
		}
	}
}
