// Command msgxctl is msgx's admin CLI. Each command lives in its own file and registers itself
// in commands. Every command behaves alike (pkg/cmdline): -h/--help prints its usage and does
// nothing else, --version the build, flags go anywhere on the line (--json also before the
// command), human-readable output by default and --json for scripts ([] for an empty list, times
// in RFC 3339 with the airport's offset); exit 0 on success, 1 on a refusal or failure (with a
// hint when the fix is known: a missing database or schema), 2 on a command line that does not
// parse or a bad configuration (with a hint).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"reflect"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/msgx/msgx/pkg/cmdline"
	"github.com/msgx/msgx/pkg/config"
	"github.com/msgx/msgx/pkg/mailbox"
	"github.com/msgx/msgx/pkg/migrate"
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
msgxctl <command> -h shows a command's flags. --json, which every command has, may also come
before the command. msgxctl reads the same MSGX_ variables as the binaries
(docs/configuration.md).`

func overview() string {
	var b strings.Builder
	for _, n := range commandNames() {
		fmt.Fprintf(&b, "  %-10s %s\n", n, commands[n].summary)
	}
	return fmt.Sprintf(about, b.String())
}

func run(ctx context.Context, args []string, out io.Writer) error {
	name, args, err := splitCommand(args, out)
	if err != nil {
		return err
	}
	c, ok := commands[name]
	if !ok {
		return &cmdline.UsageError{Msg: fmt.Sprintf("msgxctl: unknown command %q (one of %s)", name, strings.Join(commandNames(), ", ")), Hint: "msgxctl -h"}
	}
	cfg, err := config.LoadTool()
	if err != nil && !cmdline.AsksHelp(args) {
		return badConfiguration(name, err)
	}
	if err := mailbox.UseCA(cfg.Mailbox.MySQLTLSCAFile); err != nil && !cmdline.AsksHelp(args) {
		return badConfiguration(name, err)
	}
	return withFix(c.run(ctx, cfg, args, out), cfg)
}

// splitCommand returns the command (the first argument that is not a flag) and its arguments.
// The global flags before it (--json, which every command has) join the command's flags. A line
// without a command prints the overview (-h, help) or the version, or is a usage error.
func splitCommand(args []string, out io.Writer) (string, []string, error) {
	lead := 0
	for lead < len(args) && isGlobalFlag(args[lead]) {
		lead++
	}
	if lead < len(args) && !strings.HasPrefix(args[lead], "-") && args[lead] != "help" {
		rest := slices.Clone(args[lead+1:])
		at := slices.Index(rest, "--") // the global flags go before "--", which ends the flags
		if at < 0 {
			at = len(rest)
		}
		return args[lead], slices.Insert(rest, at, args[:lead]...), nil
	}
	fs := cmdline.New("msgxctl", "[--json] <command> [flags] [arguments]", overview(), out)
	fs.Bool("json", false, "print JSON (snake_case keys) instead of text; every command has it")
	if slices.Contains(args, "help") {
		fs.PrintUsage()
		return "", nil, cmdline.Done
	}
	if _, err := fs.Parse(args); err != nil {
		return "", nil, err
	}
	return "", nil, fs.Usagef("no command (one of %s)", strings.Join(commandNames(), ", "))
}

// isGlobalFlag reports whether arg is --json (-json, --json=false, …), the flag every command has.
func isGlobalFlag(arg string) bool {
	name, _, _ := strings.Cut(strings.TrimLeft(arg, "-"), "=")
	return strings.HasPrefix(arg, "-") && arg != "--" && name == "json"
}

// badConfiguration is an MSGX_ variable msgxctl cannot use: exit 2, with the fix.
func badConfiguration(name string, err error) error {
	return &cmdline.UsageError{Msg: "msgxctl " + name + ": bad configuration: " + err.Error(),
		Fix: "set the MSGX_ variables named above as docs/configuration.md describes"}
}

// withFix adds its fix to an error whose cause msgxctl knows: a database or a schema that is not
// there (migrate.Hint), a PostgreSQL that does not answer. The hint names MSGX_PG_URL as used.
func withFix(err error, cfg config.Config) error {
	if err == nil {
		return nil
	}
	url := cfg.Redacted()["MSGX_PG_URL"]
	if h := migrate.Hint(err); h != "" {
		return cmdline.WithHint(err, fmt.Sprintf("%s (MSGX_PG_URL is %s)", h, url))
	}
	var ce *pgconn.ConnectError
	var ne *net.OpError
	if errors.As(err, &ce) && errors.As(err, &ne) {
		return cmdline.WithHint(err, fmt.Sprintf("no PostgreSQL answers at MSGX_PG_URL (%s): start it (make up) or set MSGX_PG_URL", url))
	}
	return err
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

// writeJSON prints v indented; every command's --json goes through it, so that every list is
// [] when empty and every time reads alike (jsonReady).
func writeJSON(out io.Writer, loc *time.Location, v any) error {
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	if v == nil {
		return enc.Encode(v)
	}
	return enc.Encode(jsonReady(reflect.ValueOf(v), loc).Interface())
}
