package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/config"
	"github.com/msgx/msgx/pkg/httpauth"
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
