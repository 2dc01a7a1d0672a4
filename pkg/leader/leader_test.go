package leader_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/msgx/msgx/pkg/dev/testdb"
	"github.com/msgx/msgx/pkg/leader"
)

const (
	sessionTimeout = 2 * time.Second
	retry          = 200 * time.Millisecond
	waitLimit      = 30 * time.Second
)

func TestMain(m *testing.M) {
	if url := os.Getenv("MSGX_LEADER_CHILD_URL"); url != "" {
		os.Exit(child(url, os.Getenv("MSGX_LEADER_CHILD_NAME")))
	}
	goleak.VerifyTestMain(m)
}

func newElector(t *testing.T, db *testdb.DB, holder string) *leader.Elector {
	t.Helper()
	cc, err := pgx.ParseConfig(db.URL)
	require.NoError(t, err)
	e, err := leader.New(leader.Config{Role: "jobs", Holder: holder, SessionTimeout: sessionTimeout, Retry: retry}, cc, zerolog.Nop())
	require.NoError(t, err)
	return e
}

// runElector runs e.Run in its own goroutine; the returned wait gives Run's error to the test's
// goroutine, which checks it (require must not be called from another goroutine).
func runElector(ctx context.Context, e *leader.Elector, work func(context.Context, leader.Lease) error) (wait func() error) {
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx, work) }()
	return func() error { return <-done }
}

func TestExactlyOneLeaderAmongThree(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	var active, maxActive, starts atomic.Int32
	work := func(ctx context.Context, _ leader.Lease) error {
		n := active.Add(1)
		starts.Add(1)
		for {
			m := maxActive.Load()
			if n <= m || maxActive.CompareAndSwap(m, n) {
				break
			}
		}
		<-ctx.Done()
		active.Add(-1)
		return nil
	}
	electors := make([]*leader.Elector, 3)
	waits := make([]func() error, 3)
	for i := range electors {
		electors[i] = newElector(t, db, fmt.Sprintf("e%d", i))
		waits[i] = runElector(ctx, electors[i], work)
	}
	require.Eventually(t, func() bool { return active.Load() == 1 }, waitLimit, 20*time.Millisecond, "a leader")
	// Give the standbys many campaign rounds (10 retries) to prove none of them gets in.
	deadline := time.Now().Add(10 * retry)
	for time.Now().Before(deadline) {
		require.LessOrEqual(t, active.Load(), int32(1))
		time.Sleep(retry / 4)
	}
	leaders := 0
	for _, e := range electors {
		if ok, epoch := e.IsLeader(); ok {
			leaders++
			require.Equal(t, int64(1), epoch)
		}
	}
	require.Equal(t, 1, leaders)
	cancel()
	for _, wait := range waits {
		require.NoError(t, wait())
	}
	require.Equal(t, int32(1), maxActive.Load())
	require.Equal(t, int32(1), starts.Load())
}

func TestTakeoverAfterTerminateBackend(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	var aStopped atomic.Bool
	a, b := newElector(t, db, "a"), newElector(t, db, "b")
	waitA := runElector(ctx, a, func(ctx context.Context, _ leader.Lease) error {
		<-ctx.Done()
		aStopped.Store(true)
		return nil
	})
	require.Eventually(t, func() bool { ok, _ := a.IsLeader(); return ok }, waitLimit, 20*time.Millisecond, "a leads")
	bEpoch := make(chan int64, 1)
	waitB := runElector(ctx, b, func(ctx context.Context, l leader.Lease) error {
		bEpoch <- l.Epoch
		<-ctx.Done()
		return nil
	})

	var pid int32
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT backend_pid FROM leader_lease WHERE role = 'jobs'`).Scan(&pid))
	killed := time.Now()
	var ok bool
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT pg_terminate_backend($1)`, pid).Scan(&ok))
	require.True(t, ok)

	select {
	case epoch := <-bEpoch:
		t.Logf("takeover after pg_terminate_backend: %s", time.Since(killed).Round(time.Millisecond))
		require.Equal(t, int64(2), epoch)
	case <-time.After(waitLimit):
		t.Fatal("b did not take over")
	}
	require.Eventually(t, aStopped.Load, waitLimit, 20*time.Millisecond, "a stops its work")
	ok, _ = a.IsLeader()
	require.False(t, ok)
	cancel()
	require.NoError(t, waitA())
	require.NoError(t, waitB())
}

