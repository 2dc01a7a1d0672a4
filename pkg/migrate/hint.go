package migrate

import (
	"errors"

	"github.com/jackc/pgx/v5/pgconn"
)

// Hint names the fix of a PostgreSQL error that means msgx's database or schema is not there
// yet, or "" for any other error. Binaries log it next to the error they retry on.
func Hint(err error) string {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return ""
	}
	switch pe.Code {
	case "3D000": // invalid_catalog_name: database "…" does not exist
		return "the database of MSGX_PG_URL does not exist: run make up (it creates and migrates the development database msgx), " +
			"set MSGX_PG_URL to an existing one (make demo leaves msgx_demo: MSGX_PG_URL='postgres://postgres@127.0.0.1:5432/msgx_demo?sslmode=disable'), " +
			"or create it and run msgxctl migrate against MSGX_PG_URL"
	case "42P01", "3F000": // undefined_table, invalid_schema_name
		return "msgx's schema is not there: run msgxctl migrate against MSGX_PG_URL (make up does it for the development database), " +
			"or point MSGX_PG_URL at the database and search_path that hold it"
	}
	return ""
}
