package identity_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/dev/testdb"
	"github.com/msgx/msgx/pkg/identity"
	"github.com/msgx/msgx/pkg/sis"
)

var t0 = time.Date(2026, 12, 2, 8, 0, 0, 0, time.UTC)

func audits(t *testing.T, db *testdb.DB) []string {
	t.Helper()
	rows, err := db.Pool.Query(context.Background(),
		`SELECT actor || ': ' || selector || ': ' || reason FROM replay_audit WHERE action = 'identity-set' ORDER BY audit_id`)
	require.NoError(t, err)
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		require.NoError(t, rows.Scan(&s))
		out = append(out, s)
	}
	require.NoError(t, rows.Err())
	return out
}

// The first start stores the configured rule (audited); the same rule starts; a different one
// refuses with one line naming the command; msgxctl identity set changes it (audited), after
// which the new configuration starts.
func TestEnsureAndSet(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx := context.Background()
	week := identity.Rule{Window: 168 * time.Hour}
	_, ok, err := identity.Load(ctx, db.Pool)
	require.NoError(t, err)
	require.False(t, ok)

	require.NoError(t, identity.Ensure(ctx, db.Pool, week, "processor", t0))
	s, ok, err := identity.Load(ctx, db.Pool)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, week, s.Rule)
	require.Equal(t, "processor", s.SetBy)
	require.Equal(t, "first start: the configured rule is stored", s.Reason)
	require.Empty(t, audits(t, db), "the first start's row records itself")
	require.NoError(t, identity.Ensure(ctx, db.Pool, week, "processor", t0.Add(time.Hour)))

	daily := identity.Rule{Window: 72 * time.Hour, IncludeDay: true}
	err = identity.Ensure(ctx, db.Pool, daily, "processor", t0)
	var mm *identity.MismatchError
	require.True(t, errors.As(err, &mm), "%v", err)
	require.NotContains(t, err.Error(), "\n")
	require.Contains(t, err.Error(), `msgxctl identity set --window 72h --include-day=true --reason "…"`)
	require.Contains(t, err.Error(), "MSGX_IDENTITY_WINDOW=72h MSGX_IDENTITY_INCLUDE_DAY=true")
	s, _, err = identity.Load(ctx, db.Pool)
	require.NoError(t, err)
	require.Equal(t, week, s.Rule, "a refused start changes nothing")

	_, _, err = identity.Set(ctx, db.Pool, daily, "ops", "", t0)
	require.ErrorContains(t, err, "--reason")
	before, ok, err := identity.Set(ctx, db.Pool, daily, "ops", "AODB resets SEQN daily", t0.Add(2*time.Hour))
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, week, before.Rule)
	require.NoError(t, identity.Ensure(ctx, db.Pool, daily, "processor", t0.Add(3*time.Hour)))
	require.Equal(t, []string{"ops: --window 72h --include-day=true: AODB resets SEQN daily"}, audits(t, db))
	s, _, err = identity.Load(ctx, db.Pool)
	require.NoError(t, err)
	require.Equal(t, "ops", s.SetBy)
	require.True(t, s.SetAt.Equal(t0.Add(2*time.Hour)))
}

func TestRuleSame(t *testing.T) {
	r := identity.Rule{Window: time.Hour}
	require.True(t, r.Same(t0, t0.Add(time.Hour)))
	require.True(t, r.Same(t0, t0.Add(-time.Hour)))
	require.False(t, r.Same(t0, t0.Add(time.Hour+time.Second)))
	require.False(t, r.Same(t0.Add(time.Hour+time.Second), t0))
	require.True(t, strings.HasPrefix(identity.Command(r), "msgxctl identity set --window 1h "))
	require.Error(t, identity.Ensure(context.Background(), nil, identity.Rule{Window: 1500 * time.Millisecond}, "x", t0))
}

func TestKey(t *testing.T) {
	t.Parallel()
	m := sis.Meta{SNDR: "AODB", TYPE: "FLOP", STYP: "STND", SEQN: "42", DTTM: time.Date(2026, 12, 2, 23, 59, 0, 0, time.UTC)}
	require.Equal(t, "AODB|FLOP|STND|42", identity.Rule{Window: time.Hour}.Key(m))
	require.Equal(t, "AODB|FLOP|STND|42|20261202", identity.Rule{Window: time.Hour, IncludeDay: true}.Key(m))
}

// The binding rule over one batch: a new key binds; its own binding changes nothing; within the
// window a same-key message is a duplicate of the bound one; outside it the key was reused, and
// only the newer message takes the key; a later claim in the batch sees the earlier's binding.
func TestBind(t *testing.T) {
	t.Parallel()
	r := identity.Rule{Window: time.Hour}
	b := func(id int64, d time.Duration) identity.Binding {
		return identity.Binding{MsgID: id, SHA256: []byte{byte(id)}, DTTM: t0.Add(d)}
	}
	bound := map[string]identity.Binding{"own": b(1, 0), "dup": b(2, 0), "old": b(3, 0), "new": b(4, 0)}
	claims := []identity.Claim{
		{Key: "own", Binding: b(1, 0)},
		{Key: "dup", Binding: b(10, time.Hour)},
		{Key: "old", Binding: b(11, -2*time.Hour)},
		{Key: "new", Binding: b(12, 2*time.Hour)},
		{Key: "new", Binding: b(13, 2*time.Hour+time.Minute)},
		{Key: "", Binding: b(14, 0)},
		{Key: "free", Binding: b(15, 0)},
		{Key: "free", Binding: b(16, 3*time.Hour)},
	}
	verdicts, changed := r.Bind(bound, claims)
	d2, d12 := b(2, 0), b(12, 2*time.Hour)
	require.Equal(t, []identity.Verdict{
		{}, {Dup: &d2}, {Reused: true}, {Reused: true}, {Dup: &d12}, {}, {}, {Reused: true},
	}, verdicts)
	require.Equal(t, []identity.Claim{claims[3], {Key: "free", Binding: b(16, 3*time.Hour)}}, changed)
	require.Equal(t, b(12, 2*time.Hour), bound["new"])
	require.Equal(t, b(16, 3*time.Hour), bound["free"])
	require.Equal(t, b(3, 0), bound["old"], "an older message with a reused key leaves the key bound")
}
