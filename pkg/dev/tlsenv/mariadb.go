package tlsenv

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
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/dev/mailboxtest"
	"github.com/msgx/msgx/pkg/dev/testdb"
	"github.com/msgx/msgx/pkg/mailbox"
)

// TLSConfigName is the go-sql-driver TLS configuration (tls=<name>) that trusts only the CA: the
// name the binaries register for MSGX_MYSQL_TLS_CA_FILE, so a test DSN works in a binary too.
const TLSConfigName = mailbox.TLSConfigCA

// MariaDB is the private TLS instance: require_secure_transport refuses plaintext TCP.
type MariaDB struct {
	Port     int
	CA       *CA
	User     string // an administrator over TLS (all privileges, grant option)
	Password string
	socket   string
}

var (
	myOnce sync.Once
	myInst *MariaDB
	myErr  error
)

// MySQL returns the process's private MariaDB instance, starting it on first use.
func MySQL(t testing.TB) *MariaDB {
	t.Helper()
	myOnce.Do(func() {
		mu.Lock()
		defer mu.Unlock()
		myInst, myErr = startMariaDB()
	})
	require.NoError(t, myErr, "start the private TLS MariaDB")
	return myInst
}

// DSN is a go-sql-driver DSN for user on db over TLS verified against the CA (tls=TLSConfigName).
func (m *MariaDB) DSN(user, password, db string) string {
	cfg := mysql.NewConfig()
	cfg.User, cfg.Passwd, cfg.Net, cfg.Addr, cfg.DBName = user, password, "tcp", fmt.Sprintf("127.0.0.1:%d", m.Port), db
	cfg.TLSConfig = TLSConfigName
	cfg.ParseTime = true
	return cfg.FormatDSN()
}

// ServerDSN is the administrator's DSN without a database.
func (m *MariaDB) ServerDSN() string { return m.DSN(m.User, m.Password, "") }

// NewDB is a fresh mailbox database on this instance (mailboxtest.CreateDatabase), dropped when
// the test ends, with a pool logged in as the administrator over TLS.
func (m *MariaDB) NewDB(t testing.TB) *mailboxtest.DB {
	t.Helper()
	return mailboxtest.NewAt(t, m.ServerDSN())
}

func startMariaDB() (*MariaDB, error) {
	if err := requireRoot(); err != nil {
		return nil, err
	}
	rootDir, c, err := setup()
	if err != nil {
		return nil, err
	}
	if err := mailbox.RegisterTLSCA(TLSConfigName, c.CAFile); err != nil {
		return nil, err
	}
	dir := filepath.Join(rootDir, "mariadb")
	data := filepath.Join(dir, "data")
	m := &MariaDB{CA: c, User: "tlsadmin", Password: testdb.RandomSuffix() + testdb.RandomSuffix(), socket: filepath.Join(dir, "mysqld.sock")}
	if err := os.MkdirAll(data, 0o700); err != nil {
		return nil, err
	}
	if err := copyFile(c.KeyFile, filepath.Join(dir, "server.key"), 0o600); err != nil {
		return nil, err
	}
	if err := copyFile(c.CertFile, filepath.Join(dir, "server.pem"), 0o644); err != nil {
		return nil, err
	}
	if err := copyFile(c.CAFile, filepath.Join(dir, "ca.pem"), 0o644); err != nil {
		return nil, err
	}
	if err := chown(dir, "mysql"); err != nil {
		return nil, err
	}
	install := exec.Command("mariadb-install-db", "--no-defaults", "--user=mysql", "--datadir="+data,
		"--auth-root-authentication-method=socket", "--skip-test-db", "--skip-name-resolve")
	if out, err := install.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("mariadb-install-db: %w: %s", err, out)
	}
	if m.Port, err = freePort(); err != nil {
		return nil, err
	}
	logFile := filepath.Join(dir, "error.log")
	cmd := exec.Command("mariadbd", "--no-defaults", "--user=mysql", "--datadir="+data,
		fmt.Sprintf("--port=%d", m.Port), "--bind-address=127.0.0.1", "--socket="+m.socket,
		"--pid-file="+filepath.Join(dir, "mariadbd.pid"), "--log-error="+logFile,
		"--ssl-ca="+filepath.Join(dir, "ca.pem"), "--ssl-cert="+filepath.Join(dir, "server.pem"),
		"--ssl-key="+filepath.Join(dir, "server.key"), "--require-secure-transport=ON",
		"--skip-name-resolve", "--innodb-buffer-pool-size=32M", "--innodb-flush-log-at-trx-commit=0",
		"--skip-log-bin", "--max-connections=300")
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start mariadbd: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	onShutdown(func() error {
		_ = cmd.Process.Signal(syscall.SIGKILL)
		<-exited
		return nil
	})

	// Wait (bounded) for the socket, then make the TLS administrator as root over the socket.
	admin, err := sql.Open("mysql", "root@unix("+m.socket+")/")
	if err != nil {
		return nil, err
	}
	defer admin.Close()
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err = admin.PingContext(ctx)
		cancel()
		if err == nil {
			break
		}
		select {
		case werr := <-exited:
			exited <- werr
			log, _ := os.ReadFile(logFile)
			return nil, fmt.Errorf("mariadbd exited: %v\n%s", werr, log)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(logFile)
			return nil, errors.Join(fmt.Errorf("mariadbd did not answer within 60s: %w", err), errors.New(string(log)))
		}
	}
	for _, stmt := range []string{
		fmt.Sprintf("CREATE USER '%s'@'%%' IDENTIFIED BY '%s' REQUIRE SSL", m.User, m.Password),
		fmt.Sprintf("GRANT ALL PRIVILEGES ON *.* TO '%s'@'%%' WITH GRANT OPTION", m.User),
	} {
		if _, err := admin.Exec(stmt); err != nil {
			return nil, fmt.Errorf("create the TLS administrator: %w", err)
		}
	}
	return m, nil
}
