package roles_test

import (
	"database/sql"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/dev/mailboxtest"
	"github.com/msgx/msgx/pkg/dev/testdb"
	"github.com/msgx/msgx/pkg/roles"
)

// TestApplyPGIsExactAndIdempotent: applying again changes nothing, a privilege granted by hand
// is taken back, passwords are stored as SCRAM verifiers, and on a schema without tables the
// report lists what is missing.
func TestApplyPGIsExactAndIdempotent(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	r := db.Roles(t)
	ingest := pgx.Identifier{r.Name(roles.Ingest)}.Sanitize()
	_, err := db.Pool.Exec(ctx, "GRANT SELECT, DELETE ON msg_event TO "+ingest)
	require.NoError(t, err)
	_, err = db.Pool.Exec(ctx, "GRANT pg_read_all_stats TO "+ingest+"; REVOKE pg_read_all_stats FROM "+pgx.Identifier{r.Name(roles.Jobs)}.Sanitize())
	require.NoError(t, err)

	conn, err := pgx.Connect(ctx, db.URL)
	require.NoError(t, err)
	defer conn.Close(ctx)
	rep, err := roles.ApplyPG(ctx, conn, roles.PGOptions{Schema: db.Schema, Prefix: r.Prefix})
	require.NoError(t, err)
	require.Empty(t, rep.Created, "the roles exist")
	require.Empty(t, rep.Missing)

	priv := func(role roles.Role, table, priv string) bool {
		var ok bool
		require.NoError(t, conn.QueryRow(ctx, `SELECT has_table_privilege($1, $2, $3)`,
			r.Name(role), db.Schema+"."+table, priv).Scan(&ok))
		return ok
	}
	require.False(t, priv(roles.Ingest, "msg_event", "SELECT"), "a grant outside the table is revoked")
	require.False(t, priv(roles.Ingest, "msg_event", "DELETE"))
	require.True(t, priv(roles.Ingest, "proc_state", "INSERT"))
	require.True(t, priv(roles.Processor, "flight_history", "SELECT"))
	require.False(t, priv(roles.Processor, "flight_history", "INSERT"))
	require.False(t, priv(roles.Reader, "proc_state", "UPDATE"))

	member := func(role roles.Role) bool {
		var ok bool
		require.NoError(t, conn.QueryRow(ctx, `SELECT pg_has_role($1, 'pg_read_all_stats', 'MEMBER')`, r.Name(role)).Scan(&ok))
		return ok
	}
	require.True(t, member(roles.Processor), "the marker roles read the standbys' replay positions")
	require.True(t, member(roles.Jobs), "a membership taken away is given back")
	require.False(t, member(roles.Ingest), "a membership outside the table is revoked")
	require.False(t, member(roles.Reader))

	var verifier string
	require.NoError(t, conn.QueryRow(ctx, `SELECT rolpassword FROM pg_authid WHERE rolname = $1`, r.Name(roles.Ingest)).Scan(&verifier))
	require.True(t, strings.HasPrefix(verifier, "SCRAM-SHA-256$4096:"), verifier)

	var members int
	require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FROM leader_lease_member WHERE db_role LIKE $1`, r.Prefix+"%").Scan(&members))
	require.Equal(t, 4, members)

	// A schema without msgx's tables (before the first migration): roles and schema grants only.
	empty := "t_" + testdb.RandomSuffix()
	_, err = conn.Exec(ctx, "CREATE SCHEMA "+empty)
	require.NoError(t, err)
	defer conn.Exec(ctx, "DROP SCHEMA "+empty+" CASCADE") //nolint:errcheck
	rep, err = roles.ApplyPG(ctx, conn, roles.PGOptions{Schema: empty, Prefix: r.Prefix})
	require.NoError(t, err)
	require.Contains(t, rep.Missing, empty+".flight_history")
	_, err = conn.Exec(ctx, "REVOKE ALL ON SCHEMA "+empty+" FROM "+strings.Join(quoted(r), ", "))
	require.NoError(t, err)
}

func quoted(r *testdb.Roles) []string {
	var out []string
	for _, role := range roles.PGRoles {
		out = append(out, pgx.Identifier{r.Name(role)}.Sanitize())
	}
	return out
}

// showGrants is SHOW GRANTS FOR user, one grant a line.
func showGrants(t *testing.T, db *sql.DB, user string) []string {
	t.Helper()
	rows, err := db.QueryContext(ctx, "SHOW GRANTS FOR "+user)
	require.NoError(t, err)
	defer rows.Close()
	var grants []string
	for rows.Next() {
		var g string
		require.NoError(t, rows.Scan(&g))
		grants = append(grants, g)
	}
	require.NoError(t, rows.Err())
	return grants
}

// TestApplyMySQLIsExact: a privilege granted by hand is taken back; the users hold only the grants of
// docs/spec.md §14.
func TestApplyMySQLIsExact(t *testing.T) {
	t.Parallel()
	mb := mailboxtest.New(t)
	u := mb.Users(t)
	opts := roles.MySQLOptions{Database: mb.Name, Prefix: u.Prefix}
	_, err := mb.SQL.ExecContext(ctx, "GRANT DELETE ON `"+mb.Name+"`.cminmsgs TO "+roles.MySQLUser(opts, roles.Processor))
	require.NoError(t, err)
	require.NoError(t, roles.ApplyMySQL(ctx, mb.SQL, opts))
	grants := showGrants(t, mb.SQL, roles.MySQLUser(opts, roles.Processor))
	all := strings.Join(grants, "\n")
	require.NotContains(t, all, "DELETE")
	require.Len(t, grants, 2, "USAGE (login) and the marker columns: %s", all)
	require.Regexp(t, "UPDATE \\(`CMINMSGS_(STATUS|DATE_PROCESSED)`, `CMINMSGS_(STATUS|DATE_PROCESSED)`\\) ON `"+mb.Name+"`.`cminmsgs`", all)
	require.Error(t, roles.ApplyMySQL(ctx, mb.SQL, roles.MySQLOptions{Database: "x`; DROP DATABASE y", Prefix: u.Prefix}))

	// PROCESS for ingest's gap proof only when asked, and taken back when not.
	ingestGrants := func() string { return strings.Join(showGrants(t, mb.SQL, roles.MySQLUser(opts, roles.Ingest)), "\n") }
	require.NotContains(t, ingestGrants(), "PROCESS")
	withProcess := opts
	withProcess.IngestProcess = true
	require.NoError(t, roles.ApplyMySQL(ctx, mb.SQL, withProcess))
	require.Contains(t, ingestGrants(), "GRANT PROCESS ON *.*")
	require.NoError(t, roles.ApplyMySQL(ctx, mb.SQL, opts))
	require.NotContains(t, ingestGrants(), "PROCESS")
}
