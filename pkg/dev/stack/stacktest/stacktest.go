// Package stacktest gives a test of a whole local stack (cmd/demo, cmd/devstack) its own
// throwaway databases and role names on the test servers.
package stacktest

import (
	"context"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/dev/mailboxdb"
	"github.com/msgx/msgx/pkg/dev/stack"
	"github.com/msgx/msgx/pkg/dev/testdb"
)

// Scratch names databases <name>_<random> (PostgreSQL) and <name>_<random>_mailbox (MariaDB) on
// the test servers and a role prefix t_<random>_; when the test ends it drops both databases and
// the roles and mailbox users under the prefix (register it before the stack's own cleanup, so
// that the stack stops first).
func Scratch(t testing.TB, name string) (d stack.Databases, rolePrefix string) {
	t.Helper()
	suffix := testdb.RandomSuffix()
	admin, err := url.Parse(testdb.AdminURL())
	require.NoError(t, err)
	admin.Path, admin.RawQuery = "", ""
	d = stack.Databases{PGServer: admin.String(), PGDatabase: name + "_" + suffix,
		MySQLServer: mailboxdb.ServerDSN(), MySQLDB: name + "_" + suffix + "_mailbox"}
	rolePrefix = "t_" + suffix + "_"
	t.Cleanup(func() {
		require.NoError(t, stack.Drop(context.Background(), d))
		require.NoError(t, stack.DropRoles(context.Background(), d, rolePrefix))
	})
	return d, rolePrefix
}
