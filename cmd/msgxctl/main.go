// Command msgxctl is msgx's admin CLI. Each command lives in its own file and registers itself
// in commands. Every command behaves alike (pkg/cmdline): -h/--help prints its usage and does
// nothing else, --version the build, flags go anywhere on the line, human-readable output by
// default and --json for scripts; exit 0 on success, 1 on a refusal or failure, 2 on a command
// line that does not parse.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"

	"github.com/msgx/msgx/pkg/cmdline"
	"github.com/msgx/msgx/pkg/config"
	"github.com/msgx/msgx/pkg/mailbox"
	"github.com/msgx/msgx/pkg/settings"
)

// command is one msgxctl sub-command. args excludes the command's name. run parses its flags
// (cmdline.New) before it opens anything, so that -h starts nothing.
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
	code := cmdline.Exit(os.Stderr, "msgxctl", run(ctx, os.Args[1:], os.Stdout))
	stop()
	os.Exit(code)
}

const about = `commands:
%s
msgxctl <command> -h shows a command's flags. msgxctl reads the same MSGX_ variables as the
binaries (docs/configuration.md).`

func overview() string {
	var b strings.Builder
	for _, n := range commandNames() {
		fmt.Fprintf(&b, "  %-10s %s\n", n, commands[n].summary)
	}
	return fmt.Sprintf(about, b.String())
}

func run(ctx context.Context, args []string, out io.Writer) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") || args[0] == "help" {
		fs := cmdline.New("msgxctl", "<command> [flags] [arguments]", overview(), out)
		if len(args) > 0 && args[0] == "help" {
			fs.PrintUsage()
			return nil
		}
		if _, err := fs.Parse(args); err != nil {
			return err
		}
		return fs.Usagef("no command (one of %s)", strings.Join(commandNames(), ", "))
	}
	c, ok := commands[args[0]]
	if !ok {
		return &cmdline.UsageError{Msg: fmt.Sprintf("msgxctl: unknown command %q (one of %s)", args[0], strings.Join(commandNames(), ", ")), Hint: "msgxctl -h"}
	}
	cfg, err := config.Load(settings.RoleJobs)
	if err != nil && !cmdline.AsksHelp(args[1:]) {
		return fmt.Errorf("bad configuration: %w", err)
	}
	if err := mailbox.UseCA(cfg.Mailbox.MySQLTLSCAFile); err != nil && !cmdline.AsksHelp(args[1:]) {
		return err
	}
	return c.run(ctx, cfg, args[1:], out)
}

func commandNames() []string {
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// subcommand splits off the sub-command of a command that has them (the first argument). Without
// one, -h/--help prints the command's usage and --version the build (cmdline.Done); anything else
// is a usage error.
func subcommand(name, usage string, subs []string, args []string, out io.Writer) (string, []string, error) {
	fs := cmdline.New("msgxctl "+name, "<"+strings.Join(subs, "|")+"> [flags]", usage, out)
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		if _, err := fs.Parse(args); err != nil {
			return "", nil, err
		}
		return "", nil, fs.Usagef("missing sub-command (one of %s)", strings.Join(subs, ", "))
	}
	for _, s := range subs {
		if args[0] == s {
			return s, args[1:], nil
		}
	}
	return "", nil, fs.Usagef("unknown sub-command %q (one of %s)", args[0], strings.Join(subs, ", "))
}

// flags is the FlagSet of "msgxctl <name>" with --json, the flag every command has.
func flags(name, synopsis, about string, out io.Writer) (*cmdline.FlagSet, *bool) {
	fs := cmdline.New("msgxctl "+name, synopsis, about, out)
	return fs, fs.Bool("json", false, "print JSON (snake_case keys) instead of text")
}

// writeJSON prints v indented; every command's --json goes through it.
func writeJSON(out io.Writer, v any) error {
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
