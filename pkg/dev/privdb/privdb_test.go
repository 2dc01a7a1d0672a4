package privdb

import (
	"context"
	"database/sql"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// A private cluster keeps its port and its data across a fast restart and an immediate
// stop/start; Close removes it.
func TestPostgresRestartKeepsPortAndData(t *testing.T) {
	t.Parallel()
	p, err := StartPostgres()
	require.NoError(t, err)
	defer func() { require.NoError(t, p.Close()) }()
	ctx := context.Background()
	exec := func(q string) int {
		conn, err := pgx.Connect(ctx, p.AdminURL())
		require.NoError(t, err)
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, q)
		require.NoError(t, err)
		var n int
		require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FROM kept`).Scan(&n))
		return n
	}
	require.Equal(t, 1, exec(`CREATE TABLE kept (i int); INSERT INTO kept VALUES (1)`))
	require.NoError(t, p.Restart())
	require.Equal(t, 2, exec(`INSERT INTO kept VALUES (2)`))
	require.NoError(t, p.Stop("immediate"))
	_, err = pgx.Connect(ctx, p.AdminURL())
	require.Error(t, err, "stopped")
	require.NoError(t, p.Start())
	require.Equal(t, 3, exec(`INSERT INTO kept VALUES (3)`))
}

// A private instance answers root over TCP and keeps committed rows across a restart and a kill.
func TestMariaDBRestartKeepsPortAndData(t *testing.T) {
	t.Parallel()
	m, err := StartMariaDB()
	require.NoError(t, err)
	defer func() { require.NoError(t, m.Close()) }()
	db, err := sql.Open("mysql", m.ServerDSN())
	require.NoError(t, err)
	defer db.Close()
	count := func() int {
		var n int
		require.NoError(t, db.QueryRow(`SELECT count(*) FROM k.kept`).Scan(&n))
		return n
	}
	for _, q := range []string{`CREATE DATABASE k`, `CREATE TABLE k.kept (i int) ENGINE=InnoDB`, `INSERT INTO k.kept VALUES (1)`} {
		_, err := db.Exec(q)
		require.NoError(t, err)
	}
	require.NoError(t, m.Restart())
	require.Equal(t, 1, count())
	_, err = db.Exec(`INSERT INTO k.kept VALUES (2)`)
	require.NoError(t, err)
	require.NoError(t, m.Stop(true))
	require.Error(t, db.Ping(), "stopped")
	require.NoError(t, m.Start())
	require.Equal(t, 2, count())
}
