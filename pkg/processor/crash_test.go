package processor_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/clock"
	"github.com/msgx/msgx/pkg/dev/mailboxtest"
	"github.com/msgx/msgx/pkg/jobs"
	"github.com/msgx/msgx/pkg/leader"
	"github.com/msgx/msgx/pkg/mailbox"
	"github.com/msgx/msgx/pkg/processor"
	"github.com/msgx/msgx/pkg/roles"
	"github.com/msgx/msgx/pkg/sis"
	"github.com/msgx/msgx/pkg/wake"
)

// versioned is the crash tests' business effect: a per-flight version bumped by every message
// (like flight.state_version) plus one event row, all in the pump's transaction.
func versioned(ctx context.Context, tx pgx.Tx, m processor.Message) (processor.Outcome, error) {
	var v int64
	err := tx.QueryRow(ctx, `
		INSERT INTO ver (flid, version) VALUES ($1, 1)
		ON CONFLICT (flid) DO UPDATE SET version = ver.version + 1 RETURNING version`, m.Decoded.Flop.FLID).Scan(&v)
	if err != nil {
		return processor.Outcome{}, err
	}
	_, err = tx.Exec(ctx, `INSERT INTO effect_log (msg_id, flid, version) VALUES ($1, $2, $3)`, m.ID, m.Decoded.Flop.FLID, v)
	return processor.Outcome{}, err
}

// runChild is the body of a pump child process (MSGX_PUMP_CHILD = panic | crash).
func runChild() int {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Getenv("MSGX_PUMP_URL"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer pool.Close()
	cfg := processor.Config{
		Batch: 50, MaxAttempts: 5, BackoffBase: 10 * time.Millisecond, BackoffMax: 100 * time.Millisecond,
		HeadDeadline: 10 * time.Minute, PoisonCrashes: 3, IdlePoll: 5 * time.Millisecond, Location: time.UTC,
	}
	lease := leader.Lease{Role: "processor", Epoch: 1}
	log := zerolog.New(os.Stderr)
	switch os.Getenv("MSGX_PUMP_CHILD") {
	case "panic":
		now, _ := time.Parse(time.RFC3339, os.Getenv("MSGX_PUMP_NOW"))
		procs := map[sis.Kind]processor.Handler{sis.KindFlightUpdate: processor.HandlerFunc(
			func(ctx context.Context, tx pgx.Tx, m processor.Message) (processor.Outcome, error) {
				if m.ID == 2 {
					panic("poison message")
				}
				return versioned(ctx, tx, m)
			})}
		p := processor.New(cfg, pool, procs, nil, clock.NewFake(now), nil, log)
		for {
			res, err := p.Step(ctx, lease)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
			if res.Idle {
				return 0
			}
		}
	case "crash":
		procs := map[sis.Kind]processor.Handler{sis.KindFlightUpdate: processor.HandlerFunc(versioned)}
		var marker processor.Marker
		if dsn := os.Getenv("MSGX_PUMP_MAILBOX"); dsn != "" {
			mb, err := mailbox.Open(dsn)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
			defer mb.Close()
			marker = mb
		}
		p := processor.New(cfg, pool, procs, marker, clock.System{}, nil, log)
		err := drainAsLeader(ctx, pool, p, log)
		p.WaitMarkers()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return 0
	}
	return 1
}

// drainAsLeader runs p as production does: it campaigns for the processor role and drains the
// head while leader. A killed child's session (and lock) ends when its process dies, but a
// transaction of its batch may still commit (its COMMIT was sent); the next child's epoch
// increment waits for that transaction (the fence's share lock), so it reads the head after it.
// Children that skipped election could overlap there and apply that batch again.
func drainAsLeader(ctx context.Context, pool *pgxpool.Pool, p *processor.Engine, log zerolog.Logger) error {
	el, err := leader.New(leader.Config{Role: "processor", Holder: fmt.Sprintf("child-%d", os.Getpid()),
		SessionTimeout: 5 * time.Second, Retry: 10 * time.Millisecond}, pool.Config().ConnConfig, log)
	if err != nil {
		return err
	}
	ctx, drained := context.WithCancel(ctx)
	defer drained()
	return el.Run(ctx, func(ctx context.Context, lease leader.Lease) error {
		for {
			res, err := p.Step(ctx, lease)
			if err != nil {
				return err
			}
			if res.Idle {
				drained()
				return nil
			}
		}
	})
}

// gatedHandlers returns handlers that apply versioned; the first call then sends its backend's
// pid on inBatch and waits for release to be closed, its batch's transaction still open.
func gatedHandlers() (procs map[sis.Kind]processor.Handler, inBatch chan int32, release chan struct{}) {
	inBatch, release = make(chan int32, 1), make(chan struct{})
	var gated atomic.Bool
	procs = map[sis.Kind]processor.Handler{sis.KindFlightUpdate: processor.HandlerFunc(
		func(ctx context.Context, tx pgx.Tx, m processor.Message) (processor.Outcome, error) {
			out, err := versioned(ctx, tx, m)
			if err != nil || !gated.CompareAndSwap(false, true) {
				return out, err
			}
			var pid int32
			if err := tx.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
				return out, err
			}
			inBatch <- pid
			<-release
			return out, nil
		})}
	return procs, inBatch, release
}

