package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/clock"
	"github.com/msgx/msgx/pkg/dev/testdb"
	"github.com/msgx/msgx/pkg/identity"
	"github.com/msgx/msgx/pkg/obs"
)

// A processor whose identity rule disagrees with the stored one refuses to start, with one line
// naming the msgxctl command that changes the stored rule; nothing is stored over it.
func TestRefusesADifferentIdentityRule(t *testing.T) {
	db := testdb.New(t)
	ctx := context.Background()
	stored := identity.Rule{Window: 168 * time.Hour}
	require.NoError(t, identity.Ensure(ctx, db.Pool, stored, "earlier processor", time.Now()))
	cfg, err := load()
	require.NoError(t, err)
	cfg.PGURL, cfg.HTTPAddr = db.URL, "127.0.0.1:0"
	cfg.Processor.IdentityWindow = 72 * time.Hour

	runCtx, cancel := context.WithTimeout(ctx, time.Minute) // a processor that starts ends here
	defer cancel()
	err = run(runCtx, cfg, zerolog.Nop(), obs.NewRegistry(), func(*obs.Server) { t.Error("the processor started"); cancel() })
	var mm *identity.MismatchError
	require.ErrorAs(t, err, &mm)
	require.NotContains(t, err.Error(), "\n")
	require.Contains(t, err.Error(), `msgxctl identity set --window 72h --include-day=false --reason`)
	s, _, err := identity.Load(ctx, db.Pool)
	require.NoError(t, err)
	require.Equal(t, stored, s.Rule)
}

// While the database does not answer, the identity check retries every second but logs its
// first failure and then one line per obs.RepeatEvery, each counting the tries it stands for.
func TestIdentityRetryLogIsThinned(t *testing.T) {
	t.Parallel()
	pool, err := pgxpool.New(context.Background(), "postgres://nobody@127.0.0.1:1/none?connect_timeout=1")
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	clk := clock.NewFake(time.Date(2026, 12, 4, 8, 0, 0, 0, time.UTC))
	var logs bytes.Buffer
	log := zerolog.New(&logs)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- ensureIdentity(ctx, pool, identity.Rule{Window: 72 * time.Hour}, clk, time.Second, log)
	}()
	for range 95 { // one failed try per fake second
		require.Eventually(t, clk.Waiting, 10*time.Second, time.Millisecond)
		clk.Advance(time.Second)
	}
	require.Eventually(t, clk.Waiting, 10*time.Second, time.Millisecond)
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)

	var tries []int
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var l struct {
			Msg   string `json:"message"`
			Tries int    `json:"tries"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &l))
		require.Equal(t, "identity rule check failed; retrying", l.Msg)
		tries = append(tries, l.Tries)
	}
	require.Equal(t, []int{1, 30, 30, 30}, tries, "96 tries in 95 s: lines at 0, 30, 60 and 90 s")
}
