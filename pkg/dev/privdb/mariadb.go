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

	"github.com/go-sql-driver/mysql"
)

// AdminUser is the TCP administrator of an instance made with a password (Options.Password).
const AdminUser = "privadmin"

// MariaDB is a private instance on 127.0.0.1:Port: plaintext with root without a password from
// 127.0.0.1, or as Options say (TLS only; AdminUser with the password).
type MariaDB struct {
	Port int
	opts Options
	dir  string

	mu  sync.Mutex
	cmd *exec.Cmd
	end chan error
}

// StartMariaDB initialises and starts a private plaintext instance.
func StartMariaDB() (*MariaDB, error) { return StartMariaDBWith(Options{}) }

// StartMariaDBWith initialises and starts a private instance made as opts say.
func StartMariaDBWith(opts Options) (*MariaDB, error) {
	dir, err := newDir("mariadb")
	if err != nil {
		return nil, err
	}
	m := &MariaDB{opts: opts, dir: dir}
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
	if t := m.opts.TLS; t != nil {
		if _, _, err := t.install(m.dir); err != nil {
			return err
		}
		if err := copyFile(t.CAFile, filepath.Join(m.dir, "ca.pem"), 0o644); err != nil {
			return err
		}
	}
	// Its own temporary directory: instances started at the same time must not share /tmp
	// (mariadb-install-db failed with "Could not remove temporary table '/tmp/#sql-temptable-…'").
	if err := os.MkdirAll(m.tmp(), 0o700); err != nil {
		return err
	}
	if err := chown(m.dir, "mysql"); err != nil {
		return err
	}
	install := exec.Command("mariadb-install-db", "--no-defaults", "--user=mysql", "--datadir="+data,
		"--tmpdir="+m.tmp(), "--auth-root-authentication-method=socket", "--skip-test-db", "--skip-name-resolve")
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
	stmts := []string{
		"CREATE USER 'root'@'127.0.0.1'",
		"GRANT ALL PRIVILEGES ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION",
	}
	if m.opts.Password != "" {
		require := ""
		if m.opts.TLS != nil {
			require = " REQUIRE SSL"
		}
		stmts = []string{
			fmt.Sprintf("CREATE USER '%s'@'%%' IDENTIFIED BY '%s'%s", AdminUser, m.opts.Password, require),
			fmt.Sprintf("GRANT ALL PRIVILEGES ON *.* TO '%s'@'%%' WITH GRANT OPTION", AdminUser),
		}
	}
	for _, stmt := range stmts {
		if _, err := admin.Exec(stmt); err != nil {
			return fmt.Errorf("create the TCP administrator: %w", err)
		}
	}
	return nil
}

func (m *MariaDB) socket() string { return filepath.Join(m.dir, "mysqld.sock") }

// ServerDSN is the TCP administrator's DSN without a database (stack.Databases.MySQLServer,
// mailboxtest.NewAt): root without a password, or AdminUser with Options.Password; over TLS
// verified with Options.TLS.MySQLConfig for a TLS instance.
func (m *MariaDB) ServerDSN() string {
	if m.opts.Password == "" {
		return fmt.Sprintf("root@tcp(127.0.0.1:%d)/", m.Port)
	}
	cfg := mysql.NewConfig()
	cfg.User, cfg.Passwd, cfg.Net, cfg.Addr = AdminUser, m.opts.Password, "tcp", fmt.Sprintf("127.0.0.1:%d", m.Port)
	if m.opts.TLS != nil {
		cfg.TLSConfig = m.opts.TLS.MySQLConfig
	}
	return cfg.FormatDSN()
}

// Start starts the stopped instance on its port and waits until it answers. The redo log is
// written at every commit (flushed once a second): a killed server loses no committed row
// (unless Options.Fast).
func (m *MariaDB) Start() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd != nil {
		return errors.New("mariadbd is running")
	}
	logFile := filepath.Join(m.dir, "error.log")
	args := []string{"--no-defaults", "--user=mysql", "--datadir=" + filepath.Join(m.dir, "data"), "--tmpdir=" + m.tmp(),
		fmt.Sprintf("--port=%d", m.Port), "--bind-address=127.0.0.1", "--socket=" + m.socket(),
		"--pid-file=" + filepath.Join(m.dir, "mariadbd.pid"), "--log-error=" + logFile,
		"--skip-name-resolve", "--innodb-buffer-pool-size=32M", "--skip-log-bin", "--max-connections=300"}
	if m.opts.Fast {
		args = append(args, "--innodb-flush-log-at-trx-commit=0")
	} else {
		args = append(args, "--innodb-flush-log-at-trx-commit=2")
	}
	if m.opts.TLS != nil {
		args = append(args, "--ssl-ca="+filepath.Join(m.dir, "ca.pem"), "--ssl-cert="+filepath.Join(m.dir, "server.pem"),
			"--ssl-key="+filepath.Join(m.dir, "server.key"), "--require-secure-transport=ON")
	}
	cmd := exec.Command("mariadbd", args...)
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

// tmp is the instance's own temporary directory (mariadbd's --tmpdir).
func (m *MariaDB) tmp() string { return filepath.Join(m.dir, "tmp") }
