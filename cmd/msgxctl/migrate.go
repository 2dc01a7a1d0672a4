package main

import (
	"context"
	"fmt"
	"io"

	"github.com/msgx/msgx/pkg/config"
	"github.com/msgx/msgx/pkg/migrate"
)

func init() {
	register("migrate", command{
		summary: "apply the PostgreSQL migrations (safe when two run at once; the Kubernetes Job runs it)",
		run:     migrateCmd,
	})
}

func migrateCmd(ctx context.Context, cfg config.Config, args []string, out io.Writer) error {
	fs, asJSON := flags("migrate", "[--json]", "Applies the PostgreSQL migrations msgx embeds to the database of MSGX_PG_URL (safe when two run at once).", out)
	if err := fs.NoArgs(args); err != nil {
		return err
	}
	conn, err := connectPG(ctx, cfg)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	applied, err := migrate.Up(ctx, conn)
	if *asJSON {
		if applied == nil {
			applied = []string{}
		}
		if jerr := writeJSON(out, cfg.Location(), map[string]any{"applied": applied}); err == nil {
			err = jerr
		}
		return err
	}
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
