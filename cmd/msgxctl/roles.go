package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/msgx/msgx/pkg/config"
	"github.com/msgx/msgx/pkg/mailbox"
	"github.com/msgx/msgx/pkg/roles"
)

func init() {
	register("roles", command{
		summary: "roles apply: create msgx's database roles and set exactly their grants (pkg/roles; --mysql for the mailbox users)",
		run: func(ctx context.Context, cfg config.Config, args []string, out io.Writer) error {
			return rolesCmd(ctx, cfg, args, out, os.LookupEnv)
		},
	})
}

// Password variables: MSGX_ROLE_PASSWORD_<ROLE> for PostgreSQL, MSGX_MYSQL_ROLE_PASSWORD_<ROLE>
// for the mailbox users (ROLE upper-case: INGEST, PROCESSOR, …). An unset variable leaves that
// role's password as it is.
const (
	pgPasswordEnv    = "MSGX_ROLE_PASSWORD_"
	mysqlPasswordEnv = "MSGX_MYSQL_ROLE_PASSWORD_"
)

func rolesCmd(ctx context.Context, cfg config.Config, args []string, out io.Writer, lookup func(string) (string, bool)) error {
	const about = `Creates msgx's database roles and sets exactly their grants (pkg/roles). Passwords come from
MSGX_ROLE_PASSWORD_<ROLE> (PostgreSQL) and MSGX_MYSQL_ROLE_PASSWORD_<ROLE> (mailbox users); an
unset variable leaves that role's password as it is.`
	_, args, err := subcommand("roles", about, []string{"apply"}, args, out)
	if err != nil {
		return err
	}
	fs, asJSON := flags("roles apply", "[--prefix msgx_] [--schema S] [--pg=false] [--mysql] [--mysql-host %] [--mysql-ingest-process] [--json]", about, out)
	prefix := fs.String("prefix", roles.DefaultPrefix, "role name prefix (msgx_ingest, …)")
	schema := fs.String("schema", "", "schema of msgx's tables (default: MSGX_PG_URL's search_path)")
	withPG := fs.Bool("pg", true, "the PostgreSQL roles, through MSGX_PG_URL (a role that may create roles and grant)")
	withMySQL := fs.Bool("mysql", false, "also the mailbox users, through MSGX_MYSQL_DSN (an account that may create users and grant)")
	mysqlHost := fs.String("mysql-host", "%", "host pattern of the mailbox accounts (narrow it to the pod network)")
	ingestProcess := fs.Bool("mysql-ingest-process", false, "also grant the ingest user PROCESS: ingest then passes a rolled-back insert's gap as soon as it proves it permanent (docs/ingest.md)")
	if err := fs.NoArgs(args); err != nil {
		return err
	}
	var rep rolesReport
	if *withPG {
		pg, err := applyPG(ctx, cfg, *schema, *prefix, lookup)
		if err != nil {
			return err
		}
		rep.PG = &pg
	}
	if *withMySQL {
		if rep.MySQLDatabase, err = applyMySQL(ctx, cfg, *prefix, *mysqlHost, *ingestProcess, lookup); err != nil {
			return err
		}
	}
	if *asJSON {
		return writeJSON(out, cfg.Location(), rep)
	}
	if rep.PG != nil {
		for _, r := range rep.PG.Created {
			fmt.Fprintf(out, "created role %s\n", r)
		}
		if len(rep.PG.Missing) > 0 {
			fmt.Fprintf(out, "not there yet (run again after msgxctl migrate): %s\n", strings.Join(rep.PG.Missing, ", "))
		}
		fmt.Fprintf(out, "PostgreSQL roles %s* applied\n", *prefix)
	}
	if rep.MySQLDatabase != "" {
		fmt.Fprintf(out, "mailbox users %s* applied on %s\n", *prefix, rep.MySQLDatabase)
	}
	return nil
}

// rolesReport is what roles apply did (--json).
type rolesReport struct {
	PG            *pgRoles `json:"postgres,omitempty"`
	MySQLDatabase string   `json:"mysql_database,omitempty"`
}

type pgRoles struct {
	Created []string `json:"created"`
	Missing []string `json:"missing"`
}

func applyMySQL(ctx context.Context, cfg config.Config, prefix, host string, ingestProcess bool, lookup func(string) (string, bool)) (string, error) {
	if err := cfg.MailboxRefusals(); err != nil {
		return "", badConfiguration("roles apply --mysql", err)
	}
	db, name, err := mailbox.OpenAdmin(cfg.Mailbox.MySQLDSN)
	if err != nil {
		return "", err
	}
	defer db.Close()
	if err := roles.ApplyMySQL(ctx, db, roles.MySQLOptions{Database: name, Prefix: prefix, Host: host,
		Passwords: passwords(roles.MySQLRoles, mysqlPasswordEnv, lookup), IngestProcess: ingestProcess}); err != nil {
		return "", err
	}
	return name, nil
}

func applyPG(ctx context.Context, cfg config.Config, schema, prefix string, lookup func(string) (string, bool)) (pgRoles, error) {
	conn, err := connectPG(ctx, cfg)
	if err != nil {
		return pgRoles{}, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	rep, err := roles.ApplyPG(ctx, conn, roles.PGOptions{Schema: schema, Prefix: prefix, Passwords: passwords(roles.PGRoles, pgPasswordEnv, lookup)})
	if err != nil {
		return pgRoles{}, err
	}
	return pgRoles{Created: nonNil(rep.Created), Missing: nonNil(rep.Missing)}, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func passwords(rs []roles.Role, env string, lookup func(string) (string, bool)) map[roles.Role]string {
	out := map[roles.Role]string{}
	for _, r := range rs {
		if v, ok := lookup(env + strings.ToUpper(string(r))); ok {
			out[r] = v
		}
	}
	return out
}
