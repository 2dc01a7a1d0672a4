package kafka

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"sync"
	"time"
)

// errUnlisted refuses a connection to a broker the cluster has fenced.
var errUnlisted = errors.New("the cluster no longer lists this broker (fenced by the controller: frozen, dead or cut off)")

// watch is the dialer of a producer's sarama clients: it keeps the connections they open, so
// that those to a broker the cluster has fenced can be closed.
//
// A frozen broker (SIGSTOP, a paused VM, a long GC pause) keeps its connections open and
// answers nothing. sarama waits on a request to it up to the read timeout
// (MSGX_KAFKA_IO_TIMEOUT), then asks again for the coordinator or the leader from the broker
// with the fewest requests waiting, which may be the frozen one again: a new connection whose
// first request (ApiVersions) waits out the read timeout once more, and so on for the whole
// freeze. The controller fences such a broker after its session timeout and moves its
// partitions and transaction coordinators to others; from then on the other brokers leave it
// out of their metadata. While a send or a dial waits longer than the check timeout, the watch
// asks the brokers every check timeout which brokers the cluster lists: the connections to a
// broker it listed before and lists no more are closed, which ends the requests waiting on it
// at once, and a new connection to it is refused while the cluster still leaves it out, so
// sarama turns to the brokers that took over its work. A broker is only ever refused on an
// answer at most a check timeout old; without one (no broker answers), every dial goes
// through.
type watch struct {
	cfg    Config
	dialer net.Dialer
	// list asks the brokers at addrs which brokers the cluster lists (listing; tests replace it).
	list func(ctx context.Context, addrs []string) (map[string]bool, bool)
	now  func() time.Time // the system clock; tests replace it

	ask chan struct{} // held while the cluster is asked: one question at a time

	mu     sync.Mutex
	conns  map[string]map[*watchedConn]struct{} // open connections by broker address
	seen   map[string]bool                      // every address an answer listed
	listed map[string]bool                      // the addresses the latest answer listed
	asked  time.Time                            // when the latest answer came (zero: none yet)
}

func newWatch(c Config) *watch {
	return &watch{
		cfg: c, dialer: net.Dialer{Timeout: c.DialTimeout}, ask: make(chan struct{}, 1),
		list: func(ctx context.Context, addrs []string) (map[string]bool, bool) {
			return listing(ctx, c, addrs, c.CheckTimeout)
		},
		now:   time.Now,
		conns: map[string]map[*watchedConn]struct{}{}, seen: map[string]bool{}, listed: map[string]bool{},
	}
}

// Dial opens a connection for sarama (its Net.Proxy.Dialer), refusing a broker the cluster no
// longer lists.
func (w *watch) Dial(network, addr string) (net.Conn, error) {
	if w.unlisted(addr) {
		return nil, refused(network, addr)
	}
	c, err := w.dialer.Dial(network, addr)
	if err != nil {
		return nil, err
	}
	wc := &watchedConn{Conn: c, w: w, addr: addr}
	w.mu.Lock()
	if w.conns[addr] == nil {
		w.conns[addr] = map[*watchedConn]struct{}{}
	}
	w.conns[addr][wc] = struct{}{}
	w.mu.Unlock()
	if w.unlisted(addr) { // fenced while the dial was under way
		_ = wc.Close()
		return nil, refused(network, addr)
	}
	return wc, nil
}

// refused is the error of a refused dial: a network error, which Unavailable counts as the
// cluster's fault.
func refused(network, addr string) error {
	return &net.OpError{Op: "dial", Net: network, Err: fmt.Errorf("%s: %w", addr, errUnlisted)}
}

// unlisted reports whether the cluster, asked at most a check timeout ago, leaves out addr,
// a broker it listed before. A stale answer is renewed first.
func (w *watch) unlisted(addr string) bool {
	out, fresh := w.state(addr)
	if out && !fresh {
		w.refresh(context.Background())
		out, fresh = w.state(addr)
	}
	return out && fresh
}

func (w *watch) state(addr string) (out, fresh bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.seen[addr] && !w.listed[addr], !w.asked.IsZero() && w.now().Sub(w.asked) < w.cfg.CheckTimeout
}

// during watches the cluster while an operation waits: from one check timeout on, every check
// timeout, until the returned stop is called (which returns once the watching has ended).
func (w *watch) during() (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		t := time.NewTicker(w.cfg.CheckTimeout)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				w.refresh(ctx)
			}
		}
	}()
	return func() {
		cancel()
		<-ended
	}
}

// refresh asks the brokers at once which brokers the cluster lists, takes the first answer, and
// closes the connections to the brokers it leaves out. It asks the bootstrap brokers and every
// broker an answer listed, except those the cluster left out last time (a fenced broker's own
// answer says nothing), unless no other is left. An answer younger than half a check timeout
// is kept as it is.
func (w *watch) refresh(ctx context.Context) {
	select {
	case w.ask <- struct{}{}:
		defer func() { <-w.ask }()
	case <-ctx.Done():
		return
	}
	w.mu.Lock()
	recent := !w.asked.IsZero() && w.now().Sub(w.asked) < w.cfg.CheckTimeout/2
	var addrs, out []string
	for _, a := range slices.Concat(w.cfg.Brokers, slices.Sorted(maps.Keys(w.seen))) {
		switch {
		case slices.Contains(addrs, a) || slices.Contains(out, a):
		case w.seen[a] && !w.listed[a]:
			out = append(out, a)
		default:
			addrs = append(addrs, a)
		}
	}
	w.mu.Unlock()
	if recent {
		return
	}
	if len(addrs) == 0 {
		addrs = out
	}
	listed, ok := w.list(ctx, addrs)
	if !ok {
		return
	}
	var cut []*watchedConn
	w.mu.Lock()
	w.listed, w.asked = listed, w.now()
	for a := range listed {
		w.seen[a] = true
	}
	for addr, cs := range w.conns {
		if w.seen[addr] && !listed[addr] {
			for c := range cs {
				cut = append(cut, c)
			}
		}
	}
	w.mu.Unlock()
	for _, c := range cut {
		_ = c.Close()
	}
}

// watchedConn is a connection the watch keeps until it is closed.
type watchedConn struct {
	net.Conn
	w    *watch
	addr string
}

func (c *watchedConn) Close() error {
	c.w.mu.Lock()
	delete(c.w.conns[c.addr], c)
	c.w.mu.Unlock()
	return c.Conn.Close()
}