func crashTables(t *testing.T, b *bundle) {
	_, err := b.db.Pool.Exec(context.Background(), `
		CREATE TABLE ver (flid bigint PRIMARY KEY, version bigint NOT NULL);
		CREATE TABLE effect_log (msg_id bigint NOT NULL, flid bigint NOT NULL, version bigint NOT NULL)`)
	require.NoError(t, err)
}

func childCmd(b *bundle, mode string, env ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), append([]string{"MSGX_PUMP_CHILD=" + mode, "MSGX_PUMP_URL=" + b.db.URL}, env...)...)
	return cmd
}

// A message that panics the processor on every attempt is poison: each attempt is a real
// process that dies, and after PoisonCrashes crashes charged to it (it ran alone) it ends DEAD
// EXHAUSTED, whatever the clock says, and the messages behind it then flow (INV-23d).
func TestPoisonMessageEndsExhausted(t *testing.T) {
	t.Parallel()
	b := setup(t)
	crashTables(t, b)
	b.enqueueSeq(t, 1, 3, func(id int64) string { return flop(int(id), 15, "S") })

	run := func(at time.Time) (int, string) {
		cmd := childCmd(b, "panic", "MSGX_PUMP_NOW="+at.Format(time.RFC3339))
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		return cmd.ProcessState.ExitCode(), stderr.String() + fmt.Sprint(err)
	}
	// Run 1 panics on 2 inside the batch 1..3 (the dying process charges 2 its first crash), run 2
	// finishes 1 alone and panics on 2 again, run 3 too; run 4 finds 2 with three crashes and ends
	// it. The clock does not move: the rule counts crashes, not time.
	for i := range 3 {
		code, out := run(t0)
		require.NotEqual(t, 0, code, "run %d: the panic ends the process", i+1)
		require.Contains(t, out, `"msg_id":2`)
		require.Contains(t, out, "processor panicked")
		require.Equal(t, "PENDING", b.row(t, 2).Status, "a panic is never a business outcome")
	}
	require.Equal(t, "SUCCEEDED", b.row(t, 1).Status, "the innocent message before the poison was isolated and done")

	code, out := run(t0)
	require.Equal(t, 0, code, out)
	r := b.row(t, 2)
	require.Equal(t, "DEAD", r.Status)
	require.Equal(t, "EXHAUSTED", r.Class)
	require.Contains(t, r.Reason, "crashed the processor 3 times in a row")
	require.Equal(t, "SUCCEEDED", b.row(t, 3).Status)
	require.Equal(t, []string{"CRASHED", "CRASHED", "CRASHED", "DEAD EXHAUSTED"}, outcomes(t, b, 2), "every attempt in the history")
	require.Equal(t, []string{"INTERRUPTED", "SUCCEEDED"}, outcomes(t, b, 1), "the batch that died charged nobody")
	var v int64
	require.NoError(t, b.db.Pool.QueryRow(context.Background(), `SELECT version FROM ver WHERE flid = 15`).Scan(&v))
	require.Equal(t, int64(2), v, "messages 1 and 3 applied once each")
}

