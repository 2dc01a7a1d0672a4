package kafka

import (
	"context"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// frozenBroker is a listener that accepts connections and never answers, as a frozen broker's
// kernel does; it closes with the test.
func frozenBroker(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var mu sync.Mutex
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		<-done
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return ln.Addr().String()
}

// watchBundle is a watch whose cluster answers and clock the test sets.
type watchBundle struct {
	w     *watch
	mu    sync.Mutex
	now   time.Time
	ans   map[string]bool // nil: no broker answers
	asked atomic.Int32
}

func newWatchBundle(t *testing.T, brokers ...string) *watchBundle {
	t.Helper()
	b := &watchBundle{now: time.Unix(1_000_000, 0)}
	b.w = newWatch(Config{Brokers: brokers, DialTimeout: time.Second, CheckTimeout: time.Second})
	b.w.now = func() time.Time {
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.now
	}
	b.w.list = func(context.Context, []string) (map[string]bool, bool) {
		b.asked.Add(1)
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.ans, b.ans != nil
	}
	return b
}

// answer sets what the cluster lists from now on (none: no broker answers) and moves the clock
// past the check timeout, so that the next question is asked.
func (b *watchBundle) answer(addrs ...string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.now = b.now.Add(2 * time.Second)
	if addrs == nil {
		b.ans = nil
		return
	}
	b.ans = map[string]bool{}
	for _, a := range addrs {
		b.ans[a] = true
	}
}

// listedPair is a watch over two frozen brokers a and b that has read a cluster listing both.
func listedPair(t *testing.T, ctx context.Context) (wb *watchBundle, a, b string) {
	t.Helper()
	a, b = frozenBroker(t), frozenBroker(t)
	wb = newWatchBundle(t, a, b)
	wb.relist(ctx, a, b)
	return wb, a, b
}

// relist has the cluster list addrs from now on and the watch read it.
func (b *watchBundle) relist(ctx context.Context, addrs ...string) {
	b.answer(addrs...)
	b.w.refresh(ctx)
}

// readErr reads from c until its deadline and returns the error.
func readErr(c net.Conn, within time.Duration) error {
	_ = c.SetReadDeadline(time.Now().Add(within))
	_, err := c.Read(make([]byte, 1))
	return err
}

// TestWatchCutsOffAnUnlistedBroker: once the cluster leaves out a broker it listed before, the
// watch closes the connections to it (a read waiting on it ends at once), keeps the others, and
// refuses new connections to it (an outage error) until the cluster lists it again.
func TestWatchCutsOffAnUnlistedBroker(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	wb, a, b := listedPair(t, ctx)
	ca, err := wb.w.Dial("tcp", a)
	require.NoError(t, err)
	defer ca.Close()
	cb, err := wb.w.Dial("tcp", b)
	require.NoError(t, err)
	defer cb.Close()

	read := make(chan error, 1)
	go func() { read <- readErr(ca, time.Minute) }()
	wb.relist(ctx, b)
	select {
	case err := <-read:
		require.ErrorIs(t, err, net.ErrClosed, "the read waiting on the unlisted broker ends")
	case <-time.After(10 * time.Second):
		t.Fatal("the connection to the unlisted broker is still open")
	}
	require.ErrorIs(t, readErr(cb, 50*time.Millisecond), os.ErrDeadlineExceeded, "the listed broker's connection stays open")

	_, err = wb.w.Dial("tcp", a)
	require.ErrorIs(t, err, errUnlisted)
	require.True(t, Unavailable(err), "a refused broker is an outage, not the records' fault")
	_, err = wb.w.Dial("tcp", b)
	require.NoError(t, err)

	wb.answer(a, b) // the answer refusing a is now stale: the dial asks again
	c, err := wb.w.Dial("tcp", a)
	require.NoError(t, err, "listed again")
	require.NoError(t, c.Close())
}

// TestWatchTrustsNoStaleAnswer: a broker is refused only on an answer at most a check timeout
// old; when no broker answers any more, every dial goes through.
func TestWatchTrustsNoStaleAnswer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	wb, a, b := listedPair(t, ctx)
	wb.relist(ctx, b)
	_, err := wb.w.Dial("tcp", a)
	require.ErrorIs(t, err, errUnlisted)
	wb.answer()
	c, err := wb.w.Dial("tcp", a)
	require.NoError(t, err, "no fresh answer: the dial goes through")
	require.NoError(t, c.Close())
	wb.w.mu.Lock()
	defer wb.w.mu.Unlock()
	require.Empty(t, wb.w.conns[a], "a closed connection is forgotten")
}

// TestWatchDuring: while an operation waits the watch asks the cluster every check timeout;
// stop returns once it has stopped asking.
func TestWatchDuring(t *testing.T) {
	t.Parallel()
	wb := newWatchBundle(t, frozenBroker(t))
	wb.w.cfg.CheckTimeout = 20 * time.Millisecond
	wb.w.now = time.Now
	wb.answer("x")
	stop := wb.w.during()
	require.Eventually(t, func() bool { return wb.asked.Load() >= 3 }, 10*time.Second, 10*time.Millisecond)
	stop()
	n := wb.asked.Load()
	require.Equal(t, n, wb.asked.Load())

	// An operation that ends before one check timeout never asks.
	wb.w.cfg.CheckTimeout = time.Hour
	wb.w.during()()
	require.Equal(t, n, wb.asked.Load())
}
