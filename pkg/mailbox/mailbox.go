// Package mailbox is the adapter to the AODB's legacy MySQL mailbox (cminmsgs, coutmsgs; docs/spec.md
// §3.1). It is the only package that uses go-sql-driver/mysql. msgx never creates or deletes
// mailbox rows' tables, and writes the processed marker only from NULL (INV-7).
package mailbox

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"database/sql"
	"fmt"
	"os"
	"time"

	"github.com/go-sql-driver/mysql"
)

// Mailbox is a connection pool to the mailbox database.
type Mailbox struct {
	db *sql.DB
}

// DefaultIOTimeout bounds one read or write on a mailbox connection when the DSN sets none
// (readTimeout/writeTimeout); the dial is bounded by timeout (5 s when absent). It is longer than
// InnoDB's lock wait (50 s), so a statement waiting for a row lock fails with the lock wait error
// rather than a broken connection.
const DefaultIOTimeout = 60 * time.Second

// Open connects to dsn (go-sql-driver format). Times are read as wall-clock values (parseTime,
// loc=Local is not used: the mailbox's DATETIME has no zone and is kept as written).
func Open(dsn string) (*Mailbox, error) {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("parse MSGX_MYSQL_DSN: %w", err)
	}
	cfg.ParseTime = true
	if cfg.Timeout == 0 {
		cfg.Timeout = 5 * time.Second
	}
	// A half-open connection must fail a call, not hang it: reads and writes on the socket are
	// bounded unless the DSN says otherwise (readTimeout, writeTimeout).
	if cfg.ReadTimeout == 0 {
		cfg.ReadTimeout = DefaultIOTimeout
	}
	if cfg.WriteTimeout == 0 {
		cfg.WriteTimeout = DefaultIOTimeout
	}
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		return nil, fmt.Errorf("open mailbox: %w", err)
	}
	db.SetMaxOpenConns(8)
	db.SetConnMaxIdleTime(time.Minute)
	return &Mailbox{db: db}, nil
}

// Ping checks that the mailbox answers (readiness).
func (m *Mailbox) Ping(ctx context.Context) error {
	if err := m.db.PingContext(ctx); err != nil {
		return fmt.Errorf("mailbox: %w", err)
	}
	return nil
}

// Close closes the pool.
func (m *Mailbox) Close() error { return m.db.Close() }

// OpenAdmin returns a plain database/sql handle on dsn and the DSN's database name, for
// account management (pkg/roles, `msgxctl roles apply`) with an account that may create users
// and grant on the mailbox tables. The caller closes it.
func OpenAdmin(dsn string) (*sql.DB, string, error) {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, "", fmt.Errorf("parse MySQL DSN: %w", err)
	}
	if cfg.DBName == "" {
		return nil, "", fmt.Errorf("MySQL DSN names no database (…/msgx_mailbox)")
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 5 * time.Second
	}
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		return nil, "", fmt.Errorf("open mailbox: %w", err)
	}
	return db, cfg.DBName, nil
}

// RegisterTLSCA registers, under name, a TLS configuration for DSNs with tls=<name> that trusts
// only the CA certificates in caFile (PEM) and verifies the server's host name (the driver sets
// it from the DSN's address). Registering the same name again replaces it.
func RegisterTLSCA(name, caFile string) error {
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return fmt.Errorf("read MySQL CA file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return fmt.Errorf("MySQL CA file %s: no PEM certificate in it", caFile)
	}
	if err := mysql.RegisterTLSConfig(name, &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}); err != nil {
		return fmt.Errorf("register MySQL TLS config %q: %w", name, err)
	}
	return nil
}