// An attempt interrupted by the engine's context ending (SIGTERM, a lost lease, a lost database)
// is not a failure of the message: an 11-minute outage later the head is processed normally and
// in order, by the same engine or by a new process (INV-23d).
func TestInterruptedAttemptIsNotAFailure(t *testing.T) {
	t.Parallel()
	for _, restart := range []bool{false, true} {
		t.Run(fmt.Sprintf("restart=%v", restart), func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			ctx, cancel := context.WithCancel(context.Background())
			interrupted := false
			b.procs[sis.KindFlightUpdate] = &recorder{fail: func(m processor.Message) error {
				if m.ID == 2 && !interrupted {
					interrupted = true
					cancel()
					return ctx.Err()
				}
				return nil
			}}
			b.enqueueSeq(t, 1, 3, func(id int64) string { return flop(int(id), 15, "S") })
			p := b.pump(t)
			_, err := p.Step(ctx, b.lease)
			require.Error(t, err)
			require.Empty(t, effects(t, b), "nothing of the interrupted batch committed")

			b.clock.Advance(11 * time.Minute)
			if restart {
				p = b.pump(t)
			}
			b.drain(t, p)
			for id := int64(1); id <= 3; id++ {
				r := b.row(t, id)
				require.Equal(t, "SUCCEEDED", r.Status, "msg %d", id)
				require.Equal(t, 1, r.Attempts, "msg %d: the interrupted attempt is not counted", id)
			}
			require.Equal(t, []int64{1, 2, 3}, effects(t, b), "order kept")
			require.Equal(t, []string{"INTERRUPTED", "SUCCEEDED"}, outcomes(t, b, 1), "the interrupted attempt is in the history, not charged")
		})
	}
}

// The engine reads an open mark of its own as an attempt it saw end (not charged) as long as the
// row holds the mark it wrote, in a later term too: another leader's term that re-stamped the
// head and died on it is charged its death (INV-23d); one that never touched the mark changes
// nothing. A message runs alone here (Batch 1), where a death is charged and an interruption
// is not.
func TestOwnMarkOfAnEarlierTerm(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		between string // another leader's term between the engine's two: "" none, "died" on the head, "idle" without a step
		want    []string
	}{
		{"the next term, nobody between", "", []string{"INTERRUPTED", "SUCCEEDED"}},
		{"another leader died on the head between", "died", []string{"DIED", "DIED", "SUCCEEDED"}},
		{"another leader's term between left the mark alone", "idle", []string{"INTERRUPTED", "SUCCEEDED"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			b.cfg.Batch = 1
			var cancel context.CancelFunc
			interrupt := true
			b.procs[sis.KindFlightUpdate] = &recorder{fail: func(processor.Message) error {
				if interrupt {
					cancel()
					return context.Canceled
				}
				return nil
			}}
			b.enqueueSeq(t, 1, 2, func(id int64) string { return flop(int(id), 15, "S") })
			acquire := func(epoch int64) {
				_, err := b.db.Pool.Exec(context.Background(), `UPDATE leader_lease SET epoch = $1`, epoch)
				require.NoError(t, err)
			}
			term := func(p *processor.Engine, epoch int64) error {
				acquire(epoch)
				var ctx context.Context
				ctx, cancel = context.WithCancel(context.Background())
				defer cancel()
				b.clock.Advance(time.Second) // each attempt at its own time
				_, err := p.Step(ctx, leader.Lease{Role: "processor", Epoch: epoch})
				return err
			}
			a := b.pump(t)
			require.Error(t, term(a, 1), "the engine's attempt ends without an outcome (its lease lost)")
			epoch := int64(2)
			switch tc.between {
			case "died":
				require.Error(t, term(b.pump(t), epoch), "another leader's attempt, then it dies")
				epoch++
			case "idle":
				acquire(epoch) // its term ended before its first step
				epoch++
			}
			interrupt = false
			require.NoError(t, term(a, epoch))
			require.Equal(t, tc.want, outcomes(t, b, 1))
			require.Equal(t, []int64{1}, effects(t, b))
		})
	}
}

