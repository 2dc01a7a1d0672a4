package main

import (
	"context"
	"fmt"
	"io"

	"github.com/jackc/pgx/v5"

	"github.com/msgx/msgx/pkg/config"
	"github.com/msgx/msgx/pkg/migrate"
)

func init() {
	register("migrate", command{
		summary: "apply the PostgreSQL migrations (safe when two run at once; the Kubernetes Job runs it)",
		run:     migrateCmd,
	})
}

func migrateCmd(ctx context.Context, cfg config.Config, _ []string, out io.Writer) error {
	conn, err := pgx.Connect(ctx, cfg.PGURL)
	if err != nil {
		return fmt.Errorf("connect PostgreSQL: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	applied, err := migrate.Up(ctx, conn)
	for _, v := range applied {
		fmt.Fprintf(out, "applied %s\n", v)
	}
	if err != nil {
		return err
	}
	if len(applied) == 0 {
		fmt.Fprintln(out, "schema up to date")
	}
	return nil
}
