package stack

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"net/url"
	"slices"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"

	"github.com/msgx/msgx/pkg/roles"
)

// Access is how each binary and msgxctl log in to a stack's databases: msgx's least-privilege
// roles (pkg/roles) applied to them, each with a password made at ApplyRoles.
type Access struct {
	Prefix string
	PG     map[roles.Role]string // MSGX_PG_URL per PostgreSQL role
	MySQL  map[roles.Role]string // MSGX_MYSQL_DSN per mailbox user (roles.MySQLRoles)
}

// Prepared are a stack's databases with msgx's roles applied.
type Prepared struct {
	PGURL, MySQLDSN string // the administrator's logins (Prepare's)
	Access          Access // the roles' logins
}

// PrepareRoles is Prepare, then ApplyRoles under prefix: the production way to run the binaries
// (Access.RoleEnv), each as its own least-privilege role.
func PrepareRoles(ctx context.Context, d Databases, prefix string) (Prepared, error) {
	pgURL, mysqlDSN, err := Prepare(ctx, d)
	if err != nil {
		return Prepared{}, err
	}
	a, err := ApplyRoles(ctx, pgURL, mysqlDSN, prefix)
	return Prepared{PGURL: pgURL, MySQLDSN: mysqlDSN, Access: a}, err
}

// ApplyRoles creates (or updates) the PostgreSQL roles of pkg/roles over the public schema of
// pgURL's database and the mailbox users over mysqlDSN's database, under prefix, with fresh
// random passwords, exactly as `msgxctl roles apply --mysql` does. PostgreSQL roles and MySQL
// accounts are global to their servers: a stack that runs beside another uses its own prefix,
// or the new passwords lock the other one's binaries out. pgURL and mysqlDSN are administrator
// logins (Prepare's).
func ApplyRoles(ctx context.Context, pgURL, mysqlDSN, prefix string) (Access, error) {
	a := Access{Prefix: prefix, PG: map[roles.Role]string{}, MySQL: map[roles.Role]string{}}
	pgPW, myPW := map[roles.Role]string{}, map[roles.Role]string{}
	for _, r := range roles.PGRoles {
		pgPW[r] = password()
	}
	for _, r := range roles.MySQLRoles {
		myPW[r] = password()
	}
	conn, err := pgx.Connect(ctx, pgURL)
	if err != nil {
		return a, fmt.Errorf("apply roles: %w", err)
	}
	defer conn.Close(context.Background())
	if _, err := roles.ApplyPG(ctx, conn, roles.PGOptions{Schema: "public", Prefix: prefix, Passwords: pgPW}); err != nil {
		return a, err
	}
	u, err := url.Parse(pgURL)
	if err != nil {
		return a, err
	}
	for r, pw := range pgPW {
		ru := *u
		ru.User = url.UserPassword(roles.Name(prefix, r), pw)
		a.PG[r] = ru.String()
	}
	cfg, err := mysql.ParseDSN(mysqlDSN)
	if err != nil {
		return a, err
	}
	db, err := sql.Open("mysql", mysqlDSN)
	if err != nil {
		return a, err
	}
	defer db.Close()
	if err := roles.ApplyMySQL(ctx, db, roles.MySQLOptions{Database: cfg.DBName, Prefix: prefix, Passwords: myPW}); err != nil {
		return a, err
	}
	for r, pw := range myPW {
		c := cfg.Clone()
		c.User, c.Passwd = roles.Name(prefix, r), pw
		a.MySQL[r] = c.FormatDSN()
	}
	return a, nil
}

// ReapplyPG applies a's PostgreSQL roles again, with the passwords they have, over the public
// schema of pgURL's database (an administrator login): what `msgxctl roles apply` does on a
// cluster made anew, before a dump is restored into it (roles are cluster-wide, and the
// binaries keep the logins they were given).
func (a Access) ReapplyPG(ctx context.Context, pgURL string) error {
	pw := map[roles.Role]string{}
	for r, login := range a.PG {
		u, err := url.Parse(login)
		if err != nil {
			return fmt.Errorf("%s's login: %w", r, err)
		}
		pw[r], _ = u.User.Password()
	}
	conn, err := pgx.Connect(ctx, pgURL)
	if err != nil {
		return fmt.Errorf("apply roles: %w", err)
	}
	defer conn.Close(context.Background())
	_, err = roles.ApplyPG(ctx, conn, roles.PGOptions{Schema: "public", Prefix: a.Prefix, Passwords: pw})
	return err
}

// RoleEnv is Options.RoleEnv: each binary's (and the console's) own PostgreSQL role and mailbox
// user (the dispatcher and the console have no mailbox account), and msgxctl's: the operators'
// role (roles.Admin), as the runbook's commands run.
func (a Access) RoleEnv() map[string][]string {
	env := map[string][]string{}
	for _, b := range append(slices.Clone(Binaries), Console) {
		r := roles.Role(b)
		env[b] = []string{"MSGX_PG_URL=" + a.PG[r]}
		if dsn, ok := a.MySQL[r]; ok {
			env[b] = append(env[b], "MSGX_MYSQL_DSN="+dsn)
		}
	}
	env["msgxctl"] = []string{"MSGX_PG_URL=" + a.PG[roles.Admin]}
	return env
}

func password() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b[:])
}

// DropRoles drops the roles and mailbox users ApplyRoles made under prefix (after Drop: a role
// that still holds privileges in a database cannot be dropped).
func DropRoles(ctx context.Context, d Databases, prefix string) error {
	adminURL, err := d.pgURL("postgres")
	if err != nil {
		return err
	}
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return fmt.Errorf("connect PostgreSQL: %w", err)
	}
	defer conn.Close(context.Background())
	for _, r := range roles.PGRoles {
		if _, err := conn.Exec(ctx, "DROP ROLE IF EXISTS "+pgx.Identifier{roles.Name(prefix, r)}.Sanitize()); err != nil {
			return fmt.Errorf("drop role: %w", err)
		}
	}
	db, err := sql.Open("mysql", d.MySQLServer)
	if err != nil {
		return err
	}
	defer db.Close()
	for _, r := range roles.MySQLRoles {
		if _, err := db.ExecContext(ctx, "DROP USER IF EXISTS "+roles.MySQLUser(roles.MySQLOptions{Prefix: prefix}, r)); err != nil {
			return fmt.Errorf("drop mailbox user: %w", err)
		}
	}
	return nil
}
