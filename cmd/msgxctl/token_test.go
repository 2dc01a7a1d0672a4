package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/config"
	"github.com/msgx/msgx/pkg/dev/testdb"
	"github.com/msgx/msgx/pkg/httpauth"
	"github.com/msgx/msgx/pkg/roles"
)

// TestTokenNew: the printed entry parses as MSGX_API_TOKENS and holds the hash of the printed
// token with the asked scopes; the token itself is not in the entry.
func TestTokenNew(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	require.NoError(t, tokenCmd(context.Background(), config.Config{}, []string{"new", "portal", "--scope", "read,send"}, &out))
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Len(t, lines, 4, out.String())
	token, entry := strings.TrimSpace(lines[1]), strings.TrimSpace(lines[3])
	require.True(t, strings.HasPrefix(token, httpauth.TokenPrefix))
	require.NotContains(t, entry, token)
	var cs httpauth.Clients
	require.NoError(t, cs.UnmarshalText([]byte(entry)))
	require.Len(t, cs, 1)
	require.Equal(t, "portal", cs[0].Name)
	require.Equal(t, httpauth.Hash(token), cs[0].Hash)
	require.Equal(t, []httpauth.Scope{httpauth.ScopeRead, httpauth.ScopeSend}, cs[0].Scopes)

	for _, args := range [][]string{{"new"}, {"new", "portal"}, {"new", "portal", "--scope", "write"}, {"old", "portal"}, {"new", "--scope", "read"}} {
		require.Error(t, tokenCmd(context.Background(), config.Config{}, args, &out), "%v", args)
	}
}

// TestTokenListAndRevoke: list names the configured console and API tokens; revoke (as the
// operators' role) records a console token as revoked with its audit row, list says so, a
// second revoke changes nothing; an API token is revoked the same way, and an unknown client is
// refused.
func TestTokenListAndRevoke(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	var console, api httpauth.Clients
	require.NoError(t, console.UnmarshalText(fmt.Appendf(nil, "ana:read+operate:%x,bo:read:%x", httpauth.Hash("a"), httpauth.Hash("b"))))
	require.NoError(t, api.UnmarshalText(fmt.Appendf(nil, "portal:send:%x", httpauth.Hash("p"))))
	cfg := ctlConfig(db.Roles(t).URL(roles.Admin), "Asia/Shanghai")
	cfg.Console.Tokens, cfg.API.Access.Tokens = console, api

	var out bytes.Buffer
	require.NoError(t, tokenCmd(context.Background(), cfg, []string{"list"}, &out))
	require.Len(t, strings.Split(strings.TrimSpace(out.String()), "\n"), 3, out.String())
	require.NotContains(t, out.String(), "revoked")

	out.Reset()
	require.NoError(t, tokenCmd(context.Background(), cfg, []string{"revoke", "ana", "--reason", "left the team", "--actor", "ops"}, &out))
	require.Contains(t, out.String(), "revoked: console token of ana")
	require.NoError(t, tokenCmd(context.Background(), cfg, []string{"revoke", "ana", "--reason", "again", "--actor", "ops"}, &out))
	require.Contains(t, out.String(), "already revoked")
	var n int
	require.NoError(t, db.Pool.QueryRow(context.Background(), `SELECT count(*) FROM replay_audit WHERE action = 'token-revoke' AND actor = 'ops' AND reason = 'left the team'`).Scan(&n))
	require.Equal(t, 1, n)

	out.Reset()
	require.NoError(t, tokenCmd(context.Background(), cfg, []string{"list", "--json"}, &out))
	require.Contains(t, out.String(), `"reason": "left the team"`)
	require.Equal(t, 1, strings.Count(out.String(), `"revoked"`), out.String())
	out.Reset()
	require.NoError(t, tokenCmd(context.Background(), cfg, []string{"revoke", "portal", "--reason", "contract ended", "--actor", "ops"}, &out))
	require.Contains(t, out.String(), "revoked: API token of portal")
	require.Contains(t, out.String(), "every ingest replica refuses it within 5s")
	require.Error(t, tokenCmd(context.Background(), cfg, []string{"revoke", "nobody", "--reason", "r"}, &out), "an unknown client")

	// A user of the console's OpenID Connect log-in: revoked by the identity their sessions name.
	_, err := db.Pool.Exec(context.Background(), `INSERT INTO console_session (session_sha256, user_name, scope, token_sha256, created_at, expires_at, oidc_groups)
		VALUES ($1, 'oidc:carl', 'read', $2, now(), now() + interval '1 hour', '{ops}')`, bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 32))
	require.NoError(t, err)
	out.Reset()
	require.NoError(t, tokenCmd(context.Background(), cfg, []string{"revoke", "oidc:carl", "--reason", "left", "--actor", "ops"}, &out))
	require.Contains(t, out.String(), "revoked: oidc:carl (identity sha256:020202020202…)")
	out.Reset()
	require.NoError(t, tokenCmd(context.Background(), cfg, []string{"list"}, &out))
	require.Regexp(t, `console +oidc:carl .*revoked .* by ops: left`, out.String())
	require.Error(t, tokenCmd(context.Background(), cfg, []string{"revoke", "oidc:nobody", "--reason", "r"}, &out), "no session: nothing to revoke")
	require.Error(t, tokenCmd(context.Background(), cfg, []string{"revoke", "ana"}, &out), "a reason is required")
}
