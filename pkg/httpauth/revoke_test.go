package httpauth_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/dev/testdb"
	"github.com/msgx/msgx/pkg/httpauth"
	"github.com/msgx/msgx/pkg/roles"
)

// TestRevokedAPITokenRefusedOnEveryReplica: two ingest replicas (two gates, each with its own
// RevokedSet over the ingest role) serve a client's token; msgxctl's revoke (the operators' role)
// records it, and both refuse it (401, reason "revoked") once their set is a period old, without a
// restart, while the other clients' tokens keep working.
func TestRevokedAPITokenRefusedOnEveryReplica(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	r := db.Roles(t)
	ctx := context.Background()
	tok, e, err := httpauth.NewToken("portal", httpauth.ScopeRead)
	require.NoError(t, err)
	other, e2, err := httpauth.NewToken("ops", httpauth.ScopeRead)
	require.NoError(t, err)
	replicas := []*bundle{setup(t, httpauth.Config{}), setup(t, httpauth.Config{})}
	for _, b := range replicas {
		refused := b.gate.Refused
		b.gate = httpauth.NewGate(httpauth.Config{Tokens: httpauth.Clients{e, e2}}, b.clock)
		b.gate.Revoked = httpauth.NewRevokedSet(r.Pool(t, roles.Ingest), httpauth.RevokedRefresh, b.clock)
		b.gate.Refused = refused
	}
	for _, b := range replicas {
		require.Equal(t, http.StatusOK, b.do(t, httpauth.ScopeRead, "Bearer "+tok, nil).code)
	}

	done, err := httpauth.Revoke(ctx, r.Pool(t, roles.Admin), e, "ops", "contract ended", replicas[0].clock())
	require.NoError(t, err)
	require.True(t, done)
	for _, b := range replicas {
		b.advance(httpauth.RevokedRefresh)
		a := b.do(t, httpauth.ScopeRead, "Bearer "+tok, nil)
		require.Equal(t, http.StatusUnauthorized, a.code)
		require.Contains(t, a.body, "revoked bearer token")
		require.Contains(t, a.header.Get("WWW-Authenticate"), `error="invalid_token"`)
		require.Equal(t, []string{"revoked"}, b.refused)
		require.Equal(t, http.StatusOK, b.do(t, httpauth.ScopeRead, "Bearer "+other, nil).code, "another client's token")
	}
}

// TestRevokedSetKeepsTheLastReadOnFailure: a set that read a revocation keeps it when the next
// read fails (here the ingest role loses its grant on token_revoked), says so through Failed, and
// tries again only a period later.
func TestRevokedSetKeepsTheLastReadOnFailure(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	r := db.Roles(t)
	ctx := context.Background()
	now := time.Date(2026, 12, 2, 8, 0, 0, 0, time.UTC)
	_, e, err := httpauth.NewToken("portal", httpauth.ScopeRead)
	require.NoError(t, err)
	done, err := httpauth.Revoke(ctx, r.Pool(t, roles.Admin), e, "ops", "leaked", now)
	require.NoError(t, err)
	require.True(t, done)
	set := httpauth.NewRevokedSet(r.Pool(t, roles.Ingest), httpauth.RevokedRefresh, func() time.Time { return now })
	var failed []error
	set.Failed = func(err error) { failed = append(failed, err) }
	require.True(t, set.Revoked(ctx, e.Hash))
	require.Empty(t, failed)

	_, err = db.Pool.Exec(ctx, `REVOKE SELECT ON token_revoked FROM `+r.Name(roles.Ingest))
	require.NoError(t, err)
	now = now.Add(httpauth.RevokedRefresh)
	require.True(t, set.Revoked(ctx, e.Hash), "the last set read stays in force")
	require.Len(t, failed, 1)
	require.ErrorContains(t, failed[0], "permission denied")
	require.True(t, set.Revoked(ctx, e.Hash))
	require.Len(t, failed, 1, "no second read within the period")
	now = now.Add(httpauth.RevokedRefresh)
	require.True(t, set.Revoked(ctx, e.Hash))
	require.Len(t, failed, 2)
}
