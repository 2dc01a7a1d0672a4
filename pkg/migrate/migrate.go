// Package migrate applies the dbmate-format migrations of package db to PostgreSQL.
//
// It records applied versions in dbmate's own table (schema_migrations), so the dbmate CLI and
// this package can be used interchangeably on one database. Every run holds a session advisory
// lock for its schema, so two migration Jobs started at once apply each file exactly once: the
// second waits, then finds nothing left to do.
package migrate

import (
	"context"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/msgx/msgx/db"
)

// Migration is one file of db/migrations.
type Migration struct {
	Version string // the numeric prefix of the file name, as dbmate records it
	Name    string
	Up      string
}

// Load reads and parses the embedded migrations in version order.
func Load() ([]Migration, error) {
	return load(db.Migrations, "migrations")
}

func load(fsys fs.FS, dir string) ([]Migration, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("read migrations: %w", err)
	}
	var out []Migration
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".sql") {
			continue
		}
		body, err := fs.ReadFile(fsys, path.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("read migration %s: %w", e.Name(), err)
		}
		version, _, ok := strings.Cut(e.Name(), "_")
		if !ok || version == "" {
			return nil, fmt.Errorf("migration %s: name must be <version>_<name>.sql", e.Name())
		}
		up, err := upPart(string(body))
		if err != nil {
			return nil, fmt.Errorf("migration %s: %w", e.Name(), err)
		}
		out = append(out, Migration{Version: version, Name: e.Name(), Up: up})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	return out, nil
}

func upPart(body string) (string, error) {
	const upMark, downMark = "-- migrate:up", "-- migrate:down"
	i := strings.Index(body, upMark)
	if i < 0 {
		return "", fmt.Errorf("no %q section", upMark)
	}
	up := body[i+len(upMark):]
	if j := strings.Index(up, downMark); j >= 0 {
		up = up[:j]
	}
	return up, nil
}

const (
	// lockSQL serialises concurrent runs per schema (key 0 of the schema's lock class; see pkg/leader).
	lockSQL   = `SELECT pg_advisory_lock(hashtext(current_schema()), 0)`
	unlockSQL = `SELECT pg_advisory_unlock(hashtext(current_schema()), 0)`
	tableSQL  = `CREATE TABLE IF NOT EXISTS schema_migrations (version character varying(128) NOT NULL PRIMARY KEY)`
	appliedQ  = `SELECT version FROM schema_migrations`
	recordSQL = `INSERT INTO schema_migrations (version) VALUES ($1)`
)

// Up applies every migration not yet recorded, each in its own transaction, and returns the
// versions it applied. conn must be a dedicated connection (not a transaction-pooling proxy).
func Up(ctx context.Context, conn *pgx.Conn) ([]string, error) {
	migrations, err := Load()
	if err != nil {
		return nil, err
	}
	if _, err := conn.Exec(ctx, lockSQL); err != nil {
		return nil, fmt.Errorf("lock migrations: %w", err)
	}
	defer conn.Exec(context.WithoutCancel(ctx), unlockSQL) //nolint:errcheck // closing the session releases it too

	if _, err := conn.Exec(ctx, tableSQL); err != nil {
		return nil, fmt.Errorf("create schema_migrations: %w", err)
	}
	rows, err := conn.Query(ctx, appliedQ)
	if err != nil {
		return nil, fmt.Errorf("read schema_migrations: %w", err)
	}
	versions, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("read schema_migrations: %w", err)
	}
	done := make(map[string]bool, len(versions))
	for _, v := range versions {
		done[v] = true
	}
	var applied []string
	for _, m := range migrations {
		if done[m.Version] {
			continue
		}
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, m.Up); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, recordSQL, m.Version)
			return err
		})
		if err != nil {
			return applied, fmt.Errorf("apply %s: %w", m.Name, err)
		}
		applied = append(applied, m.Version)
	}
	return applied, nil
}
