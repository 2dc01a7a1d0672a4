// Command msgxctl is msgx's admin CLI: migrations now; status, replay, dead letters and backfill
// as the stages that own them land. Human-readable output by default, --json for scripts.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/msgx/msgx/pkg/config"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "msgxctl: %v\n", err)
		os.Exit(1)
	}
}

const usage = `usage: msgxctl <command> [flags]

commands:
  migrate   apply the PostgreSQL migrations (safe to run concurrently; the Kubernetes Job runs it)
`

func run(ctx context.Context, args []string, out io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(out, usage)
		return fmt.Errorf("no command")
	}
	// msgxctl talks to the same databases as the binaries: it reads the same variables.
	cfg, err := config.Load(config.RoleJobs)
	if err != nil {
		return fmt.Errorf("bad configuration: %w", err)
	}
	switch args[0] {
	case "migrate":
		return migrateCmd(ctx, cfg, out)
	case "help", "-h", "--help":
		fmt.Fprint(out, usage)
		return nil
	default:
		fmt.Fprint(out, usage)
		return fmt.Errorf("unknown command %q", args[0])
	}
}
