package main

import (
	"context"
	"fmt"
	"os"
	"os/user"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/msgx/msgx/pkg/cmdline"
	"github.com/msgx/msgx/pkg/config"
)

func openPool(ctx context.Context, cfg config.Config) (*pgxpool.Pool, error) {
	if err := cfg.PGRefusals(); err != nil {
		return nil, badConfiguration("PostgreSQL", err)
	}
	pool, err := pgxpool.New(ctx, cfg.PGURL)
	if err != nil {
		return nil, fmt.Errorf("connect PostgreSQL: %w", err)
	}
	return pool, nil
}

// changeFlags are the flags of a command that changes rows by id, with an audit row: --ids,
// --reason and --actor (default: who runs msgxctl).
type changeFlags struct {
	fs                    *cmdline.FlagSet
	idList, reason, actor *string
}

func newChangeFlags(fs *cmdline.FlagSet, idsHelp, reasonHelp string) changeFlags {
	return changeFlags{fs: fs, idList: fs.String("ids", "", idsHelp), reason: fs.String("reason", "", reasonHelp),
		actor: fs.String("actor", defaultActor(), "who (audit)")}
}

// parse parses the command line (no positional arguments) and returns the --ids.
func (c changeFlags) parse(args []string) ([]int64, error) {
	if err := c.fs.NoArgs(args); err != nil {
		return nil, err
	}
	return parseIDs(c.fs, *c.idList)
}

// parseIDs reads a comma-separated list of positive ids (flag --ids).
func parseIDs(fs *cmdline.FlagSet, s string) ([]int64, error) {
	var ids []int64
	for part := range strings.SplitSeq(s, ",") {
		if part = strings.TrimSpace(part); part == "" {
			continue
		}
		id, err := strconv.ParseInt(part, 10, 64)
		if err != nil || id <= 0 {
			return nil, fs.Usagef("--ids: %q is not an id", part)
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// defaultActor names who runs msgxctl in audit rows: user@host, or "unknown".
func defaultActor() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		h, _ := os.Hostname()
		return u.Username + "@" + h
	}
	return "unknown"
}

// connectPG opens one PostgreSQL connection to MSGX_PG_URL (migrate, roles apply), refusing
// what production refuses first.
func connectPG(ctx context.Context, cfg config.Config) (*pgx.Conn, error) {
	if err := cfg.PGRefusals(); err != nil {
		return nil, badConfiguration("PostgreSQL", err)
	}
	conn, err := pgx.Connect(ctx, cfg.PGURL)
	if err != nil {
		return nil, fmt.Errorf("connect PostgreSQL: %w", err)
	}
	return conn, nil
}
