package stack

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDatabaseURLKeepsTheServersParameters: a database URL made from Databases.PGServer keeps
// its TLS parameters (a verify-full server stays verify-full) and is plaintext only when the
// server URL says nothing.
func TestDatabaseURLKeepsTheServersParameters(t *testing.T) {
	t.Parallel()
	for server, want := range map[string]string{
		"postgres://postgres@127.0.0.1:5432":                                                    "postgres://postgres@127.0.0.1:5432/msgx?sslmode=disable",
		"postgres://postgres:pw@127.0.0.1:5433?sslmode=verify-full&sslrootcert=%2Ftmp%2Fca.pem": "postgres://postgres:pw@127.0.0.1:5433/msgx?sslmode=verify-full&sslrootcert=%2Ftmp%2Fca.pem",
		"postgres://postgres@127.0.0.1:5432/":                                                   "postgres://postgres@127.0.0.1:5432/msgx?sslmode=disable",
	} {
		got, err := Databases{PGServer: server}.pgURL("msgx")
		require.NoError(t, err)
		require.Equal(t, want, got, server)
	}
}
