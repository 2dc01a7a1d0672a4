package main

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/dev/testdb"
	"github.com/msgx/msgx/pkg/identity"
	"github.com/msgx/msgx/pkg/roles"
)

// msgxctl identity set, as the operator role, needs the whole rule and a reason, writes it with
// an audit row, and the processor's start check then accepts the new rule; the processor role
// stores the first rule.
func TestIdentitySetAndShow(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx := context.Background()
	r := db.Roles(t)
	require.NoError(t, identity.Ensure(ctx, r.Pool(t, roles.Processor), identity.Rule{Window: 168 * time.Hour}, "processor", time.Now()))
	cfg := ctlConfig(r.URL(roles.Admin), "")
	var out bytes.Buffer

	require.ErrorContains(t, identityCmd(ctx, cfg, []string{"set", "--window", "72h", "--reason", "x"}, &out), "--include-day are required")
	require.ErrorContains(t, identityCmd(ctx, cfg, []string{"set", "--window", "72h", "--include-day=true"}, &out), "--reason")
	require.NoError(t, identityCmd(ctx, cfg, []string{"set", "--window", "72h", "--include-day=true", "--reason", "AODB resets SEQN daily", "--actor", "ops"}, &out))
	require.Equal(t, "identity rule set: --window 72h --include-day=true (was: --window 168h --include-day=false); configure every processor to match before it starts (docs/runbook.md)\n", out.String())
	require.Equal(t, 1, count(t, db, `SELECT count(*) FROM replay_audit WHERE action = 'identity-set' AND actor = 'ops'
		AND reason = 'AODB resets SEQN daily' AND selector = '--window 72h --include-day=true'`))
	require.NoError(t, identity.Ensure(ctx, r.Pool(t, roles.Processor), identity.Rule{Window: 72 * time.Hour, IncludeDay: true}, "processor", time.Now()))

	out.Reset()
	require.NoError(t, identityCmd(ctx, ctlConfig(r.URL(roles.Reader), ""), []string{"show"}, &out))
	require.Contains(t, out.String(), "identity rule: --window 72h --include-day=true (set ")
	require.Contains(t, out.String(), "by ops: AODB resets SEQN daily)")
}
