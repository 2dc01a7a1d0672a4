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
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
)

// Mailbox is a connection pool to the mailbox database.
type Mailbox struct {
	db  *sql.DB
	trx trxReads // spaces the reads of InnoDB's transaction list (Transactions)
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

// TLSConfigCA is the tls=<name> of a DSN whose server is verified against MSGX_MYSQL_TLS_CA_FILE
// (UseCA registers it).
const TLSConfigCA = "msgx-ca"

// UseCA registers TLSConfigCA with the CA certificates of caFile; a DSN then says tls=msgx-ca.
// An empty caFile does nothing.
func UseCA(caFile string) error {
	if caFile == "" {
		return nil
	}
	return RegisterTLSCA(TLSConfigCA, caFile)
}

// VerifiedTLS reports why dsn does not use TLS with a verified server certificate, or "" when it
// does: tls=true (system roots) or tls=msgx-ca with a CA file. tls=skip-verify, tls=preferred,
// tls=false, no tls and other names are refused. It reads the DSN's parameters without parsing
// the DSN (a tls=<name> is registered only when the binary starts).
func VerifiedTLS(dsn, caFile string) string {
	rest := dsn
	if i := strings.LastIndex(rest, ")"); i >= 0 {
		rest = rest[i+1:]
	}
	var mode string
	if _, query, ok := strings.Cut(rest, "?"); ok {
		values, err := url.ParseQuery(query)
		if err != nil {
			return "its parameters do not parse"
		}
		mode = values.Get("tls")
	}
	switch mode {
	case "true":
		return ""
	case TLSConfigCA:
		if caFile == "" {
			return "tls=" + TLSConfigCA + " needs MSGX_MYSQL_TLS_CA_FILE"
		}
		return ""
	case "", "false":
		return "no tls= (plaintext)"
	default:
		return "tls=" + mode + " does not verify the server (use tls=true, or tls=" + TLSConfigCA + " with MSGX_MYSQL_TLS_CA_FILE)"
	}
}