// TestFencingProtocol shows the two halves of fencing on real PostgreSQL: a takeover waits for a
// protected transaction in flight, and after it the old lease cannot pass Check.
func TestFencingProtocol(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx := context.Background()
	_, err := db.Pool.Exec(ctx, `INSERT INTO leader_lease VALUES ('jobs', 1, 'old', 0, now(), now())`)
	require.NoError(t, err)
	old := leader.Lease{Role: "jobs", Epoch: 1}

	tx, err := db.Pool.Begin(ctx)
	require.NoError(t, err)
	require.NoError(t, old.Check(ctx, tx))

	bumped := make(chan error, 1)
	bumpConn, err := db.Pool.Acquire(ctx)
	require.NoError(t, err)
	defer bumpConn.Release()
	var bumpPID int32
	require.NoError(t, bumpConn.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&bumpPID))
	go func() {
		_, err := bumpConn.Exec(ctx, `UPDATE leader_lease SET epoch = epoch + 1 WHERE role = 'jobs'`)
		bumped <- err
	}()
	require.Eventually(t, func() bool {
		var waiting bool
		err := db.Pool.QueryRow(ctx,
			`SELECT coalesce(wait_event_type = 'Lock', false) FROM pg_stat_activity WHERE pid = $1`, bumpPID).Scan(&waiting)
		return err == nil && waiting
	}, waitLimit, 20*time.Millisecond, "the takeover to wait on the share lock")
	require.NoError(t, tx.Commit(ctx), "the old leader's in-flight transaction commits before the takeover")
	require.NoError(t, <-bumped)

	err = pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error { return old.Check(ctx, tx) })
	require.ErrorIs(t, err, leader.ErrFenced)
	err = pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error { return leader.Lease{Role: "jobs", Epoch: 2}.Check(ctx, tx) })
	require.NoError(t, err)
}

// --- process tests: real SIGKILL and SIGSTOP of a leader -----------------------------------

