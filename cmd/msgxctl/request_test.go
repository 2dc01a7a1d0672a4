package main

import (
	"bytes"
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/clock"
	"github.com/msgx/msgx/pkg/dev/mailboxtest"
	"github.com/msgx/msgx/pkg/dev/testdb"
	"github.com/msgx/msgx/pkg/mailbox"
	"github.com/msgx/msgx/pkg/request"
)

func TestRequestCommands(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pg, mb := testdb.New(t), mailboxtest.New(t)
	box, err := mailbox.Open(mb.DSN)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, box.Close()) })
	store, err := request.NewStore(pg.Pool, request.Config{SweepInterval: time.Second, Sender: "MSGX", RoutingID: "AODB", Timeout: 30 * time.Minute, Location: time.UTC})
	require.NoError(t, err)
	clk := clock.NewFake(time.Date(2026, 12, 2, 8, 0, 0, 0, time.UTC))
	env := requestEnv{pool: pg.Pool, store: store, clock: clk, poll: 10 * time.Millisecond, loc: time.UTC}
	sender, err := request.NewSender(store, box, clk, false)
	require.NoError(t, err)
	jobsSweep := request.NewSweeper(store, sender, box, clk, nil, zerolog.Nop()) // what the jobs stage runs
	outRows := func() int {
		var n int
		require.NoError(t, mb.SQL.QueryRowContext(ctx, `SELECT count(*) FROM coutmsgs`).Scan(&n))
		return n
	}

	var out bytes.Buffer
	require.NoError(t, runRequest(ctx, env, []string{"schedule", "--from", "2026-12-02", "--to", "2026-12-03", "--dry-run"}, &out))
	require.Contains(t, out.String(), "<STDB>02DEC260000</STDB>")
	require.Zero(t, count(t, pg, `SELECT count(*) FROM req_track`), "a dry run registers nothing")
	require.Zero(t, outRows(), "a dry run sends nothing")

	require.ErrorContains(t, runRequest(ctx, env, []string{"schedule", "--from", "2026-12-02", "--to", "2026-12-03"}, &out), "--reason")
	out.Reset()
	require.NoError(t, runRequest(ctx, env, []string{"schedule", "--from", "2026-12-02", "--to", "2026-12-03", "--reason", "DEAD schedule 4711", "--actor", "ops"}, &out))
	require.Contains(t, out.String(), "REGISTERED")
	require.Zero(t, outRows(), "msgxctl only registers; the jobs stage sends")
	require.Equal(t, 1, count(t, pg, `SELECT count(*) FROM replay_audit WHERE action = 'request' AND actor = 'ops' AND reason = 'DEAD schedule 4711' AND selector = 'RQFD 2026-12-02..2026-12-03'`))
	require.Equal(t, 1, count(t, pg, `SELECT count(*) FROM req_track WHERE actor = 'ops' AND reason = 'DEAD schedule 4711'`))
	res, err := jobsSweep.Sweep(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, res.Sent)
	require.Equal(t, 1, outRows())

	// --wait follows the request until the jobs stage sent it.
	sweepCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for sweepCtx.Err() == nil {
			_, _ = jobsSweep.Sweep(sweepCtx)
			time.Sleep(10 * time.Millisecond)
		}
	}()
	out.Reset()
	err = runRequest(ctx, env, []string{"list", "SLST", "--reason", "content-differs on SLST", "--wait", "30s"}, &out)
	stop()
	<-done
	require.NoError(t, err)
	require.Contains(t, out.String(), "RQRD SLST SENT")
	require.Equal(t, 2, outRows())
	require.ErrorIs(t, runRequest(ctx, env, []string{"list", "NOPE", "--reason", "x"}, &out), request.ErrBadSpec)

	out.Reset()
	require.NoError(t, runRequest(ctx, env, []string{"list-open"}, &out))
	require.Contains(t, out.String(), "2026-12-02..2026-12-03")
	require.Contains(t, out.String(), "SLST")

	var id int64
	require.NoError(t, pg.Pool.QueryRow(ctx, `SELECT req_id FROM req_track WHERE scope = 'SLST'`).Scan(&id))
	out.Reset()
	require.NoError(t, runRequest(ctx, env, []string{"show", strconv.FormatInt(id, 10)}, &out))
	require.Contains(t, out.String(), "RQRD SLST, SENT")
	require.Contains(t, out.String(), "<RTYP>SLST</RTYP>")

	shadow := env
	shadow.shadow = true
	require.ErrorContains(t, runRequest(ctx, shadow, []string{"list", "GLST", "--reason", "x"}, &out), "shadow")
	require.Equal(t, 2, outRows(), "nothing is sent in shadow mode")
	require.Zero(t, count(t, pg, `SELECT count(*) FROM req_track WHERE scope = 'GLST'`))
}