// A FAILED head whose retries could not run for a long time (an outage) is retried when the
// engine is back, not expired: the head deadline counts the time its attempts were being made.
func TestOutageDoesNotExpireAFailedHead(t *testing.T) {
	t.Parallel()
	b := setup(t)
	failed := false
	b.procs[sis.KindFlightUpdate] = &recorder{fail: func(m processor.Message) error {
		if m.ID == 1 && !failed {
			failed = true
			return errors.New("connection reset by peer")
		}
		return nil
	}}
	b.enqueueSeq(t, 1, 2, func(id int64) string { return flop(int(id), 15, "S") })
	p := b.pump(t)
	res, err := p.Step(context.Background(), b.lease)
	require.NoError(t, err)
	require.True(t, res.Failed)
	b.clock.Advance(11 * time.Minute)
	b.drain(t, p)
	require.Equal(t, "SUCCEEDED", b.row(t, 1).Status)
	require.Equal(t, []int64{1, 2}, effects(t, b))
}

// refusing is a processor whose statement the database refuses for a reason of its own (a
// role without the privilege) while refuse is set.
type refusing struct {
	refuse atomic.Bool
	role   string
	// nowait: the refusal is a lock not available (55P03: a row of table held that the test
	// holds, taken NOWAIT) instead of a privilege (42501).
	nowait bool
}

func (r *refusing) Apply(ctx context.Context, tx pgx.Tx, m processor.Message) (processor.Outcome, error) {
	if r.refuse.Load() && r.nowait {
		if _, err := tx.Exec(ctx, `SELECT id FROM held WHERE id = 1 FOR UPDATE NOWAIT`); err != nil {
			return processor.Outcome{}, err
		}
	} else if r.refuse.Load() {
		if _, err := tx.Exec(ctx, "SET LOCAL ROLE "+pgx.Identifier{r.role}.Sanitize()); err != nil {
			return processor.Outcome{}, err
		}
	}
	_, err := tx.Exec(ctx, `INSERT INTO effect (msg_id, flid) VALUES ($1, $2)`, m.ID, m.Decoded.Flop.FLID)
	return processor.Outcome{}, err
}

// refused installs a refusing processor, refusing, and enqueues n FLOPs (ids 1..n) for it.
func (b *bundle) refused(t *testing.T, n int64) *refusing {
	h := &refusing{role: b.db.Roles(t).Name(roles.Ingest)}
	h.refuse.Store(true)
	b.procs[sis.KindFlightUpdate] = h
	b.enqueueSeq(t, 1, n, func(id int64) string { return flop(int(id), 15, "S") })
	return h
}

// A message whose processor the database refuses (permission denied, the server's state, not
// the message's) is not charged, however often it is retried: the head waits, nothing behind it
// runs, and it applies once the database accepts it (INV-23d).
func TestDatabaseRefusalIsNotAFailureOfTheMessage(t *testing.T) {
	t.Parallel()
	b := setup(t)
	h := b.refused(t, 3)
	for range 12 { // more than 3×MSGX_POISON_CRASHES
		p := b.pump(t) // a new process each time (restarts, new leaders): no death is charged
		_, err := p.Step(context.Background(), b.lease)
		var pe *pgconn.PgError
		require.ErrorAs(t, err, &pe)
		require.Equal(t, "42501", pe.Code)
		b.clock.Advance(11 * time.Minute) // past the head deadline each time
	}
	require.Empty(t, b.db.Int64s(t, `SELECT msg_id FROM msg_attempt WHERE outcome <> 'INTERRUPTED'`), "only INTERRUPTED entries")
	p := b.pump(t)
	for id := int64(1); id <= 3; id++ {
		r := b.row(t, id)
		require.Equal(t, "PENDING", r.Status, "message %d", id)
		require.Zero(t, r.Attempts, "message %d", id)
	}
	require.Empty(t, effects(t, b))
	h.refuse.Store(false)
	b.drain(t, p)
	require.Equal(t, []int64{1, 2, 3}, effects(t, b))
	require.Equal(t, "SUCCEEDED", b.row(t, 1).Status)
	require.Equal(t, 1, b.row(t, 1).Attempts, "its success is its one attempt with an outcome")
}

