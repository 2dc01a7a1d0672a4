package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/config"
	"github.com/msgx/msgx/pkg/dev/mailboxtest"
	"github.com/msgx/msgx/pkg/dev/testdb"
	"github.com/msgx/msgx/pkg/mailbox"
	"github.com/msgx/msgx/pkg/roles"
	"github.com/msgx/msgx/pkg/settings"
)

// TestRolesApply runs `msgxctl roles apply --mysql` twice over a fresh schema and mailbox: the
// first run creates the roles and users with the passwords of the environment, the second
// creates nothing and succeeds.
func TestRolesApply(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, mb := testdb.New(t), mailboxtest.New(t)
	prefix := "t_" + testdb.RandomSuffix() + "_"
	t.Cleanup(func() {
		for _, r := range roles.PGRoles {
			name := pgx.Identifier{roles.Name(prefix, r)}.Sanitize()
			_, _ = db.Pool.Exec(ctx, "DROP OWNED BY "+name)
			_, err := db.Pool.Exec(ctx, "DROP ROLE IF EXISTS "+name)
			require.NoError(t, err)
		}
		for _, r := range roles.MySQLRoles {
			_, err := mb.SQL.ExecContext(ctx, "DROP USER IF EXISTS "+roles.MySQLUser(roles.MySQLOptions{Prefix: prefix}, r))
			require.NoError(t, err)
		}
	})
	env := map[string]string{"MSGX_ROLE_PASSWORD_INGEST": "pg-secret", "MSGX_MYSQL_ROLE_PASSWORD_INGEST": "my-secret"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	cfg := config.Config{Process: settings.Process{PGURL: db.URL}, Mailbox: mailbox.Config{MySQLDSN: mb.DSN}}
	args := []string{"apply", "--prefix", prefix, "--mysql"}

	var out bytes.Buffer
	require.NoError(t, rolesCmd(ctx, cfg, args, &out, lookup))
	require.Equal(t, len(roles.PGRoles), strings.Count(out.String(), "created role "), out.String())
	require.Contains(t, out.String(), "mailbox users "+prefix+"* applied on "+mb.Name)

	var verifier *string
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT rolpassword FROM pg_authid WHERE rolname = $1`, roles.Name(prefix, roles.Ingest)).Scan(&verifier))
	require.NotNil(t, verifier, "MSGX_ROLE_PASSWORD_INGEST was set")
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT rolpassword FROM pg_authid WHERE rolname = $1`, roles.Name(prefix, roles.Jobs)).Scan(&verifier))
	require.Nil(t, verifier, "no variable, no password")

	// The ingest mailbox user logs in with its password and reads cminmsgs.
	u := strings.Replace(mb.DSN, "root@", roles.Name(prefix, roles.Ingest)+":my-secret@", 1)
	_, err := mb.SQL.ExecContext(ctx, "INSERT INTO cminmsgs (CMINMSGS_CLOB_MSG) VALUES ('x')")
	require.NoError(t, err)
	box, name, err := mailbox.OpenAdmin(u)
	require.NoError(t, err)
	defer box.Close()
	require.Equal(t, mb.Name, name)
	var n int
	require.NoError(t, box.QueryRowContext(ctx, "SELECT count(*) FROM cminmsgs").Scan(&n))
	require.Equal(t, 1, n)

	out.Reset()
	require.NoError(t, rolesCmd(ctx, cfg, args, &out, lookup))
	require.NotContains(t, out.String(), "created role", "the second run creates nothing")

	require.Error(t, rolesCmd(ctx, cfg, []string{"drop"}, &out, lookup))
}
