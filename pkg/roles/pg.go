package roles

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/xdg-go/scram"
)

// PGOptions says where and under which names ApplyPG works.
type PGOptions struct {
	Schema    string          // the schema of msgx's tables; "" means the session's current_schema()
	Prefix    string          // role names are Prefix+role; "" means DefaultPrefix
	Passwords map[Role]string // set for the roles present (stored as a SCRAM-SHA-256 verifier)
	ConnLimit int             // CONNECTION LIMIT of a new role; 0 means 40
}

// Report says what ApplyPG did that an operator should know.
type Report struct {
	Created []string // roles created
	Missing []string // tables or sequences not there yet (run again after the migration)
}

// ApplyPG creates the missing PostgreSQL roles, sets the given passwords, and makes each role's
// privileges in the schema exactly those of the grant table, and its memberships in predefined
// roles those of pgMembers, in one transaction: running binaries never see a role without its
// grants. It needs a session that may create roles, grant on the schema's tables and grant
// pg_read_all_stats (a superuser, or the owner with CREATEROLE; from PostgreSQL 16 on, also
// with ADMIN OPTION on pg_read_all_stats).
func ApplyPG(ctx context.Context, conn *pgx.Conn, o PGOptions) (Report, error) {
	var rep Report
	if o.ConnLimit == 0 {
		o.ConnLimit = 40
	}
	err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if o.Schema == "" {
			if err := tx.QueryRow(ctx, pgCurrentSchemaSQL).Scan(&o.Schema); err != nil {
				return fmt.Errorf("read current schema: %w", err)
			}
		}
		if err := pgEnsureRoles(ctx, tx, o, &rep); err != nil {
			return err
		}
		if err := pgResetPrivileges(ctx, tx, o); err != nil {
			return err
		}
		if err := pgMemberships(ctx, tx, o); err != nil {
			return err
		}
		if err := grantTable(ctx, tx, o, &rep); err != nil {
			return err
		}
		if slices.Contains(rep.Missing, o.Schema+".leader_lease_member") {
			return nil
		}
		for _, r := range LeaseRoles {
			if err := execRendered(ctx, tx, pgLeaseMemberSQL, o.Schema, Name(o.Prefix, r), string(r)); err != nil {
				return fmt.Errorf("map %s to its leader_lease row: %w", Name(o.Prefix, r), err)
			}
		}
		return nil
	})
	if err != nil {
		return Report{}, fmt.Errorf("apply PostgreSQL roles: %w", err)
	}
	return rep, nil
}

// pgEnsureRoles creates the roles that do not exist (listing them in rep.Created) and sets the
// passwords given.
func pgEnsureRoles(ctx context.Context, tx pgx.Tx, o PGOptions, rep *Report) error {
	for _, r := range PGRoles {
		name := Name(o.Prefix, r)
		var exists bool
		if err := tx.QueryRow(ctx, pgRoleExistsSQL, name).Scan(&exists); err != nil {
			return fmt.Errorf("look up role %s: %w", name, err)
		}
		if !exists {
			if err := execRendered(ctx, tx, pgCreateRoleSQL, name, o.ConnLimit); err != nil {
				return fmt.Errorf("create role %s: %w", name, err)
			}
			rep.Created = append(rep.Created, name)
		}
		if pw, ok := o.Passwords[r]; ok {
			v, err := scramVerifier(pw)
			if err != nil {
				return fmt.Errorf("password of %s: %w", name, err)
			}
			if err := execRendered(ctx, tx, pgPasswordSQL, name, v); err != nil {
				return fmt.Errorf("set password of %s: %w", name, err)
			}
		}
	}
	return nil
}

// pgResetPrivileges sets the schema's privileges and takes every privilege in it from the roles
// other than the owner, so that grantTable leaves exactly those of the grant table.
func pgResetPrivileges(ctx context.Context, tx pgx.Tx, o PGOptions) error {
	others := make([]string, 0, len(PGRoles)-1)
	for _, r := range PGRoles[1:] {
		others = append(others, Name(o.Prefix, r))
	}
	if err := execRenderedList(ctx, tx, pgSchemaSQL, o.Schema, Name(o.Prefix, Owner), others); err != nil {
		return fmt.Errorf("schema %s privileges: %w", o.Schema, err)
	}
	for _, name := range others {
		if err := execRenderedList(ctx, tx, pgRevokeSQL, o.Schema, name); err != nil {
			return fmt.Errorf("reset privileges of %s: %w", name, err)
		}
	}
	return nil
}