// A privilege the database refuses (42501: during a rollout or a rollback, another release's
// grants) makes the pump step down once the refused attempt's end is recorded: another
// release's instance may be granted it, and the next leader finds no open attempt to charge as
// a death.
func TestPrivilegeRefusalStepsDown(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.refused(t, 2)
	p := b.pump(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := p.Run(ctx, b.lease)
	require.NoError(t, ctx.Err(), "it stepped down at once, not at the test's timeout")
	require.ErrorIs(t, err, leader.ErrStepDown)
	require.True(t, leader.Refused(err), "%v", err)
	require.Equal(t, []int64{1, 2}, b.db.Int64s(t, `SELECT msg_id FROM msg_attempt WHERE outcome = 'INTERRUPTED' ORDER BY msg_id`),
		"the refused batch's attempt ends recorded, on each of its messages")
	require.Zero(t, b.db.Int64s(t, `SELECT count(*) FROM proc_state WHERE processing_through IS NOT NULL`)[0],
		"no attempt is left open")
	for id := int64(1); id <= 2; id++ {
		require.Equal(t, "PENDING", b.row(t, id).Status, "message %d", id)
		require.Zero(t, b.row(t, id).Attempts, "message %d", id)
	}
}

// A refused leader whose attempt is still open (recording its end failed too) does not step
// down: the next leader would read the open mark as a death of the message. It waits its pause,
// records the end on its next attempt, and steps down then.
func TestRefusedLeaderWithAnOpenAttemptStaysUntilItIsRecorded(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.refused(t, 2)
	ctx0 := context.Background()
	_, err := b.db.Pool.Exec(ctx0, `
CREATE TABLE attempt_block (x int);
INSERT INTO attempt_block VALUES (1);
CREATE FUNCTION attempt_block() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM attempt_block) THEN RAISE EXCEPTION 'attempt rows blocked by the test'; END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER attempt_block BEFORE INSERT ON msg_attempt FOR EACH ROW EXECUTE FUNCTION attempt_block();`)
	require.NoError(t, err)
	p := b.pump(t)
	ctx, cancel := context.WithTimeout(ctx0, 30*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx, b.lease) }()
	require.Eventually(t, func() bool { return b.clock.Waiting() }, 10*time.Second, 5*time.Millisecond,
		"the refused pump waits its pause")
	select {
	case err := <-done:
		t.Fatalf("it left with its attempt open: %v", err)
	default:
	}
	require.Equal(t, []int64{1}, b.db.Int64s(t, `SELECT msg_id FROM proc_state WHERE processing_through IS NOT NULL`),
		"the refused attempt is still open")

	_, err = b.db.Pool.Exec(ctx0, `DELETE FROM attempt_block`)
	require.NoError(t, err)
	b.clock.Advance(b.cfg.BackoffMax)
	select {
	case err := <-done:
		require.ErrorIs(t, err, leader.ErrStepDown)
	case <-ctx.Done():
		t.Fatal("it did not step down once the attempt's end was recorded")
	}
	require.Zero(t, b.db.Int64s(t, `SELECT count(*) FROM proc_state WHERE processing_through IS NOT NULL OR deaths > 0`)[0],
		"no attempt left open, no death charged")
	require.Equal(t, []string{"INTERRUPTED", "INTERRUPTED"}, outcomes(t, b, 1), "both refused attempts, neither charged")
}

