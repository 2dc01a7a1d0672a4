package tlsenv

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/dev/privdb"
	"github.com/msgx/msgx/pkg/dev/testdb"
)

// Postgres is the private TLS cluster (pkg/dev/privdb with the CA's certificate): only hostssl
// connections with SCRAM-SHA-256 are accepted, plaintext ones are rejected by pg_hba.
type Postgres struct {
	Port     int
	CA       *CA
	Password string // of the superuser postgres
	srv      *privdb.Postgres
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
func (p *Postgres) URL(user, password, db string) string { return p.srv.URL(user, password, db) }

// AdminURL is the superuser's verify-full URL.
func (p *Postgres) AdminURL() string { return p.srv.AdminURL() }

// NewDB is testdb.NewAt on this cluster: a fresh migrated schema, reached over TLS.
func (p *Postgres) NewDB(t testing.TB) *testdb.DB {
	t.Helper()
	return testdb.NewAt(t, p.AdminURL())
}

func startPostgres() (*Postgres, error) {
	_, c, err := setup()
	if err != nil {
		return nil, err
	}
	p := &Postgres{CA: c, Password: testdb.RandomSuffix() + testdb.RandomSuffix()}
	p.srv, err = privdb.StartPostgresWith(privdb.Options{TLS: serverFiles(c), Password: p.Password, Fast: true})
	if err != nil {
		return nil, err
	}
	onShutdown(p.srv.Close)
	p.Port = p.srv.Port
	return p, nil
}
