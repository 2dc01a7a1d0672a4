package privdb

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/jackc/pgx/v5"
)

// Postgres is a private cluster on 127.0.0.1:Port, superuser postgres: plaintext with trust, or
// as Options say (TLS only, SCRAM with the password).
type Postgres struct {
	Port int
	opts Options
	dir  string
	data string
}

// StartPostgres initialises and starts a private plaintext cluster.
func StartPostgres() (*Postgres, error) { return StartPostgresWith(Options{}) }

// StartPostgresWith initialises and starts a private cluster made as opts say.
func StartPostgresWith(opts Options) (*Postgres, error) {
	dir, err := newDir("pg")
	if err != nil {
		return nil, err
	}
	p := &Postgres{opts: opts, dir: dir, data: filepath.Join(dir, "data")}
	if err := p.init(); err != nil {
		_ = p.Close()
		return nil, err
	}
	if err := p.Start(); err != nil {
		_ = p.Close()
		return nil, err
	}
	return p, nil
}

// init: fsync is off (the machine does not crash in a test) but every commit is written before
// it returns (synchronous_commit on, unless Options.Fast), so a killed or immediately stopped
// server loses nothing.
func (p *Postgres) init() error {
	initdb, err := pgBin("initdb")
	if err != nil {
		return err
	}
	auth := []string{"--auth=trust"}
	hba := "local all all trust\nhost all all 127.0.0.1/32 trust\nhost replication all 127.0.0.1/32 trust\n"
	if p.opts.Password != "" {
		pwfile := filepath.Join(p.dir, "pwfile")
		if err := os.WriteFile(pwfile, []byte(p.opts.Password+"\n"), 0o600); err != nil {
			return err
		}
		auth = []string{"--auth-local=trust", "--auth-host=scram-sha-256", "--pwfile=" + pwfile}
		hba = "local all all trust\nhost all all 127.0.0.1/32 scram-sha-256\nhost replication all 127.0.0.1/32 scram-sha-256\n"
	}
	var tlsConf string
	if p.opts.TLS != nil {
		cert, key, err := p.opts.TLS.install(p.dir)
		if err != nil {
			return err
		}
		tlsConf = fmt.Sprintf("ssl = on\nssl_cert_file = '%s'\nssl_key_file = '%s'\nssl_min_protocol_version = 'TLSv1.2'\n", cert, key)
		// Replication (a standby's pg_basebackup and WAL stream) goes over TLS too.
		hba = "local all all trust\nhostssl all all 127.0.0.1/32 scram-sha-256\nhostssl replication all 127.0.0.1/32 scram-sha-256\n" +
			"hostnossl all all 0.0.0.0/0 reject\nhostnossl replication all 0.0.0.0/0 reject\n"
		if p.opts.Password == "" {
			return errors.New("a TLS cluster needs a password (hostssl with SCRAM)")
		}
	}
	if err := chown(p.dir, "postgres"); err != nil {
		return err
	}
	if err := runAs("postgres", append(append([]string{initdb, "-D", p.data, "-U", "postgres"}, auth...),
		"-E", "UTF8", "--no-sync", "--no-instructions")...); err != nil {
		return err
	}
	if p.Port, err = freePort(); err != nil {
		return err
	}
	conf := fmt.Sprintf(`
listen_addresses = '127.0.0.1'
port = %d
unix_socket_directories = '%s'
fsync = off
full_page_writes = off
max_connections = 300
password_encryption = 'scram-sha-256'
%s`, p.Port, p.dir, tlsConf)
	if p.opts.Fast {
		conf += "synchronous_commit = off\n"
	}
	f, err := os.OpenFile(filepath.Join(p.data, "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(conf); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(p.data, "pg_hba.conf"), []byte(hba), 0o600); err != nil {
		return err
	}
	return chown(p.data, "postgres")
}

// ServerURL is the superuser's URL without a database (stack.Databases.PGServer); for a TLS
// cluster it carries sslmode=verify-full and sslrootcert, which a database URL made from it keeps.
func (p *Postgres) ServerURL() string {
	u := url.URL{Scheme: "postgres", User: url.User("postgres"), Host: fmt.Sprintf("127.0.0.1:%d", p.Port)}
	if p.opts.Password != "" {
		u.User = url.UserPassword("postgres", p.opts.Password)
	}
	if p.opts.TLS != nil {
		u.RawQuery = p.tlsQuery().Encode()
	}
	return u.String()
}

// tlsQuery are the URL parameters of a verified TLS connection to this cluster.
func (p *Postgres) tlsQuery() url.Values {
	q := url.Values{}
	q.Set("sslmode", "verify-full")
	q.Set("sslrootcert", p.opts.TLS.CAFile)
	return q
}

// AdminURL is the superuser's URL on database postgres (testdb.NewAt).
func (p *Postgres) AdminURL() string { return p.SuperURL("postgres") }

// SuperURL is the superuser's URL on database db.
func (p *Postgres) SuperURL(db string) string { return p.URL("postgres", p.opts.Password, db) }

// URL is user's URL on database db: sslmode=verify-full against the CA for a TLS cluster,
// sslmode=disable otherwise.
func (p *Postgres) URL(user, password, db string) string {
	u := url.URL{Scheme: "postgres", User: url.User(user), Host: fmt.Sprintf("127.0.0.1:%d", p.Port), Path: "/" + db}
	if password != "" {
		u.User = url.UserPassword(user, password)
	}
	q := url.Values{}
	q.Set("sslmode", "disable")
	if p.opts.TLS != nil {
		q = p.tlsQuery()
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// Start starts the stopped cluster on its port and waits until it accepts connections.
func (p *Postgres) Start() error {
	if err := pgCtl(p.data, "-l", filepath.Join(p.dir, "log"), "-w", "-t", "120", "start"); err != nil {
		log, _ := os.ReadFile(filepath.Join(p.dir, "log"))
		return fmt.Errorf("start PostgreSQL: %w\n%s", err, tail(log, 2000))
	}
	return p.ping()
}

// Stop stops the cluster: mode fast (sessions ended, clean shutdown) or immediate (like a crash:
// recovery at the next start).
func (p *Postgres) Stop(mode string) error {
	if _, err := os.Stat(filepath.Join(p.data, "postmaster.pid")); err != nil {
		return nil
	}
	if err := pgCtl(p.data, "-m", mode, "-w", "-t", "120", "stop"); err != nil {
		return fmt.Errorf("stop PostgreSQL (%s): %w", mode, err)
	}
	return nil
}

// Restart is a fast stop then a start.
func (p *Postgres) Restart() error {
	if err := p.Stop("fast"); err != nil {
		return err
	}
	return p.Start()
}

func (p *Postgres) ping() error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for {
		conn, err := pgx.Connect(ctx, p.AdminURL())
		if err == nil {
			return conn.Close(ctx)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("PostgreSQL on port %d does not answer: %w", p.Port, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Close stops the cluster at once and removes its directory.
func (p *Postgres) Close() error {
	err := p.Stop("immediate")
	return errors.Join(err, os.RemoveAll(p.dir))
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}
