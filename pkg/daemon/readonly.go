package daemon

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"
)

// readOnly is SQLSTATE read_only_sql_transaction: a write on a hot standby, or on a server that
// became read-only (a demoted primary, default_transaction_read_only).
const readOnly = "25006"

// ReadOnlyGuard makes a pool leave a server that refuses writes. pgx checks
// target_session_attrs=read-write only when it connects; a connection made to the primary stays
// on that server when it is demoted (an HA manager fencing it, a switchover). The first statement
// refused as read-only resets the pool: every connection is closed (busy ones when released), and
// the next ones are made from the URL again, with its hosts and target_session_attrs, so they
// reach the new primary. The failed statement's error is still returned to its caller, whose
// retry then runs on the new primary.
//
// It also refuses, when connecting, a server on an older timeline than another host of the URL
// or than one this process has already worked on: an old primary that came back writable after a
// standby was promoted (a stray). The refusal makes pgx try the URL's next host.
type ReadOnlyGuard struct {
	pool     atomic.Pointer[pgxpool.Pool]
	timeline atomic.Int64 // the newest timeline a connection of this process reached
	log      zerolog.Logger
	// Resets counts the resets (for tests and the log).
	Resets atomic.Int64
}

// GuardReadOnly installs a ReadOnlyGuard on pc (as its tracer); call Attach with the pool made
// from pc.
func GuardReadOnly(pc *pgxpool.Config, log zerolog.Logger) *ReadOnlyGuard {
	g := &ReadOnlyGuard{log: log}
	pc.ConnConfig.Tracer = g
	next := pc.ConnConfig.ValidateConnect // target_session_attrs' check, if any
	pc.ConnConfig.ValidateConnect = func(ctx context.Context, c *pgconn.PgConn) error {
		if next != nil {
			if err := next(ctx, c); err != nil {
				return err
			}
		}
		return g.checkTimeline(ctx, c, g.newestOther(ctx, pc.ConnConfig, c))
	}
	return g
}

// newestOther reads the timeline of every other host of cc that answers (none when cc names one
// host): a connection is accepted only on a server at least as new as all of them, so a process
// never picks an old primary that came back before it reconnected. A host that does not answer
// is skipped.
func (g *ReadOnlyGuard) newestOther(ctx context.Context, cc *pgx.ConnConfig, self *pgconn.PgConn) int64 {
	hosts := append([]*pgconn.FallbackConfig{{Host: cc.Host, Port: cc.Port, TLSConfig: cc.TLSConfig}}, cc.Fallbacks...)
	if len(hosts) < 2 {
		return 0
	}
	newest := int64(0)
	for _, h := range hosts {
		if self.Conn().RemoteAddr().String() == net.JoinHostPort(h.Host, strconv.Itoa(int(h.Port))) {
			continue
		}
		c := cc.Config.Copy()
		c.Host, c.Port, c.TLSConfig, c.Fallbacks = h.Host, h.Port, h.TLSConfig, nil
		c.ValidateConnect, c.AfterConnect = nil, nil
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		if conn, err := pgconn.ConnectConfig(pctx, c); err == nil {
			if tl, err := serverTimeline(pctx, conn); err == nil {
				newest = max(newest, tl)
			}
			_ = conn.Close(pctx)
		}
		cancel()
	}
	return newest
}

// timelineSQL is the server's current timeline (0 on a standby): msgx_timeline()'s expression,
// which needs no table, so it also works before the first migration.
const timelineSQL = `SELECT CASE WHEN pg_is_in_recovery() THEN 0
  ELSE ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::bigint END`

// ErrStrayServer means the server is on an older timeline than another host of the URL, or than
// one this process already used.
var ErrStrayServer = errors.New("postgres: server on an older timeline (an old primary after a failover)")

func serverTimeline(ctx context.Context, c *pgconn.PgConn) (int64, error) {
	res, err := c.Exec(ctx, timelineSQL).ReadAll()
	if err != nil {
		return 0, fmt.Errorf("read the server's timeline: %w", err)
	}
	if len(res) != 1 || len(res[0].Rows) != 1 {
		return 0, errors.New("read the server's timeline: no row")
	}
	return strconv.ParseInt(string(res[0].Rows[0][0]), 10, 64)
}

// checkTimeline refuses c when its timeline is older than others (the newest of the other hosts)
// or than the newest this process used.
func (g *ReadOnlyGuard) checkTimeline(ctx context.Context, c *pgconn.PgConn, others int64) error {
	tl, err := serverTimeline(ctx, c)
	if err != nil || tl == 0 {
		return err // a standby: target_session_attrs decides
	}
	for {
		seen := max(g.timeline.Load(), others)
		if tl < seen {
			g.log.Error().Int64("timeline", tl).Int64("newest_timeline", seen).Str("server", c.Conn().RemoteAddr().String()).
				Msg("postgres: refusing a server on an older timeline (an old primary left behind by a failover); trying the next host")
			return fmt.Errorf("%w: timeline %d, another host or this process is on %d", ErrStrayServer, tl, seen)
		}
		if old := g.timeline.Load(); tl <= old || g.timeline.CompareAndSwap(old, tl) {
			return nil
		}
	}
}

// Attach names the pool the guard resets.
func (g *ReadOnlyGuard) Attach(p *pgxpool.Pool) { g.pool.Store(p) }

func (g *ReadOnlyGuard) observe(conn *pgx.Conn, err error) {
	var pe *pgconn.PgError
	if err == nil || !errors.As(err, &pe) || pe.Code != readOnly {
		return
	}
	p := g.pool.Load()
	if p == nil {
		return
	}
	g.Resets.Add(1)
	g.log.Warn().Str("server", conn.PgConn().Conn().RemoteAddr().String()).Str("error", pe.Message).
		Msg("postgres: the server refuses writes (a standby, or a demoted primary); reconnecting every pooled connection")
	p.Reset()
}

// TraceQueryStart implements pgx.QueryTracer.
func (g *ReadOnlyGuard) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	return ctx
}

// TraceQueryEnd implements pgx.QueryTracer.
func (g *ReadOnlyGuard) TraceQueryEnd(_ context.Context, conn *pgx.Conn, data pgx.TraceQueryEndData) {
	g.observe(conn, data.Err)
}

// TraceBatchStart implements pgx.BatchTracer.
func (g *ReadOnlyGuard) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}

// TraceBatchQuery implements pgx.BatchTracer.
func (g *ReadOnlyGuard) TraceBatchQuery(_ context.Context, conn *pgx.Conn, data pgx.TraceBatchQueryData) {
	g.observe(conn, data.Err)
}

// TraceBatchEnd implements pgx.BatchTracer.
func (g *ReadOnlyGuard) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// TraceCopyFromStart implements pgx.CopyFromTracer.
func (g *ReadOnlyGuard) TraceCopyFromStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceCopyFromStartData) context.Context {
	return ctx
}

// TraceCopyFromEnd implements pgx.CopyFromTracer.
func (g *ReadOnlyGuard) TraceCopyFromEnd(_ context.Context, conn *pgx.Conn, data pgx.TraceCopyFromEndData) {
	g.observe(conn, data.Err)
}

var (
	_ pgx.QueryTracer    = (*ReadOnlyGuard)(nil)
	_ pgx.BatchTracer    = (*ReadOnlyGuard)(nil)
	_ pgx.CopyFromTracer = (*ReadOnlyGuard)(nil)
)
