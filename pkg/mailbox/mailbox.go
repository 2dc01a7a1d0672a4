// Package mailbox is the adapter to the AODB's legacy MySQL mailbox (cminmsgs, coutmsgs; docs/spec.md
// §3.1). It is the only package that uses go-sql-driver/mysql. msgx never creates or deletes
// mailbox rows' tables, and writes the processed marker only from NULL (INV-7).
package mailbox

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/go-sql-driver/mysql"
)

// Mailbox is a connection pool to the mailbox database.
type Mailbox struct {
	db *sql.DB
}

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
