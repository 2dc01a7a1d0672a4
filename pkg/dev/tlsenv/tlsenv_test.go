package tlsenv_test

import (
	"context"
	"database/sql"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/dev/tlsenv"
	"github.com/msgx/msgx/pkg/kafka"
	"github.com/msgx/msgx/pkg/roles"
)

func TestMain(m *testing.M) { os.Exit(tlsenv.Run(m)) }

var ctx = context.Background()

// TestPostgresVerifyFull: the private cluster answers only over TLS; a client that verifies it
// against the CA gets in (the superuser, and a pkg/roles role with its SCRAM password), a client
// without the CA, without TLS or with a wrong password does not.
func TestPostgresVerifyFull(t *testing.T) {
	t.Parallel()
	pg := tlsenv.PG(t)

	conn, err := pgx.Connect(ctx, pg.AdminURL())
	require.NoError(t, err)
	defer conn.Close(ctx)
	var ssl bool
	require.NoError(t, conn.QueryRow(ctx, `SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()`).Scan(&ssl))
	require.True(t, ssl)

	localhost := strings.Replace(pg.AdminURL(), "127.0.0.1", "localhost", 1)
	c2, err := pgx.Connect(ctx, localhost)
	require.NoError(t, err, "the certificate names localhost too")
	require.NoError(t, c2.Close(ctx))

	noCA := withQuery(t, pg.AdminURL(), "sslrootcert", "")
	_, err = pgx.Connect(ctx, noCA)
	require.ErrorContains(t, err, "certificate signed by unknown authority", "without the CA the server is not trusted")

	_, err = pgx.Connect(ctx, withQuery(t, pg.AdminURL(), "sslmode", "disable"))
	require.ErrorContains(t, err, "no encryption", "plaintext is rejected by pg_hba")

	_, err = pgx.Connect(ctx, pg.URL("postgres", "wrong", "postgres"))
	require.ErrorContains(t, err, "password authentication failed")

	// A migrated schema and msgx's roles over TLS: the role logs in with the password ApplyPG set.
	db := pg.NewDB(t)
	r := db.Roles(t)
	pool := r.Pool(t, roles.Processor)
	var n int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM flight_history`).Scan(&n))
	_, err = pool.Exec(ctx, `INSERT INTO cminmsgs_does_not_exist VALUES (1)`)
	require.Error(t, err)
	bad := r.URL(roles.Processor)
	u, err := url.Parse(bad)
	require.NoError(t, err)
	u.User = url.UserPassword(r.Name(roles.Processor), "wrong")
	_, err = pgx.Connect(ctx, u.String())
	require.ErrorContains(t, err, "password authentication failed")
}

// TestMariaDBVerifiedTLS: the private instance takes only TLS connections verified against the
// CA (tls=msgx-tlsenv); a mailbox user of pkg/roles logs in with its password over TLS.
func TestMariaDBVerifiedTLS(t *testing.T) {
	t.Parallel()
	my := tlsenv.MySQL(t)
	mb := my.NewDB(t)
	var name, cipher string
	require.NoError(t, mb.SQL.QueryRowContext(ctx, `SHOW STATUS LIKE 'Ssl_cipher'`).Scan(&name, &cipher))
	require.NotEmpty(t, cipher, "the session is encrypted")

	users := mb.Users(t)
	ingest, err := sql.Open("mysql", users.DSN(roles.Ingest))
	require.NoError(t, err)
	defer ingest.Close()
	require.NoError(t, ingest.QueryRowContext(ctx, `SHOW STATUS LIKE 'Ssl_cipher'`).Scan(&name, &cipher))
	require.NotEmpty(t, cipher)
	var n int
	require.NoError(t, ingest.QueryRowContext(ctx, `SELECT count(*) FROM cminmsgs`).Scan(&n))

	cfg, err := mysql.ParseDSN(users.DSN(roles.Ingest))
	require.NoError(t, err)
	cfg.TLSConfig = "true" // TLS with the system's roots: the private CA is not among them
	require.ErrorContains(t, ping(cfg), "certificate signed by unknown authority")
	cfg.TLSConfig = "false"
	cfg.TLS = nil
	// MariaDB 10.11 answers a plaintext login under require_secure_transport with "Access
	// denied" (same user and password succeed over TLS above).
	err = ping(cfg)
	require.Error(t, err, "plaintext is refused")
	require.Regexp(t, "Access denied|insecure transport", err.Error())
	var on string
	require.NoError(t, mb.SQL.QueryRowContext(ctx, `SELECT @@require_secure_transport`).Scan(&on))
	require.Equal(t, "1", on)
	cfg.TLSConfig = tlsenv.TLSConfigName
	cfg.Passwd = "wrong"
	require.ErrorContains(t, ping(cfg), "Access denied")
}

func ping(cfg *mysql.Config) error {
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		return err
	}
	defer db.Close()
	return db.PingContext(ctx)
}

// TestKafkaTLSSCRAM: the in-process broker with TLS and SCRAM-SHA-512 takes the adapter with the
// CA and the right password, and refuses it without the CA, without TLS, or with a wrong password.
func TestKafkaTLSSCRAM(t *testing.T) {
	t.Parallel()
	_, cfg := tlsenv.Kafka(t, "msgx", "s3cret")
	p, err := kafka.Dial(cfg)
	require.NoError(t, err)
	errs := p.Send(ctx, []kafka.Record{{Topic: cfg.TopicChanges, Key: "1", Value: []byte(`{}`)}})
	require.NoError(t, errs[0])
	require.NoError(t, p.Close())

	for name, change := range map[string]func(*kafka.Config){
		"no CA":          func(c *kafka.Config) { c.TLSCAFile = "" },
		"no TLS":         func(c *kafka.Config) { c.TLS = false },
		"wrong password": func(c *kafka.Config) { c.SASLPassword = "wrong" },
		"SCRAM-SHA-256":  func(c *kafka.Config) { c.SASLMechanism = "SCRAM-SHA-256" },
	} {
		c := cfg
		change(&c)
		c.DialTimeout = 2e9
		_, err := kafka.Dial(c)
		require.Error(t, err, name)
	}
}

func withQuery(t *testing.T, raw, key, value string) string {
	t.Helper()
	u, err := url.Parse(raw)
	require.NoError(t, err)
	q := u.Query()
	if value == "" {
		q.Del(key)
	} else {
		q.Set(key, value)
	}
	u.RawQuery = q.Encode()
	return u.String()
}
