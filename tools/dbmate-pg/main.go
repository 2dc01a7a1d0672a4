// Command dbmate-pg is dbmate (github.com/amacneil/dbmate/v2, the pinned library) with only its
// PostgreSQL driver linked: `make verify` applies and dumps the migrations with it. The upstream
// CLI links every driver (go-sqlite3 through cgo, ClickHouse, BigQuery) and took most of a cold
// `make test` to compile; the migration and dump logic here is dbmate's own.
//
//	dbmate-pg -url URL -migrations-dir db/migrations up
//	dbmate-pg -url URL -migrations-dir db/migrations rollback   (dbmate's down: the last applied migration)
//	dbmate-pg -url URL -schema-file FILE dump
package main

import (
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"

	"github.com/amacneil/dbmate/v2/pkg/dbmate"
	_ "github.com/amacneil/dbmate/v2/pkg/driver/postgres"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "dbmate-pg:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("dbmate-pg", flag.ContinueOnError)
	rawURL := fs.String("url", os.Getenv("DATABASE_URL"), "PostgreSQL URL")
	dir := fs.String("migrations-dir", "db/migrations", "migrations directory")
	schema := fs.String("schema-file", "db/schema.sql", "schema file written by dump")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("usage: dbmate-pg [flags] up|rollback|dump")
	}
	u, err := url.Parse(*rawURL)
	if err != nil || u.Scheme == "" {
		return fmt.Errorf("-url: %q is not a database URL", *rawURL)
	}
	db := dbmate.New(u)
	db.AutoDumpSchema = false
	db.MigrationsDir = []string{*dir}
	db.SchemaFile = *schema
	db.Log = stdout
	switch fs.Arg(0) {
	case "up":
		return db.CreateAndMigrate()
	case "rollback", "down":
		return db.Rollback()
	case "dump":
		return db.DumpSchema()
	default:
		return fmt.Errorf("unknown command %q (up, rollback or dump)", fs.Arg(0))
	}
}
