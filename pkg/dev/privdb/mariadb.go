package privdb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	_ "github.com/go-sql-driver/mysql" // the mailbox driver
)

// MariaDB is a private instance: plaintext TCP on 127.0.0.1:Port, user root without a password
// from 127.0.0.1.
type MariaDB struct {
	Port int
	dir  string

	mu  sync.Mutex
	cmd *exec.Cmd
	end chan error
}

// StartMariaDB initialises and starts a private instance.
func StartMariaDB() (*MariaDB, error) {
	dir, err := newDir("mariadb")
	if err != nil {
		return nil, err
	}
	m := &MariaDB{dir: dir}
	if err := m.init(); err != nil {
		_ = m.Close()
		return nil, err
	}
	return m, nil
}

func (m *MariaDB) init() error {
	data := filepath.Join(m.dir, "data")
	if err := os.MkdirAll(data, 0o700); err != nil {
		return err
	}
	if err := chown(m.dir, "mysql"); err != nil {
		return err
	}
	install := exec.Command("mariadb-install-db", "--no-defaults", "--user=mysql", "--datadir="+data,
		"--auth-root-authentication-method=socket", "--skip-test-db", "--skip-name-resolve")
	if out, err := install.CombinedOutput(); err != nil {
		return fmt.Errorf("mariadb-install-db: %w: %s", err, out)
	}
	var err error
	if m.Port, err = freePort(); err != nil {
		return err
	}
	if err := m.Start(); err != nil {
		return err
	}
	admin, err := sql.Open("mysql", "root@unix("+m.socket()+")/")
	if err != nil {
		return err
	}
	defer admin.Close()
	for _, stmt := range []string{
		"CREATE USER 'root'@'127.0.0.1'",
		"GRANT ALL PRIVILEGES ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION",
	} {
		if _, err := admin.Exec(stmt); err != nil {
			return fmt.Errorf("create the TCP administrator: %w", err)
		}
	}
	return nil
}

func (m *MariaDB) socket() string { return filepath.Join(m.dir, "mysqld.sock") }

// ServerDSN is root's DSN without a database (stack.Databases.MySQLServer, mailboxtest.NewAt).
func (m *MariaDB) ServerDSN() string { return fmt.Sprintf("root@tcp(127.0.0.1:%d)/", m.Port) }

// Start starts the stopped instance on its port and waits until it answers. The redo log is
// written at every commit (flushed once a second): a killed server loses no committed row.
func (m *MariaDB) Start() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd != nil {
		return errors.New("mariadbd is running")
	}
	logFile := filepath.Join(m.dir, "error.log")
	cmd := exec.Command("mariadbd", "--no-defaults", "--user=mysql", "--datadir="+filepath.Join(m.dir, "data"),
		fmt.Sprintf("--port=%d", m.Port), "--bind-address=127.0.0.1", "--socket="+m.socket(),
		"--pid-file="+filepath.Join(m.dir, "mariadbd.pid"), "--log-error="+logFile,
		"--skip-name-resolve", "--innodb-buffer-pool-size=32M", "--innodb-flush-log-at-trx-commit=2",
		"--skip-log-bin", "--max-connections=300")
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start mariadbd: %w", err)
	}
	end := make(chan error, 1)
	go func() { end <- cmd.Wait() }()
	m.cmd, m.end = cmd, end
	admin, err := sql.Open("mysql", "root@unix("+m.socket()+")/")
	if err != nil {
		return err
	}
	defer admin.Close()
	deadline := time.Now().Add(90 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err = admin.PingContext(ctx)
		cancel()
		if err == nil {
			return nil
		}
		select {
		case werr := <-end:
			end <- werr
			log, _ := os.ReadFile(logFile)
			m.cmd = nil
			return fmt.Errorf("mariadbd exited: %v\n%s", werr, tail(log, 2000))
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("mariadbd did not answer within 90s: %w", err)
		}
	}
}

// Stop stops the instance: gracefully (SIGTERM, open transactions are rolled back) or, with
// kill, at once (SIGKILL: crash recovery at the next start).
func (m *MariaDB) Stop(kill bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd == nil {
		return nil
	}
	sig := syscall.SIGTERM
	if kill {
		sig = syscall.SIGKILL
	}
	_ = m.cmd.Process.Signal(sig)
	select {
	case <-m.end:
	case <-time.After(120 * time.Second):
		_ = m.cmd.Process.Kill()
		<-m.end
	}
	m.cmd = nil
	return nil
}

// Restart is a graceful stop then a start on the same port and data.
func (m *MariaDB) Restart() error {
	if err := m.Stop(false); err != nil {
		return err
	}
	return m.Start()
}

// Close kills the instance and removes its directory.
func (m *MariaDB) Close() error {
	err := m.Stop(true)
	return errors.Join(err, os.RemoveAll(m.dir))
}
