package privdb

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/jackc/pgx/v5"
)

// Postgres is a private cluster: plaintext TCP on 127.0.0.1:Port, user postgres, trust.
type Postgres struct {
	Port int
	dir  string
	data string
}

// StartPostgres initialises and starts a private cluster.
func StartPostgres() (*Postgres, error) {
	dir, err := newDir("pg")
	if err != nil {
		return nil, err
	}
	p := &Postgres{dir: dir, data: filepath.Join(dir, "data")}
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
// it returns (synchronous_commit on), so a killed or immediately stopped server loses nothing.
func (p *Postgres) init() error {
	initdb, err := pgBin("initdb")
	if err != nil {
		return err
	}
	if err := chown(p.dir, "postgres"); err != nil {
		return err
	}
	if err := runAs("postgres", initdb, "-D", p.data, "-U", "postgres", "--auth=trust",
		"-E", "UTF8", "--no-sync", "--no-instructions"); err != nil {
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
`, p.Port, p.dir)
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
	hba := "local all all trust\nhost all all 127.0.0.1/32 trust\n"
	if err := os.WriteFile(filepath.Join(p.data, "pg_hba.conf"), []byte(hba), 0o600); err != nil {
		return err
	}
	return chown(p.data, "postgres")
}

// ServerURL is the superuser's URL without a database (stack.Databases.PGServer).
func (p *Postgres) ServerURL() string { return fmt.Sprintf("postgres://postgres@127.0.0.1:%d", p.Port) }

// AdminURL is the superuser's URL on database postgres (testdb.NewAt).
func (p *Postgres) AdminURL() string { return p.ServerURL() + "/postgres?sslmode=disable" }

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