// child is a leader candidate process. While leader it commits a protected row every 10ms
// (ignoring cancellation for the write itself, as a paused process would) and prints its state.
func child(url, name string) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	pool, err := pgxpool.New(ctx, url+"&idle_in_transaction_session_timeout=2000")
	if err != nil {
		fmt.Println("ERROR", err)
		return 1
	}
	defer pool.Close()
	cc, _ := pgx.ParseConfig(url)
	e, err := leader.New(leader.Config{Role: "jobs", Holder: name, SessionTimeout: sessionTimeout, Retry: retry}, cc, zerolog.New(os.Stderr))
	if err != nil {
		fmt.Println("ERROR", err)
		return 1
	}
	err = e.Run(ctx, func(ctx context.Context, lease leader.Lease) error {
		var before int64
		_ = pool.QueryRow(ctx, `SELECT count(*) FROM fence_probe WHERE epoch < $1`, lease.Epoch).Scan(&before)
		fmt.Printf("LEADER %d %d\n", lease.Epoch, before)
		for {
			wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			err := pgx.BeginFunc(wctx, pool, func(tx pgx.Tx) error {
				if err := lease.Check(wctx, tx); err != nil {
					return err
				}
				_, err := tx.Exec(wctx, `INSERT INTO fence_probe (holder, epoch) VALUES ($1, $2)`, name, lease.Epoch)
				return err
			})
			cancel()
			if errors.Is(err, leader.ErrFenced) {
				fmt.Println("FENCED")
				return err
			}
			if err != nil {
				// e.g. paused inside a transaction that the server ended meanwhile: try again,
				// as a resumed process would; the next attempt meets the epoch check.
				fmt.Println("TXERR", err)
				continue
			}
			if ctx.Err() != nil {
				fmt.Println("CANCELLED")
				return nil
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
	if err != nil {
		fmt.Println("ERROR", err)
		return 1
	}
	return 0
}

type proc struct {
	cmd   *exec.Cmd
	lines chan string
}

func startChild(t *testing.T, db *testdb.DB, name string) *proc {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "MSGX_LEADER_CHILD_URL="+db.URL, "MSGX_LEADER_CHILD_NAME="+name)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	p := &proc{cmd: cmd, lines: make(chan string, 100)}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
		close(p.lines)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGCONT)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return p
}

// expect waits for the next line with one of the prefixes and returns it.
func (p *proc) expect(t *testing.T, prefixes ...string) string {
	t.Helper()
	timeout := time.After(waitLimit)
	for {
		select {
		case l, ok := <-p.lines:
			if !ok {
				t.Fatalf("child exited while waiting for %v", prefixes)
			}
			for _, pre := range prefixes {
				if strings.HasPrefix(l, pre) {
					return l
				}
			}
		case <-timeout:
			t.Fatalf("timed out waiting for %v", prefixes)
		}
	}
}

func probeTable(t *testing.T, db *testdb.DB) {
	_, err := db.Pool.Exec(context.Background(),
		`CREATE TABLE fence_probe (id bigserial PRIMARY KEY, holder text NOT NULL, epoch bigint NOT NULL)`)
	require.NoError(t, err)
}

func TestTakeoverAfterSIGKILL(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	probeTable(t, db)
	a := startChild(t, db, "a")
	require.Equal(t, "LEADER 1 0", a.expect(t, "LEADER"))
	b := startChild(t, db, "b")

	require.NoError(t, a.cmd.Process.Kill())
	killed := time.Now()
	line := b.expect(t, "LEADER")
	t.Logf("takeover after SIGKILL: %s", time.Since(killed).Round(time.Millisecond))
	require.True(t, strings.HasPrefix(line, "LEADER 2 "), line)
}

func TestPausedLeaderIsFenced(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	probeTable(t, db)
	a := startChild(t, db, "a")
	require.Equal(t, "LEADER 1 0", a.expect(t, "LEADER"))
	b := startChild(t, db, "b")

	require.NoError(t, a.cmd.Process.Signal(syscall.SIGSTOP))
	stopped := time.Now()
	line := b.expect(t, "LEADER")
	t.Logf("takeover after SIGSTOP: %s (lease %s)", time.Since(stopped).Round(time.Millisecond), sessionTimeout)
	var epoch, atTakeover int64
	_, err := fmt.Sscanf(line, "LEADER %d %d", &epoch, &atTakeover)
	require.NoError(t, err)
	require.Equal(t, int64(2), epoch)

	require.NoError(t, a.cmd.Process.Signal(syscall.SIGCONT))
	require.Equal(t, "FENCED", a.expect(t, "FENCED", "CANCELLED"), "the resumed leader's protected write is rejected")

	var after int64
	require.NoError(t, db.Pool.QueryRow(context.Background(),
		`SELECT count(*) FROM fence_probe WHERE epoch = 1`).Scan(&after))
	require.Equal(t, atTakeover, after, "no write of the old epoch committed after the takeover")
	// The new leader announces itself before its first write commits: wait for one.
	require.Eventually(t, func() bool {
		var newRows int64
		err := db.Pool.QueryRow(context.Background(),
			`SELECT count(*) FROM fence_probe WHERE epoch = 2`).Scan(&newRows)
		return err == nil && newRows > 0
	}, 10*time.Second, 10*time.Millisecond, "the new leader works")
	// After stepping down, a campaigns again as a standby and stays one.
	ok := true
	require.NoError(t, db.Pool.QueryRow(context.Background(),
		`SELECT holder = 'b' FROM leader_lease WHERE role = 'jobs'`).Scan(&ok))
	require.True(t, ok)
}

// The leader records every successful lock ping in renewed_at of its term's row, even while a
// protected transaction holds the row's share lock for a moment.
func TestLeaderRenewsItsRow(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	e := newElector(t, db, "renewer")
	wait := runElector(ctx, e, func(ctx context.Context, lease leader.Lease) error {
		// A protected transaction now and then, as the stages run them.
		for ctx.Err() == nil {
			tx, err := db.Pool.Begin(ctx)
			if err != nil {
				return nil
			}
			_ = lease.Check(ctx, tx)
			time.Sleep(50 * time.Millisecond)
			_ = tx.Rollback(context.Background())
			time.Sleep(50 * time.Millisecond)
		}
		return nil
	})
	require.Eventually(t, func() bool { ok, _ := e.IsLeader(); return ok }, waitLimit, 20*time.Millisecond, "a leader")
	var acquired, first time.Time
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT acquired_at, renewed_at FROM leader_lease WHERE role = 'jobs'`).Scan(&acquired, &first))
	require.Eventually(t, func() bool {
		var renewed time.Time
		if err := db.Pool.QueryRow(ctx, `SELECT renewed_at FROM leader_lease WHERE role = 'jobs'`).Scan(&renewed); err != nil {
			return false
		}
		if renewed.After(first) && !first.Equal(acquired) {
			return true
		}
		if renewed.After(first) {
			first = renewed
		}
		return false
	}, waitLimit, 20*time.Millisecond, "two renewals")
	cancel()
	require.NoError(t, wait())
}

// TestRefusedLeaderStepsDown: work refused a privilege by PostgreSQL (another release's grants:
// a rollback under way) steps down; the instance campaigns again only after StepDownPause,
// doubled with each step-down in a row, and a standby, which may be granted what this instance
// is refused, takes the lock meanwhile.
func TestRefusedLeaderStepsDown(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	a, b := newElector(t, db, "a"), newElector(t, db, "b")
	type term struct {
		at  time.Time
		err error
	}
	terms := make(chan term, 10)
	waitA := runElector(ctx, a, func(ctx context.Context, _ leader.Lease) error {
		err := pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `SET LOCAL ROLE pg_monitor`); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `SELECT count(*) FROM pg_catalog.pg_authid`)
			return err
		})
		terms <- term{time.Now(), err}
		if leader.Refused(err) {
			return fmt.Errorf("%w: %w", leader.ErrStepDown, err)
		}
		<-ctx.Done()
		return nil
	})
	var at []time.Time
	for range 3 { // a alone: refused in every term
		select {
		case tm := <-terms:
			require.True(t, leader.Refused(tm.err), "a statement refused a privilege: %v", tm.err)
			at = append(at, tm.at)
		case <-time.After(waitLimit):
			t.Fatal("a did not lead again")
		}
	}
	pause := a.StepDownPause()
	require.GreaterOrEqual(t, at[1].Sub(at[0]), pause, "a campaigned again before its pause")
	require.GreaterOrEqual(t, at[2].Sub(at[1]), 2*pause, "the pause doubles with each step-down in a row")

	bEpoch := make(chan int64, 1)
	waitB := runElector(ctx, b, func(ctx context.Context, l leader.Lease) error {
		bEpoch <- l.Epoch
		<-ctx.Done()
		return nil
	})
	select {
	case epoch := <-bEpoch:
		require.Greater(t, epoch, int64(3))
	case <-time.After(waitLimit):
		t.Fatal("b did not take over from the instance that stepped down")
	}
	cancel()
	require.NoError(t, waitA(), "stepping down is not an error of Run")
	require.NoError(t, waitB())
}