// While the database refuses the head, the running pump retries it at its backoff, not at the
// rate messages arrive: each arrival wakes the pump, and a retry per wake-up would record an
// attempt (and log an error) per message ingested for as long as the refusal lasts.
func TestRefusedHeadIsRetriedAtTheBackoffNotPerArrival(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.refused(t, 1).nowait = true
	ctx0 := context.Background()
	_, err := b.db.Pool.Exec(ctx0, `CREATE TABLE held (id int PRIMARY KEY); INSERT INTO held VALUES (1)`)
	require.NoError(t, err)
	holder, err := b.db.Pool.Begin(ctx0)
	require.NoError(t, err)
	defer func() { _ = holder.Rollback(ctx0) }()
	_, err = holder.Exec(ctx0, `SELECT id FROM held WHERE id = 1 FOR UPDATE`)
	require.NoError(t, err)
	p := b.pump(t)
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx, b.lease) }()
	attempts := func() int64 {
		return b.db.Int64s(t, `SELECT count(*) FROM msg_attempt WHERE msg_id = 1 AND outcome = 'INTERRUPTED'`)[0]
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		require.Eventually(t, cond, 10*time.Second, 5*time.Millisecond, what)
	}
	waitFor("the pump waits out its first backoff", func() bool { return attempts() == 1 && b.clock.Waiting() })
	// Messages arrive, each with the wake-up ingest sends, while the head is refused.
	for id := int64(2); id <= 21; id++ {
		b.enqueueSeq(t, id, id, func(id int64) string { return flop(int(id), 15, "S") })
		require.NoError(t, pgx.BeginFunc(context.Background(), b.db.Pool, func(tx pgx.Tx) error {
			return wake.Notify(context.Background(), tx, wake.Inbox)
		}))
	}
	require.True(t, b.clock.Waiting(), "still in its backoff")
	require.Equal(t, int64(1), attempts(), "no retry before the backoff ended")
	b.clock.Advance(time.Second)
	waitFor("the second attempt, then the next backoff", func() bool { return attempts() == 2 && b.clock.Waiting() })
	stop()
	require.NoError(t, <-done)
	require.Equal(t, int64(2), attempts())
	require.Equal(t, "PENDING", b.row(t, 1).Status)
}

// SIGKILL the pump process, immediate markers included, at random points: afterwards every
// message is terminal exactly once, every business effect happened exactly once, and the marker
// rules hold in every state observed (checkMarkers).
func TestCrashSafetyUnderSIGKILL(t *testing.T) {
	t.Parallel()
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 1))
	b := setup(t)
	b.mb = mailboxtest.New(t)
	crashTables(t, b)
	const n, kills, flights = 5000, 20, 97
	b.enqueueSeq(t, 1, n, func(id int64) string { return flop(int(id), id%flights, "S") })
	ctx := context.Background()
	for from := 1; from <= n; from += 1000 { // the mailbox rows 1..n
		var q strings.Builder
		q.WriteString(`INSERT INTO cminmsgs (CMINMSGS_ID, CMINMSGS_CLOB_MSG, CMINMSGS_STATUS) VALUES `)
		for id := from; id < from+1000 && id <= n; id++ {
			if id > from {
				q.WriteString(",")
			}
			fmt.Fprintf(&q, "(%d, 'x', 'VALID')", id)
		}
		_, err := b.mb.SQL.ExecContext(ctx, q.String())
		require.NoError(t, err)
	}

	for k := range kills {
		cmd := childCmd(b, "crash", "MSGX_PUMP_MAILBOX="+b.mb.DSN)
		require.NoError(t, cmd.Start())
		time.Sleep(time.Duration(20+rng.IntN(150)) * time.Millisecond) // a random kill point, not a wait
		require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
		_ = cmd.Wait()
		checkMarkers(t, b, fmt.Sprintf("seed %d kill %d", seed, k))
	}
	cmd := childCmd(b, "crash", "MSGX_PUMP_MAILBOX="+b.mb.DSN)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	checkMarkers(t, b, fmt.Sprintf("seed %d at the end", seed))
	var inMailbox, inDebts, onRows int
	require.NoError(t, b.mb.SQL.QueryRowContext(ctx, `SELECT count(*) FROM cminmsgs WHERE CMINMSGS_DATE_PROCESSED IS NOT NULL`).Scan(&inMailbox))
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT (SELECT COALESCE(sum(cardinality(ids)), 0) FROM marker_debt),
		(SELECT count(*) FROM proc_state WHERE backfill_next_at IS NOT NULL)`).Scan(&inDebts, &onRows))
	t.Logf("markers: %d written, %d owed in batch debts, %d on their rows", inMailbox, inDebts, onRows)

	// The debts the killed processes left are the jobs stage's: after its sweep none remains and
	// every message is marked.
	_, err = b.db.Pool.Exec(ctx, `INSERT INTO leader_lease VALUES ('jobs', 1, 'test', 0, $1, $1)`, t0)
	require.NoError(t, err)
	mb, err := mailbox.Open(b.mb.DSN)
	require.NoError(t, err)
	defer mb.Close()
	jcfg := jobs.Defaults()
	j, err := jobs.New(jcfg, b.db.Pool, mb, clock.NewFake(time.Now().Add(time.Hour)), nil, zerolog.Nop())
	require.NoError(t, err)
	for range 10 {
		res, err := j.RunOnce(ctx, jobs.Backfill, leader.Lease{Role: "jobs", Epoch: 1})
		require.NoError(t, err)
		if res.Selected == 0 && !res.More {
			break
		}
	}
	checkMarkers(t, b, fmt.Sprintf("seed %d after the sweep", seed))
	var owed int
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM marker_debt)
		+ (SELECT count(*) FROM proc_state WHERE backfill_next_at IS NOT NULL AND backfill_done_at IS NULL)`).Scan(&owed))
	require.Zero(t, owed, "seed %d: markers still owed after the sweep", seed)
	require.NoError(t, b.mb.SQL.QueryRowContext(ctx, `SELECT count(*) FROM cminmsgs WHERE CMINMSGS_DATE_PROCESSED IS NOT NULL`).Scan(&inMailbox))
	require.Equal(t, n, inMailbox, "seed %d: every message marked", seed)

	var open int
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE status NOT IN ('SUCCEEDED')) FROM proc_state`).Scan(&open))
	require.Zero(t, open, "seed %d: every message SUCCEEDED", seed)
	var effectsN, distinct int
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT count(*), count(DISTINCT msg_id) FROM effect_log`).Scan(&effectsN, &distinct))
	require.Equal(t, n, effectsN, "seed %d: no duplicate business effect", seed)
	require.Equal(t, n, distinct)
	// Versions equal a crash-free run: each flight's version = its message count, and versions
	// follow msg_id order.
	var mismatched int
	require.NoError(t, b.db.Pool.QueryRow(ctx, `
		SELECT count(*) FROM (
		  SELECT msg_id, version, row_number() OVER (PARTITION BY flid ORDER BY msg_id) AS want FROM effect_log
		) x WHERE version <> want`).Scan(&mismatched))
	require.Zero(t, mismatched, "seed %d", seed)
}

