package daemon

import (
	"context"
	"errors"
	"sync/atomic"

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
type ReadOnlyGuard struct {
	pool atomic.Pointer[pgxpool.Pool]
	log  zerolog.Logger
	// Resets counts the resets (for tests and the log).
	Resets atomic.Int64
}

// GuardReadOnly installs a ReadOnlyGuard on pc (as its tracer); call Attach with the pool made
// from pc.
func GuardReadOnly(pc *pgxpool.Config, log zerolog.Logger) *ReadOnlyGuard {
	g := &ReadOnlyGuard{log: log}
	pc.ConnConfig.Tracer = g
	return g
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
