package tlsenv

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/dev/testdb"
)

// Postgres is the private TLS cluster: only hostssl connections with SCRAM-SHA-256 are
// accepted, plaintext ones are rejected by pg_hba.
type Postgres struct {
	Port     int
	CA       *CA
	Password string // of the superuser postgres
	dir      string
}

var (
	pgOnce sync.Once
	pgInst *Postgres
	pgErr  error
)

// PG returns the process's private PostgreSQL cluster, starting it on first use.
func PG(t testing.TB) *Postgres {
	t.Helper()
	pgOnce.Do(func() {
		mu.Lock()
		defer mu.Unlock()
		pgInst, pgErr = startPostgres()
	})
	require.NoError(t, pgErr, "start the private TLS PostgreSQL")
	return pgInst
}

// URL is a verify-full URL for user with password on database db.
func (p *Postgres) URL(user, password, db string) string {
	u := url.URL{Scheme: "postgres", User: url.UserPassword(user, password), Host: fmt.Sprintf("127.0.0.1:%d", p.Port), Path: "/" + db}
	q := url.Values{}
	q.Set("sslmode", "verify-full")
	q.Set("sslrootcert", p.CA.CAFile)
	u.RawQuery = q.Encode()
	return u.String()
}

// AdminURL is the superuser's verify-full URL.
func (p *Postgres) AdminURL() string { return p.URL("postgres", p.Password, "postgres") }

// NewDB is testdb.NewAt on this cluster: a fresh migrated schema, reached over TLS.
func (p *Postgres) NewDB(t testing.TB) *testdb.DB {
	t.Helper()
	return testdb.NewAt(t, p.AdminURL())
}

func pgBin(name string) (string, error) {
	m, _ := filepath.Glob("/usr/lib/postgresql/*/bin/" + name)
	if len(m) == 0 {
		return "", fmt.Errorf("%s not found under /usr/lib/postgresql/*/bin", name)
	}
	sort.Strings(m)
	return m[len(m)-1], nil
}

func runAs(user string, args ...string) error {
	cmd := exec.Command("runuser", append([]string{"-u", user, "--"}, args...)...)
	cmd.Dir = "/"
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s: %w: %s", filepath.Base(args[0]), err, out)
	}
	return nil
}

func startPostgres() (*Postgres, error) {
	if err := requireRoot(); err != nil {
		return nil, err
	}
	rootDir, c, err := setup()
	if err != nil {
		return nil, err
	}
	initdb, err := pgBin("initdb")
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(rootDir, "pg")
	data := filepath.Join(dir, "data")
	p := &Postgres{CA: c, Password: testdb.RandomSuffix() + testdb.RandomSuffix(), dir: dir}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	for _, f := range []struct {
		name string
		data []byte
	}{{"pwfile", []byte(p.Password + "\n")}} {
		if err := os.WriteFile(filepath.Join(dir, f.name), f.data, 0o600); err != nil {
			return nil, err
		}
	}
	if err := copyFile(c.KeyFile, filepath.Join(dir, "server.key"), 0o600); err != nil {
		return nil, err
	}
	if err := copyFile(c.CertFile, filepath.Join(dir, "server.pem"), 0o644); err != nil {
		return nil, err
	}
	if err := chown(dir, "postgres"); err != nil {
		return nil, err
	}
	if err := runAs("postgres", initdb, "-D", data, "-U", "postgres", "--auth=scram-sha-256",
		"--pwfile="+filepath.Join(dir, "pwfile"), "-E", "UTF8", "--no-sync", "--no-instructions"); err != nil {
		return nil, err
	}
	for p.Port == 0 {
		if p.Port, err = freePort(); err != nil {
			return nil, err
		}
	}
	conf := fmt.Sprintf(`
listen_addresses = '127.0.0.1'
port = %d
unix_socket_directories = '%s'
ssl = on
ssl_cert_file = '%s'
ssl_key_file = '%s'
ssl_min_protocol_version = 'TLSv1.2'
password_encryption = 'scram-sha-256'
fsync = off
synchronous_commit = off
full_page_writes = off
max_connections = 200
`, p.Port, dir, filepath.Join(dir, "server.pem"), filepath.Join(dir, "server.key"))
	if err := appendFile(filepath.Join(data, "postgresql.conf"), conf); err != nil {
		return nil, err
	}
	hba := "hostssl all all 127.0.0.1/32 scram-sha-256\nhostnossl all all 0.0.0.0/0 reject\n"
	if err := os.WriteFile(filepath.Join(data, "pg_hba.conf"), []byte(hba), 0o600); err != nil {
		return nil, err
	}
	if err := chown(data, "postgres"); err != nil {
		return nil, err
	}
	pgCtl, err := pgBin("pg_ctl")
	if err != nil {
		return nil, err
	}
	onShutdown(func() error { return stopPostgres(data) })
	if err := runAs("postgres", pgCtl, "-D", data, "-l", filepath.Join(dir, "log"), "-w", "-t", "60", "start"); err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "log"))
		return nil, fmt.Errorf("%w\n%s", err, log)
	}
	// One check that the cluster answers over verified TLS.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, p.AdminURL())
	if err != nil {
		return nil, fmt.Errorf("connect to the TLS cluster: %w", err)
	}
	_ = conn.Close(ctx)
	return p, nil
}

// stopPostgres stops the cluster of data at once (its data is thrown away).
func stopPostgres(data string) error {
	pgCtl, err := pgBin("pg_ctl")
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(data, "postmaster.pid")); err != nil {
		return nil // not running
	}
	return runAs("postgres", pgCtl, "-D", data, "-m", "immediate", "-w", "stop")
}

func appendFile(path, text string) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(text); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
