package daemon_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/daemon"
	"github.com/msgx/msgx/pkg/dev/testdb"
	"github.com/msgx/msgx/pkg/envconf"
	"github.com/msgx/msgx/pkg/leader"
	"github.com/msgx/msgx/pkg/settings"
)

// pgFront is a TCP front of the test PostgreSQL server standing for one server of an HA pair.
// Once demoted, it starts every new session read-only (it adds default_transaction_read_only to
// the startup message), as a standby or a demoted primary answers transaction_read_only = on.
type pgFront struct {
	ln       net.Listener
	target   string
	demoted  atomic.Bool
	sessions atomic.Int64
	wg       sync.WaitGroup
}

func newPGFront(t *testing.T, target string) *pgFront {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	f := &pgFront{ln: ln, target: target}
	f.wg.Add(1)
	go f.serve()
	t.Cleanup(func() { _ = ln.Close(); f.wg.Wait() })
	return f
}

func (f *pgFront) port() string { _, p, _ := net.SplitHostPort(f.ln.Addr().String()); return p }

func (f *pgFront) serve() {
	defer f.wg.Done()
	for {
		c, err := f.ln.Accept()
		if err != nil {
			return
		}
		f.sessions.Add(1)
		f.wg.Add(1)
		go func() { defer f.wg.Done(); f.pipe(c) }()
	}
}

// pipe forwards one session, rewriting its startup message when demoted.
func (f *pgFront) pipe(c net.Conn) {
	defer c.Close()
	s, err := net.Dial("tcp", f.target)
	if err != nil {
		return
	}
	defer s.Close()
	var n [4]byte
	if _, err := io.ReadFull(c, n[:]); err != nil {
		return
	}
	msg := make([]byte, binary.BigEndian.Uint32(n[:])-4)
	if _, err := io.ReadFull(c, msg); err != nil {
		return
	}
	if f.demoted.Load() && binary.BigEndian.Uint32(msg[:4]) == 196608 { // protocol 3.0 startup
		msg = append(msg[:len(msg)-1], []byte("options\x00-c default_transaction_read_only=on\x00\x00")...)
	}
	binary.BigEndian.PutUint32(n[:], uint32(len(msg)+4))
	if _, err := s.Write(append(n[:], msg...)); err != nil {
		return
	}
	done := make(chan struct{})
	go func() { _, _ = io.Copy(c, s); _ = c.Close(); close(done) }()
	_, _ = io.Copy(s, c)
	_ = s.Close()
	<-done
}

// A pool connected to the primary, which then turns read-only (demoted in a switchover), reaches
// the other server of its multi-host URL by itself: one statement is refused, the next runs.
func TestPoolLeavesAServerThatTurnedReadOnly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	_, err := db.Pool.Exec(ctx, `CREATE TABLE w (n int)`)
	require.NoError(t, err)
	u, err := url.Parse(db.URL)
	require.NoError(t, err)
	a, b := newPGFront(t, u.Host), newPGFront(t, u.Host)
	q := u.Query()
	q.Set("sslmode", "disable")
	q.Set("target_session_attrs", "read-write")
	u.RawQuery = q.Encode()
	u.Host = fmt.Sprintf("127.0.0.1:%s,127.0.0.1:%s", a.port(), b.port())

	var cfg settings.Process
	var lc leader.Config
	envconf.Defaults(&cfg)
	envconf.Defaults(&lc)
	cfg.PGURL, cfg.PGMaxConns = u.String(), 2
	pool, err := daemon.OpenPool(ctx, cfg, lc, settings.RoleProcessor, zerolog.Nop())
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	_, err = pool.Exec(ctx, `INSERT INTO w VALUES (1)`)
	require.NoError(t, err)
	onB := b.sessions.Load() // the start's probe of each host (one session each)

	// Demote the first server: its open sessions refuse writes from now on, new ones start read-only.
	a.demoted.Store(true)
	for _, c := range pool.AcquireAllIdle(ctx) {
		_, err := c.Exec(ctx, `SET default_transaction_read_only = on`)
		require.NoError(t, err)
		c.Release()
	}

	refused := 0
	for i := range 3 {
		_, err := pool.Exec(ctx, `INSERT INTO w VALUES ($1)`, i+2)
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == "25006" {
			refused++
			continue
		}
		require.NoError(t, err)
	}
	require.Equal(t, 1, refused, "one statement is refused, then the pool is on the writable server")
	require.Greater(t, b.sessions.Load(), onB, "the pool reached the second host")
	var n int
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT count(*) FROM w`).Scan(&n))
	require.Equal(t, 3, n)
}
