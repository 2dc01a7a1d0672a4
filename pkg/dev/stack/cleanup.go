package stack

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/msgx/msgx/pkg/dev/mailboxdb"
)

// Drop drops both databases of d (the PostgreSQL one with FORCE: sessions left behind are ended).
// Stop the stack that uses them first.
func Drop(ctx context.Context, d Databases) error {
	adminURL, err := d.pgURL("postgres")
	if err != nil {
		return err
	}
	admin, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return fmt.Errorf("connect PostgreSQL: %w", err)
	}
	defer admin.Close(ctx)
	_, err = admin.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{d.PGDatabase}.Sanitize()+" WITH (FORCE)")
	if err != nil {
		err = fmt.Errorf("drop database: %w", err)
	}
	return errors.Join(err, mailboxdb.DropDatabase(ctx, d.MySQLServer, d.MySQLDB))
}
