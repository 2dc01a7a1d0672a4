package testdb

import (
	"context"
	"net/url"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/roles"
)

// Roles are msgx's PostgreSQL roles (pkg/roles) applied to one test's schema. PostgreSQL roles
// are global to the cluster, so each test gets its own names (prefix t_<random>_) and passwords;
// the roles are dropped when the test ends.
type Roles struct {
	Prefix    string
	db        *DB
	passwords map[roles.Role]string
}

// Roles applies pkg/roles over the test's schema (once per DB) and returns them.
func (d *DB) Roles(t testing.TB) *Roles {
	t.Helper()
	d.rolesMu.Lock()
	defer d.rolesMu.Unlock()
	if d.roles != nil {
		return d.roles
	}
	r := &Roles{Prefix: "t_" + RandomSuffix() + "_", db: d, passwords: map[roles.Role]string{}}
	for _, role := range roles.PGRoles {
		r.passwords[role] = RandomSuffix() + RandomSuffix()
	}
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, d.adminURL)
	require.NoError(t, err)
	t.Cleanup(func() {
		// Runs before the schema is dropped (cleanups run last-in first-out): revoke what the
		// roles hold in this database, then drop them.
		ctx := context.Background()
		for _, role := range roles.PGRoles {
			name := pgx.Identifier{r.Name(role)}.Sanitize()
			_, err := admin.Exec(ctx, "DROP OWNED BY "+name)
			require.NoError(t, err)
			_, err = admin.Exec(ctx, "DROP ROLE "+name)
			require.NoError(t, err)
		}
		require.NoError(t, admin.Close(ctx))
	})
	_, err = roles.ApplyPG(ctx, admin, roles.PGOptions{Schema: d.Schema, Prefix: r.Prefix, Passwords: r.passwords, ConnLimit: 20})
	require.NoError(t, err, "apply roles over schema %s", d.Schema)
	d.roles = r
	return r
}

// Name is the server-side name of role in this test.
func (r *Roles) Name(role roles.Role) string { return roles.Name(r.Prefix, role) }

// URL is the test schema's URL logged in as role (with its password).
func (r *Roles) URL(role roles.Role) string {
	u, err := url.Parse(r.db.URL)
	if err != nil {
		panic(err)
	}
	u.User = url.UserPassword(r.Name(role), r.passwords[role])
	return u.String()
}

// Pool is a pool on the test schema logged in as role, closed when the test ends.
func (r *Roles) Pool(t testing.TB, role roles.Role) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), r.URL(role))
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return pool
}
