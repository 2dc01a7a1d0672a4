package main

import (
	"bytes"
	"context"
	"os"
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

// In production msgxctl reads an environment without a mailbox DSN or Kafka TLS (the migration
// Job and msgxctl.sh never connect to MySQL; the DBA's roles apply --mysql never to Kafka); the
// commands that do connect refuse what production refuses before they connect.
func TestProductionMailboxRefusalOnlyWhereMySQLIsUsed(t *testing.T) {
	t.Setenv("MSGX_ENV", "production")
	t.Setenv("MSGX_PG_URL", "postgres://msgx_admin:pw@db.example:5432/msgx?sslmode=verify-full&sslrootcert=/etc/msgx/tls/pg-ca.crt")
	cfg, err := config.LoadTool()
	require.NoError(t, err, "no MSGX_MYSQL_DSN, no Kafka TLS: the commands that need neither run")
	require.NoError(t, cfg.PGRefusals())
	require.ErrorContains(t, cfg.KafkaRefusals(), "MSGX_KAFKA_TLS: production requires TLS", "kafka verify refuses them")
	_, err = config.Load(settings.RoleJobs)
	require.ErrorContains(t, err, "MSGX_MYSQL_DSN: production requires TLS", "the mailbox stages' composition still refuses it")

	var out bytes.Buffer
	err = rolesCmd(context.Background(), cfg, []string{"apply", "--pg=false", "--mysql"}, &out, func(string) (string, bool) { return "", false })
	require.ErrorContains(t, err, "MSGX_MYSQL_DSN: production requires TLS with a verified server")

	// The DBA's mailbox step sets no PostgreSQL URL; a command that connects to PostgreSQL
	// refuses the default's plaintext before it connects.
	t.Setenv("MSGX_PG_URL", "")
	os.Unsetenv("MSGX_PG_URL")
	cfg, err = config.LoadTool()
	require.NoError(t, err)
	err = migrateCmd(context.Background(), cfg, nil, &out)
	require.ErrorContains(t, err, "MSGX_PG_URL: production requires sslmode=verify-full")
}
