package privdb_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/dev/devca"
	"github.com/msgx/msgx/pkg/dev/privdb"
	"github.com/msgx/msgx/pkg/mailbox"
)

func tlsFiles(t *testing.T) *privdb.TLS {
	t.Helper()
	ca, err := devca.New(t.TempDir(), time.Hour)
	require.NoError(t, err)
	return &privdb.TLS{CAFile: ca.CAFile, CertFile: ca.CertFile, KeyFile: ca.KeyFile, MySQLConfig: "privdb-test-" + t.Name()}
}

// A TLS cluster answers over verified TLS after a fast restart and after an immediate stop and
// start (the fault suite's PostgreSQL faults), and its standby streams over TLS and serves TLS.
func TestPostgresTLSAcrossRestartsAndStandby(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p, err := privdb.StartPostgresWith(privdb.Options{TLS: tlsFiles(t), Password: "pw-" + t.Name()})
	require.NoError(t, err)
	defer func() { require.NoError(t, p.Close()) }()
	encrypted := func(url string) {
		t.Helper()
		conn, err := pgx.Connect(ctx, url)
		require.NoError(t, err)
		defer conn.Close(ctx)
		var ssl bool
		require.NoError(t, conn.QueryRow(ctx, `SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()`).Scan(&ssl))
		require.True(t, ssl)
	}
	require.Contains(t, p.ServerURL(), "sslmode=verify-full")
	encrypted(p.AdminURL())
	require.NoError(t, p.Restart())
	encrypted(p.AdminURL())
	require.NoError(t, p.Stop("immediate"))
	require.NoError(t, p.Start())
	encrypted(p.AdminURL())

	s, err := p.StartStandby()
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()
	require.NoError(t, p.WaitStreaming(ctx, false))
	var sender bool
	require.NoError(t, p.QueryRow(ctx, `SELECT bool_and(ssl) FROM pg_stat_replication JOIN pg_stat_ssl USING (pid)`, &sender))
	require.True(t, sender, "the WAL stream is encrypted")
	encrypted(s.AdminURL())
}

// A TLS instance's ServerDSN logs in over verified TLS, also after a restart and after a kill.
func TestMariaDBTLSAcrossRestarts(t *testing.T) {
	t.Parallel()
	files := tlsFiles(t)
	require.NoError(t, mailbox.RegisterTLSCA(files.MySQLConfig, files.CAFile))
	m, err := privdb.StartMariaDBWith(privdb.Options{TLS: files, Password: "pw-tls"})
	require.NoError(t, err)
	defer func() { require.NoError(t, m.Close()) }()
	db, err := sql.Open("mysql", m.ServerDSN())
	require.NoError(t, err)
	defer db.Close()
	encrypted := func() {
		t.Helper()
		db.SetMaxIdleConns(0) // a new session each time: the handshake after the restart is checked
		var name, cipher string
		require.NoError(t, db.QueryRow(`SHOW STATUS LIKE 'Ssl_cipher'`).Scan(&name, &cipher))
		require.NotEmpty(t, cipher)
	}
	encrypted()
	require.NoError(t, m.Restart())
	encrypted()
	require.NoError(t, m.Stop(true))
	require.NoError(t, m.Start())
	encrypted()
}
