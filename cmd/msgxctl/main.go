// Command msgxctl is msgx's admin CLI. Each command lives in its own file and registers itself
// in commands; human-readable output by default, --json for scripts where a command offers it.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"syscall"

	"github.com/msgx/msgx/pkg/config"
	"github.com/msgx/msgx/pkg/mailbox"
)

// command is one msgxctl sub-command. args excludes the command's name.
type command struct {
	summary string
	run     func(ctx context.Context, cfg config.Config, args []string, out io.Writer) error
}

// commands is filled by each command file's init (registration only: no I/O there).
var commands = map[string]command{}

func register(name string, c command) {
	if _, dup := commands[name]; dup {
		panic("msgxctl: command registered twice: " + name)
	}
	commands[name] = c
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "msgxctl: %v\n", err)
		os.Exit(1)
	}
}

func usage(out io.Writer) {
	fmt.Fprintln(out, "usage: msgxctl <command> [flags]   (msgxctl <command> -h for its flags)")
	fmt.Fprintln(out, "\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(out, "  %-10s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(out, "\nmsgxctl reads the same MSGX_ variables as the binaries (docs/configuration.md).")
}

func run(ctx context.Context, args []string, out io.Writer) error {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		usage(out)
		if len(args) == 0 {
			return fmt.Errorf("no command")
		}
		return nil
	}
	c, ok := commands[args[0]]
	if !ok {
		usage(out)
		return fmt.Errorf("unknown command %q", args[0])
	}
	cfg, err := config.Load(config.RoleJobs)
	if err != nil {
		return fmt.Errorf("bad configuration: %w", err)
	}
	if err := mailbox.UseCA(cfg.MySQLTLSCAFile); err != nil {
		return err
	}
	return c.run(ctx, cfg, args[1:], out)
}