// pgMemberships makes msgx's roles members of exactly the predefined roles pgMembers lists
// (among those it names: a membership msgx does not manage is left alone).
func pgMemberships(ctx context.Context, tx pgx.Tx, o PGOptions) error {
	for _, r := range PGRoles {
		name := Name(o.Prefix, r)
		for _, of := range pgManaged() {
			want := slices.Contains(pgMembers, pgMember{r, of})
			var is bool
			if err := tx.QueryRow(ctx, pgIsMemberSQL, of, name).Scan(&is); err != nil {
				return fmt.Errorf("look up the membership of %s in %s: %w", name, of, err)
			}
			var err error
			switch {
			case want && !is:
				err = execRendered(ctx, tx, pgGrantRoleSQL, of, name)
			case !want && is:
				err = execRendered(ctx, tx, pgRevokeRoleSQL, of, name)
			}
			if err != nil {
				return fmt.Errorf("membership of %s in %s: %w", name, of, err)
			}
		}
	}
	return nil
}

// grantTable grants the privileges of the grant table; the objects not there yet are listed once
// each in rep.Missing.
func grantTable(ctx context.Context, tx pgx.Tx, o PGOptions, rep *Report) error {
	missing := map[string]bool{}
	for _, g := range pgGrants {
		name := Name(o.Prefix, g.role)
		for _, obj := range g.objects {
			if g.privs == "EXECUTE" {
				if err := grantFunction(ctx, tx, o.Schema, obj, name, missing, rep); err != nil {
					return err
				}
				continue
			}
			var kind *string
			err := tx.QueryRow(ctx, pgRelKindSQL, o.Schema, obj).Scan(&kind)
			if errors.Is(err, pgx.ErrNoRows) {
				if !missing[obj] {
					missing[obj] = true
					rep.Missing = append(rep.Missing, o.Schema+"."+obj)
				}
				continue
			}
			if err != nil {
				return fmt.Errorf("look up %s.%s: %w", o.Schema, obj, err)
			}
			if g.privs == "USAGE" {
				err = execRendered(ctx, tx, pgGrantSequenceSQL, o.Schema, obj, name)
			} else {
				err = execRendered(ctx, tx, pgGrantTableSQL, g.privs, o.Schema, obj, name)
			}
			if err != nil {
				return fmt.Errorf("grant %s on %s.%s to %s: %w", g.privs, o.Schema, obj, name, err)
			}
		}
	}
	return nil
}

// grantFunction grants EXECUTE on function fn (with its argument types) of schema to role; a
// function not there yet is listed once in rep.Missing.
func grantFunction(ctx context.Context, tx pgx.Tx, schema, fn, role string, missing map[string]bool, rep *Report) error {
	var exists bool
	if err := tx.QueryRow(ctx, pgFunctionExistsSQL, schema, fn).Scan(&exists); err != nil {
		return fmt.Errorf("look up %s.%s: %w", schema, fn, err)
	}
	if !exists {
		if !missing[fn] {
			missing[fn] = true
			rep.Missing = append(rep.Missing, schema+"."+fn)
		}
		return nil
	}
	if err := execRendered(ctx, tx, pgGrantFunctionSQL, schema, fn, role); err != nil {
		return fmt.Errorf("grant EXECUTE on %s.%s to %s: %w", schema, fn, role, err)
	}
	return nil
}

// execRendered runs the statement the server renders from sql and args (format with %I/%L).
func execRendered(ctx context.Context, tx pgx.Tx, sql string, args ...any) error {
	var stmt string
	if err := tx.QueryRow(ctx, sql, args...).Scan(&stmt); err != nil {
		return fmt.Errorf("render: %w", err)
	}
	if _, err := tx.Exec(ctx, stmt); err != nil {
		return err
	}
	return nil
}

// execRenderedList runs each statement of the text[] the server renders.
func execRenderedList(ctx context.Context, tx pgx.Tx, sql string, args ...any) error {
	var stmts []string
	if err := tx.QueryRow(ctx, sql, args...).Scan(&stmts); err != nil {
		return fmt.Errorf("render: %w", err)
	}
	for _, s := range stmts {
		if _, err := tx.Exec(ctx, s); err != nil {
			return err
		}
	}
	return nil
}

// scramIterations is PostgreSQL's default (scram_iterations) for SCRAM-SHA-256 verifiers.
const scramIterations = 4096

// scramVerifier returns PostgreSQL's SCRAM-SHA-256 verifier of password:
// SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>, all base64.
func scramVerifier(password string) (string, error) {
	if password == "" {
		return "", errors.New("empty password")
	}
	client, err := scram.HashGeneratorFcn(sha256.New).NewClient("", password, "")
	if err != nil {
		return "", err // SASLprep refused the password
	}
	salt := make([]byte, 16)
	if _, err := rand.Read(salt); err != nil {
		return "", err
	}
	c := client.GetStoredCredentials(scram.KeyFactors{Salt: string(salt), Iters: scramIterations})
	b64 := base64.StdEncoding.EncodeToString
	return fmt.Sprintf("SCRAM-SHA-256$%d:%s$%s:%s", scramIterations, b64(salt), b64(c.StoredKey), b64(c.ServerKey)), nil
}
