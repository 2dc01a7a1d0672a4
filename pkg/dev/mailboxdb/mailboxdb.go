// Package mailboxdb creates and drops legacy AODB mailbox databases (the tables of
// docs/spec.md §3.1) on a MariaDB/MySQL server. Only development tools (the local stack, the
// simulator) and tests, through pkg/dev/mailboxtest, use it: production never creates these
// tables.
package mailboxdb

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"strings"

	"github.com/go-sql-driver/mysql"
)

// Schema is the legacy mailbox DDL exactly as the AODB team owns it.
var Schema = []string{
	`CREATE TABLE cminmsgs (
  CMINMSGS_ID                  bigint NOT NULL AUTO_INCREMENT PRIMARY KEY,
  CMINMSGS_CLOB_MSG            mediumtext NOT NULL,
  CMINMSGS_DATE_RECEIVED       datetime,
  CMINMSGS_DATE_PROCESSED      datetime,
  CMINMSGS_SUBSYSTEM_NAME      varchar(4),
  CMINMSGS_SUBSYSTEM_SEQUENCE  mediumint,
  CMINMSGS_SUBSYSTEM_DATE_SENT datetime,
  CMINMSGS_SUBSYSTEM_SUBTYPE   varchar(4),
  CMINMSGS_SUBSYSTEM_TYPE      varchar(4),
  CMINMSGS_STATUS              varchar(20)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`,
	`CREATE TABLE coutmsgs (
  COUTMSGS_ID bigint NOT NULL AUTO_INCREMENT PRIMARY KEY,
  COUTMSGS_CLOB_MSG mediumtext, COUTMSGS_DATE_INSERTED datetime NOT NULL,
  COUTMSGS_DATE_SENT datetime, ROUTINGID varchar(23) NOT NULL,
  COUTMSGS_TRUEFALS_GROUP tinyint NOT NULL DEFAULT 0, COUTMSGS_NO_MESSAGES tinyint,
  COUTMSGS_GROUP_ORDER tinyint, COUTMSGS_GROUP_ID smallint,
  COUTMSGS_FINAL_GROUP_IND tinyint NOT NULL DEFAULT 0, COUTMSGS_ACK_REQD tinyint NOT NULL DEFAULT 0,
  COUTMSGS_ACK_RESEND_TIMES tinyint NOT NULL DEFAULT 0, COUTMSGS_ACK_DATE_RECV datetime,
  COUTMSGS_ENCRYPT tinyint NOT NULL DEFAULT 0, COUTMSGS_ERROR tinyint NOT NULL DEFAULT 0
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`,
}

// DefaultServerDSN is the developer machine's MariaDB (root, empty password), no database chosen.
const DefaultServerDSN = "root@tcp(127.0.0.1:3306)/"

// ServerDSN is the server DSN tests use (MSGX_TEST_MYSQL_DSN overrides it).
func ServerDSN() string {
	if d := os.Getenv("MSGX_TEST_MYSQL_DSN"); d != "" {
		return d
	}
	return DefaultServerDSN
}

// CreateDatabase creates database name on the server of serverDSN with the mailbox tables (if
// they do not exist yet) and returns a DSN for it.
func CreateDatabase(ctx context.Context, serverDSN, name string) (string, error) {
	cfg, err := mysql.ParseDSN(serverDSN)
	if err != nil {
		return "", fmt.Errorf("parse MySQL DSN: %w", err)
	}
	server, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		return "", err
	}
	defer server.Close()
	if _, err := server.ExecContext(ctx, "CREATE DATABASE IF NOT EXISTS `"+name+"` CHARACTER SET utf8mb4"); err != nil {
		return "", fmt.Errorf("create database %s: %w", name, err)
	}
	cfg.DBName = name
	cfg.ParseTime = true
	dsn := cfg.FormatDSN()
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		return "", err
	}
	defer db.Close()
	for _, ddl := range Schema {
		ddl = strings.Replace(ddl, "CREATE TABLE", "CREATE TABLE IF NOT EXISTS", 1)
		if _, err := db.ExecContext(ctx, ddl); err != nil {
			return "", fmt.Errorf("create mailbox tables in %s: %w", name, err)
		}
	}
	return dsn, nil
}

// DropDatabase drops database name if it exists.
func DropDatabase(ctx context.Context, serverDSN, name string) error {
	cfg, err := mysql.ParseDSN(serverDSN)
	if err != nil {
		return fmt.Errorf("parse MySQL DSN: %w", err)
	}
	server, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		return err
	}
	defer server.Close()
	if _, err := server.ExecContext(ctx, "DROP DATABASE IF EXISTS `"+name+"`"); err != nil {
		return fmt.Errorf("drop database %s: %w", name, err)
	}
	return nil
}
