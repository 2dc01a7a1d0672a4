package processor_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/processor"
	"github.com/msgx/msgx/pkg/procstate"
	"github.com/msgx/msgx/pkg/sis"
)

// mixedInput is a deterministic 10,000-message input: valid updates, duplicates by identity
// (some with other content), malformed and empty texts, unsupported types, ignored types.
func mixedInput(n int) map[int64]*string {
	in := make(map[int64]*string, n)
	for i := 1; i <= n; i++ {
		id := int64(i)
		var s string
		switch {
		case i%97 == 0:
			s = flop(i-1, (id-1)%53, "S") // same identity as the previous message, same content
		case i%89 == 0:
			s = flop(i-1, (id-1)%53, "OTHER") // same identity, different content
		case i%83 == 0:
			s = "<MSG><META>"
		case i%79 == 0:
			s = ""
		case i%73 == 0:
			s = strings.Replace(flop(i, id%53, "S"), "<TYPE>FLOP</TYPE>", "<TYPE>ZZZZ</TYPE>", 1)
		case i%71 == 0:
			s = strings.Replace(flop(i, id%53, "S"), "<TYPE>FLOP</TYPE>", "<TYPE>EROR</TYPE>", 1)
		default:
			s = flop(i, id%53, "S")
		}
		in[id] = &s
	}
	return in
}

// runMixed drains the mixed input with the given batch size and returns a dump of the outcome.
func runMixed(t *testing.T, batch, n int) string {
	b := setup(t)
	b.cfg.Batch = batch
	b.cfg.MaxAttempts = 3
	_, err := b.db.Pool.Exec(context.Background(), `
		CREATE TABLE ver (flid bigint PRIMARY KEY, version bigint NOT NULL);
		CREATE TABLE effect_log (msg_id bigint NOT NULL, flid bigint NOT NULL, version bigint NOT NULL)`)
	require.NoError(t, err)
	var mu sync.Mutex
	failedOnce := map[int64]bool{}
	b.procs[sis.KindFlightUpdate] = processor.HandlerFunc(func(ctx context.Context, tx pgx.Tx, m processor.Message) (processor.Outcome, error) {
		out, err := versioned(ctx, tx, m)
		if err != nil {
			return out, err
		}
		mu.Lock()
		defer mu.Unlock()
		if m.ID%61 == 0 && !failedOnce[m.ID] { // fails once after writing: rolled back, retried
			failedOnce[m.ID] = true
			return out, errors.New("injected once")
		}
		if m.Decoded.Flop.FLID == 13 && m.ID%7 == 0 { // fails always: EXHAUSTED after 3 attempts
			return out, processor.Errorf(procstate.ClassCodec, "injected always")
		}
		_, err = tx.Exec(ctx, `INSERT INTO msg_event (target, partition_key, event_type, state_version, msg_id, payload, created_at)
			VALUES ('KAFKA:msg', $1, 'UPSERT', (SELECT version FROM ver WHERE flid = $2), $3, '{}', $4)`,
			fmt.Sprint(m.Decoded.Flop.FLID), m.Decoded.Flop.FLID, m.ID, m.Now)
		return out, err
	})
	b.enqueue(t, mixedInput(n))
	p := b.pump(t)
	for range 100000 {
		res, err := p.Step(context.Background(), b.lease)
		require.NoError(t, err)
		if res.Idle {
			break
		}
		if !res.WaitUntil.IsZero() {
			b.clock.Set(res.WaitUntil)
		}
	}
	var dump strings.Builder
	for _, q := range []string{
		`SELECT msg_id, status, error_class, reason, attempts, next_attempt_at, identity_key, content_differs,
		        msg_type, msg_styp, finished_at, backfill_next_at, outcome_epoch FROM proc_state ORDER BY msg_id`,
		`SELECT event_id, partition_key, state_version, msg_id, created_at FROM msg_event ORDER BY event_id`,
		`SELECT flid, version FROM ver ORDER BY flid`,
		`SELECT msg_id, flid, version FROM effect_log ORDER BY msg_id`,
		`SELECT identity_key, msg_id FROM msg_identity ORDER BY identity_key`,
		`SELECT msg_id, attempt, at, epoch, outcome, error_class, reason, meta FROM msg_attempt ORDER BY msg_id, attempt_id`,
	} {
		rows, err := b.db.Pool.Query(context.Background(), q)
		require.NoError(t, err)
		for rows.Next() {
			vals, err := rows.Values()
			require.NoError(t, err)
			fmt.Fprintln(&dump, vals...)
		}
		require.NoError(t, rows.Err())
	}
	return dump.String()
}

// Batching is invisible: batch size 1 and 100 give identical proc_state, events, versions and
// attempt histories. make test runs 3,000 messages (each kind of the mix 30 times or more); the
// acceptance run, 10,000, runs with MSGX_SOAK=1 (make soak); -short runs 2,000.
func TestBatchingIsInvisible(t *testing.T) {
	t.Parallel()
	n := 3000
	switch {
	case os.Getenv("MSGX_SOAK") == "1":
		n = 10000
	case testing.Short():
		n = 2000
	}
	var one, hundred string
	// Both sizes run at once, each in a parallel subtest of its own (a failure stops only its
	// goroutine); the group returns when both ended.
	t.Run("sizes", func(t *testing.T) {
		t.Run("1", func(t *testing.T) { t.Parallel(); one = runMixed(t, 1, n) })
		t.Run("100", func(t *testing.T) { t.Parallel(); hundred = runMixed(t, 100, n) })
	})
	require.Greater(t, len(one), n*50, "the dump holds every row")
	for _, want := range []string{"DEAD MALFORMED", "duplicate-of:", "content-differs", "ignored:EROR", "EXHAUSTED"} {
		require.Contains(t, one, want)
	}
	if one != hundred {
		a, b := strings.Split(one, "\n"), strings.Split(hundred, "\n")
		for i := range min(len(a), len(b)) {
			require.Equal(t, a[i], b[i], "first difference at line %d", i)
		}
		require.Equal(t, len(a), len(b))
	}
}
