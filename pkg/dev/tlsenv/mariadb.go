package tlsenv

import (
	"fmt"
	"sync"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/dev/mailboxtest"
	"github.com/msgx/msgx/pkg/dev/privdb"
	"github.com/msgx/msgx/pkg/dev/testdb"
	"github.com/msgx/msgx/pkg/mailbox"
)

// TLSConfigName is the go-sql-driver TLS configuration (tls=<name>) that trusts only the CA: the
// name the binaries register for MSGX_MYSQL_TLS_CA_FILE, so a test DSN works in a binary too.
const TLSConfigName = mailbox.TLSConfigCA

// MariaDB is the private TLS instance (pkg/dev/privdb with the CA's certificate):
// require_secure_transport refuses plaintext TCP.
type MariaDB struct {
	Port     int
	CA       *CA
	User     string // an administrator over TLS (all privileges, grant option)
	Password string
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
	_, c, err := setup()
	if err != nil {
		return nil, err
	}
	if err := mailbox.RegisterTLSCA(TLSConfigName, c.CAFile); err != nil {
		return nil, err
	}
	m := &MariaDB{CA: c, User: privdb.AdminUser, Password: testdb.RandomSuffix() + testdb.RandomSuffix()}
	srv, err := privdb.StartMariaDBWith(privdb.Options{TLS: serverFiles(c), Password: m.Password, Fast: true})
	if err != nil {
		return nil, err
	}
	onShutdown(srv.Close)
	m.Port = srv.Port
	return m, nil
}
