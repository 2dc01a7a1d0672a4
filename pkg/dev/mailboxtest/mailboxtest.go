// Package mailboxtest gives each test a fresh legacy mailbox database (pkg/dev/mailboxdb)
// dropped when the test ends.
package mailboxtest

import (
	"context"
	"database/sql"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/dev/mailboxdb"
	"github.com/msgx/msgx/pkg/dev/testdb"
)

// DB is one test's mailbox database.
type DB struct {
	Name string
	DSN  string // give it to code under test (parseTime=true)
	SQL  *sql.DB
}

// New creates a fresh mailbox database for the test and drops it when the test ends.
func New(t testing.TB) *DB {
	t.Helper()
	return NewAt(t, mailboxdb.ServerDSN())
}

// NewAt is New on the server of serverDSN (an administrator's DSN without a database), e.g. a
// private TLS instance (pkg/dev/tlsenv).
func NewAt(t testing.TB, serverDSN string) *DB {
	t.Helper()
	ctx := context.Background()
	name := "t_" + testdb.RandomSuffix()
	dsn, err := mailboxdb.CreateDatabase(ctx, serverDSN, name)
	require.NoError(t, err, "create mailbox database on %s", serverDSN)
	db, err := sql.Open("mysql", dsn)
	require.NoError(t, err)
	t.Cleanup(func() {
		_, err := db.ExecContext(context.Background(), "DROP DATABASE `"+name+"`")
		require.NoError(t, err)
		require.NoError(t, db.Close())
	})
	return &DB{Name: name, DSN: dsn, SQL: db}
}