// checkMarkers checks the marker rules on what a killed pump left (no replay runs here, so a
// debt names only rows it made terminal):
//   - INV-8c: a marker is owed only by terminal rows — no marker_debt row names an open row, no
//     open row owes on its own — and an open row is never marked in the mailbox;
//   - INV-8c/INV-17: the debt is written once, by the terminal statement — no row is named by two
//     debts — and nothing is lost: every terminal row owes its marker (in its batch's debt or on
//     its own), has it settled, or is marked in the mailbox.
//
// The mailbox is read first: a marker is written only after its batch's commit, and its debt
// deleted only after the mailbox commit, so a later read of PostgreSQL sees whatever made it so.
func checkMarkers(t *testing.T, b *bundle, at string) {
	t.Helper()
	ctx := context.Background()
	marked := map[int64]bool{}
	rows, err := b.mb.SQL.QueryContext(ctx, `SELECT CMINMSGS_ID FROM cminmsgs WHERE CMINMSGS_DATE_PROCESSED IS NOT NULL`)
	require.NoError(t, err)
	for rows.Next() {
		var id int64
		require.NoError(t, rows.Scan(&id))
		marked[id] = true
	}
	require.NoError(t, rows.Err())
	require.NoError(t, rows.Close())

	type state struct {
		id              int64
		terminal, owned bool
		debts           int
	}
	prows, err := b.db.Pool.Query(ctx, `
		SELECT p.msg_id, p.status IN ('SUCCEEDED', 'SKIPPED', 'DEAD'),
		       p.backfill_next_at IS NOT NULL OR p.backfill_done_at IS NOT NULL OR p.backfill_abandoned_at IS NOT NULL,
		       COALESCE(d.n, 0)
		  FROM proc_state p
		  LEFT JOIN (SELECT u.id, count(*) AS n FROM marker_debt, unnest(ids) AS u(id) GROUP BY u.id) d ON d.id = p.msg_id`)
	require.NoError(t, err)
	states, err := pgx.CollectRows(prows, func(r pgx.CollectableRow) (state, error) {
		var s state
		return s, r.Scan(&s.id, &s.terminal, &s.owned, &s.debts)
	})
	require.NoError(t, err)
	var openOwing, openMarked, twice, lost []int64
	for _, s := range states {
		switch {
		case !s.terminal && (s.debts > 0 || s.owned):
			openOwing = append(openOwing, s.id)
		case !s.terminal && marked[s.id]:
			openMarked = append(openMarked, s.id)
		case s.debts > 1:
			twice = append(twice, s.id)
		case s.terminal && s.debts == 0 && !s.owned && !marked[s.id]:
			lost = append(lost, s.id)
		}
	}
	require.Empty(t, openOwing, "%s: open rows owe a marker (INV-8c)", at)
	require.Empty(t, openMarked, "%s: open rows are marked (INV-8c)", at)
	require.Empty(t, twice, "%s: rows named by two debts: the debt is written once, with the status (INV-8c)", at)
	require.Empty(t, lost, "%s: terminal rows neither owe nor have their marker (INV-17)", at)
}

