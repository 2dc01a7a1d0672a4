package mailboxtest

import (
	"context"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/dev/testdb"
	"github.com/msgx/msgx/pkg/roles"
)

// Users are msgx's mailbox users (pkg/roles) with the grants of docs/spec.md §14 on one test's database.
// MySQL accounts are global to the server, so each test gets its own names (prefix t_<random>_)
// and passwords; the accounts are dropped when the test ends.
type Users struct {
	Prefix    string
	db        *DB
	passwords map[roles.Role]string
}

// Users applies pkg/roles' mailbox users and grants on the test's database.
func (d *DB) Users(t testing.TB) *Users {
	t.Helper()
	u := &Users{Prefix: "t_" + testdb.RandomSuffix() + "_", db: d, passwords: map[roles.Role]string{}}
	for _, r := range roles.MySQLRoles {
		u.passwords[r] = testdb.RandomSuffix() + testdb.RandomSuffix()
	}
	opts := roles.MySQLOptions{Database: d.Name, Prefix: u.Prefix, Passwords: u.passwords}
	t.Cleanup(func() {
		for _, r := range roles.MySQLRoles {
			_, err := d.SQL.ExecContext(context.Background(), "DROP USER IF EXISTS "+roles.MySQLUser(opts, r))
			require.NoError(t, err)
		}
	})
	require.NoError(t, roles.ApplyMySQL(context.Background(), d.SQL, opts))
	return u
}

// DSN is the test database's DSN logged in as role's user (parseTime=true).
func (u *Users) DSN(role roles.Role) string {
	cfg, err := mysql.ParseDSN(u.db.DSN)
	if err != nil {
		panic(err)
	}
	cfg.User, cfg.Passwd = roles.Name(u.Prefix, role), u.passwords[role]
	return cfg.FormatDSN()
}
