package e2e_test

import (
	"context"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/dev/simulate"
	"github.com/msgx/msgx/pkg/procstate"
	"github.com/msgx/msgx/pkg/roles"
)

// TestPoisonMessageKillsTheRealProcessor (INV-23d): a message on which the real
// processor binary dies on every attempt — here it hangs on a row lock the test holds and is
// SIGKILLed each time, as a liveness probe would — ends DEAD EXHAUSTED poison after
// 3×MSGX_POISON_CRASHES deaths while it ran alone, and every other message flows; the deaths
// are in its attempt history.
func TestPoisonMessageKillsTheRealProcessor(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, "MSGX_POISON_CRASHES=1")
	cfg := simulate.DefaultConfig()
	cfg.Seed, cfg.Flights, cfg.Additions, cfg.BadShare = 9, 30, 0, 0
	cfg.Date = airportToday(t)
	day := simulate.Generate(cfg)
	k := len(day.Messages) / 2
	first := b.write(t, ctx, simulate.WriterConfig{Conns: 1, Pace: simulate.PaceFast, Seed: cfg.Seed}, day.Messages[:k])
	b.waitDrained(t, slices.Max(first.IDs), 2*time.Minute)

	// The poison: the first FLOP of the second half for a stored flight; the test locks that
	// flight's row, so every attempt of it hangs until the process is killed.
	p := -1
	for i := k; i < len(day.Messages) && p < 0; i++ {
		m := day.Messages[i]
		var n int
		require.NoError(t, b.pg.Pool.QueryRow(ctx, `SELECT count(*) FROM flight WHERE flid = $1`, m.FLID).Scan(&n))
		if m.Type == "FLOP" && m.FLID != 0 && n == 1 {
			p = i
		}
	}
	require.GreaterOrEqual(t, p, 0, "the second half has a FLOP for a stored flight")
	lock, err := b.pg.Pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = lock.Rollback(ctx) }()
	_, err = lock.Exec(ctx, `SELECT 1 FROM flight WHERE flid = $1 FOR UPDATE`, day.Messages[p].FLID)
	require.NoError(t, err)
	var lockPid int32
	require.NoError(t, lock.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&lockPid))

	second := b.write(t, ctx, simulate.WriterConfig{Conns: 1, Pace: simulate.PaceFast, Seed: cfg.Seed}, day.Messages[k:])
	poison := second.IDs[p-k]
	processorRole := b.pgRoles.Name(roles.Processor)
	// hungSQL finds the processor's sessions blocked by the test's lock.
	const hungSQL = `SELECT pid FROM pg_stat_activity WHERE usename::text = $1 AND $2::int = ANY(pg_blocking_pids(pid))`
	kills := 0
	deadline := time.Now().Add(4 * time.Minute)
	for {
		var status string
		err := b.pg.Pool.QueryRow(ctx, `SELECT status FROM proc_state WHERE msg_id = $1`, poison).Scan(&status)
		if err == nil && status == "DEAD" {
			break
		}
		require.True(t, time.Now().Before(deadline), "the poison message did not end DEAD (kills %d, logs in %s)", kills, b.logDir)
		rows, err := b.pg.Pool.Query(ctx, hungSQL, processorRole, lockPid)
		require.NoError(t, err)
		hung, err := pgx.CollectRows(rows, pgx.RowTo[int32])
		require.NoError(t, err)
		if len(hung) > 0 { // the liveness probe's verdict: kill, then the platform starts it again
			pr := b.stack.Proc("processor")
			require.NotNil(t, pr)
			require.NoError(t, pr.Signal(syscall.SIGKILL))
			<-pr.Done()
			kills++
			// A backend blocked on a lock does not read its socket, so PostgreSQL keeps the dead
			// client's session until the lock goes (it would notice the client with
			// client_connection_check_interval or TCP keepalives); end it as those would.
			for _, pid := range hung {
				var gone bool
				require.NoError(t, b.pg.Pool.QueryRow(ctx, `SELECT pg_terminate_backend($1, 10000)`, pid).Scan(&gone))
				require.True(t, gone, "session %d ended", pid)
			}
			_, err := b.stack.StartProc(ctx, "processor")
			require.NoError(t, err, "restart the processor (logs in %s)", b.logDir)
			continue
		}
		time.Sleep(100 * time.Millisecond) // polling a condition with a deadline
	}
	t.Logf("the processor was killed %d times on message %d", kills, poison)
	require.NoError(t, lock.Rollback(ctx))
	b.waitDrained(t, slices.Max(second.IDs), 2*time.Minute)

	var class, reason string
	require.NoError(t, b.pg.Pool.QueryRow(ctx, `SELECT error_class, reason FROM proc_state WHERE msg_id = $1`, poison).Scan(&class, &reason))
	require.Equal(t, "EXHAUSTED", class)
	require.Contains(t, reason, "poison: the processor died 3 times in a row while it ran alone")
	require.GreaterOrEqual(t, kills, 3)
	var others, done int
	require.NoError(t, b.pg.Pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE status IN ('SUCCEEDED', 'SKIPPED'))
		FROM proc_state WHERE msg_id <> $1`, poison).Scan(&others, &done))
	require.Equal(t, len(day.Messages)-1, others)
	require.Equal(t, others, done, "every other message flowed")
	as, err := procstate.Attempts(ctx, b.pg.Pool, poison)
	require.NoError(t, err)
	var died int
	for _, a := range as {
		if a.Outcome == procstate.AttemptDied {
			died++
		}
	}
	require.Equal(t, 3, died, "every death is in the history")
	require.Equal(t, "DEAD", as[len(as)-1].Outcome)
}