// A takeover waits for the old leader's batch: the batch's transaction holds the fence's share
// lock on the lease row from its first statement, and the new leader's epoch increment waits
// for it, so the new leader reads the head after the batch committed and applies nothing twice
// (only the terminal-status write is guarded against a second apply; the handler's effects are
// not).
func TestTakeoverWaitsForTheOldLeadersBatch(t *testing.T) {
	t.Parallel()
	b := setup(t)
	crashTables(t, b)
	b.enqueueSeq(t, 1, 3, func(id int64) string { return flop(int(id), 15, "S") })
	procs, inBatch, release := gatedHandlers()
	open := sync.OnceFunc(func() { close(release) })
	t.Cleanup(open) // a failure must not leave the batch holding its locks (the schema's cleanup waits for them)
	ctx := context.Background()

	type stepped struct {
		res processor.StepResult
		err error
	}
	old := processor.New(b.cfg, b.db.Pool, procs, nil, b.clock, nil, zerolog.Nop())
	oldDone := make(chan stepped, 1)
	go func() {
		res, err := old.Step(ctx, b.lease)
		oldDone <- stepped{res, err}
	}()
	var oldPID int32
	select {
	case oldPID = <-inBatch:
	case s := <-oldDone:
		require.FailNow(t, "the old leader's batch ended before its first message was applied", "%+v", s)
	}

	el, err := leader.New(leader.Config{Role: "processor", Holder: "new", SessionTimeout: 5 * time.Second, Retry: 10 * time.Millisecond},
		b.db.Pool.Config().ConnConfig, zerolog.Nop())
	require.NoError(t, err)
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	var newEpoch int64
	var newStepErr error
	newDone := make(chan error, 1)
	go func() {
		newDone <- el.Run(runCtx, func(ctx context.Context, lease leader.Lease) error {
			defer stop()
			newEpoch = lease.Epoch
			p := processor.New(b.cfg, b.db.Pool, procs, nil, b.clock, nil, zerolog.Nop())
			for {
				res, err := p.Step(ctx, lease)
				if err != nil || res.Idle {
					newStepErr = err
					return nil
				}
			}
		})
	}()
	// The new leader holds the lock; its epoch increment waits behind the old leader's batch.
	require.Eventually(t, func() bool {
		var n int
		err := b.db.Pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE $1::int = ANY(pg_blocking_pids(pid)) AND query LIKE '%INSERT INTO leader_lease%'`, oldPID).Scan(&n)
		return err == nil && n == 1
	}, 10*time.Second, 5*time.Millisecond)

	open()
	s := <-oldDone
	require.NoError(t, s.err)
	require.Equal(t, 3, s.res.Processed)
	require.NoError(t, <-newDone)
	require.NoError(t, newStepErr)
	require.Equal(t, int64(2), newEpoch, "the new leader took over")

	ids := b.db.Int64s(t, `SELECT msg_id FROM effect_log ORDER BY msg_id`)
	require.Equal(t, []int64{1, 2, 3}, ids, "each message applied once")
}
