package main

import (
	"context"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

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
