package roles

import (
	"context"
	"crypto/sha1"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// MySQLOptions says where and under which names ApplyMySQL works.
type MySQLOptions struct {
	Database  string          // the mailbox database (cminmsgs, coutmsgs)
	Prefix    string          // user names are Prefix+role; "" means DefaultPrefix
	Host      string          // the account's host pattern; "" means '%' (narrow it to the pod network)
	Passwords map[Role]string // set for the users present (stored as a mysql_native_password hash)
	// IngestProcess also grants the ingest user PROCESS, with which ingest reads InnoDB's list of
	// open transactions to pass a rolled-back insert's gap at once (docs/ingest.md). PROCESS is
	// server-wide: it also shows every session's current statement.
	IngestProcess bool
}

// mysqlIdent is what ApplyMySQL accepts as a database, user or host name: MySQL statements that
// manage accounts take no bound parameters, so names are checked instead of quoted.
var mysqlIdent = regexp.MustCompile(`^[A-Za-z0-9_.%-]{1,64}$`)

// MySQLUser is the account of role r under o ('name'@'host').
func MySQLUser(o MySQLOptions, r Role) string {
	host := o.Host
	if host == "" {
		host = "%"
	}
	return fmt.Sprintf("'%s'@'%s'", Name(o.Prefix, r), host)
}

// ApplyMySQL creates the missing mailbox users, sets the given passwords, and replaces each
// user's privileges with exactly those of docs/spec.md §14. MySQL has no transactional DDL: between the
// REVOKE and the GRANTs (a few milliseconds) a binary's statement can be refused; the binaries
// treat that as an infrastructure error and retry. It needs an account with CREATE USER and the
// GRANT OPTION on the mailbox tables.
func ApplyMySQL(ctx context.Context, db *sql.DB, o MySQLOptions) error {
	for _, s := range []string{o.Database, Name(o.Prefix, Owner), o.Host} {
		if s != "" && !mysqlIdent.MatchString(s) {
			return fmt.Errorf("apply MySQL users: %q is not a plain name", s)
		}
	}
	if o.Database == "" {
		return errors.New("apply MySQL users: no mailbox database given")
	}
	conn, err := db.Conn(ctx) // one session throughout
	if err != nil {
		return fmt.Errorf("apply MySQL users: %w", err)
	}
	defer conn.Close()
	exec := func(stmt string) error {
		if _, err := conn.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("apply MySQL users: %s: %w", strings.SplitN(stmt, " IDENTIFIED", 2)[0], err)
		}
		return nil
	}
	for _, r := range MySQLRoles {
		user := MySQLUser(o, r)
		if err := exec("CREATE USER IF NOT EXISTS " + user); err != nil {
			return err
		}
		if pw, ok := o.Passwords[r]; ok {
			if pw == "" {
				return fmt.Errorf("apply MySQL users: empty password for %s", user)
			}
			if err := exec("ALTER USER " + user + " IDENTIFIED WITH mysql_native_password AS '" + nativePasswordHash(pw) + "'"); err != nil {
				return err
			}
		}
		if err := exec("REVOKE ALL PRIVILEGES, GRANT OPTION FROM " + user); err != nil {
			return err
		}
	}
	for _, g := range mysqlGrants {
		stmt := fmt.Sprintf("GRANT %s ON `%s`.`%s` TO %s", g.privs, o.Database, g.table, MySQLUser(o, g.role))
		if err := exec(stmt); err != nil {
			return err
		}
	}
	if o.IngestProcess {
		return exec("GRANT PROCESS ON *.* TO " + MySQLUser(o, Ingest))
	}
	return nil
}

// nativePasswordHash is mysql_native_password's stored form: '*' + hex(SHA1(SHA1(password))).
// Sending it instead of the password keeps the password out of the server's logs.
func nativePasswordHash(pw string) string {
	a := sha1.Sum([]byte(pw))
	b := sha1.Sum(a[:])
	return "*" + strings.ToUpper(hex.EncodeToString(b[:]))
}
