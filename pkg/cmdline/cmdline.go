// Package cmdline is the command line every msgx binary and msgxctl command shares, so that they
// behave alike: -h/--help prints the usage on stdout and exits 0 having started nothing;
// --version prints the build (pkg/buildinfo) and exits 0; a command line that does not parse (an
// unknown flag, a flag or argument value that is not of its kind, a missing or extra argument)
// and a bad configuration print one line and a hint on stderr and exit 2; flags go anywhere on
// the line (before, between or after the positional arguments; "--" ends them); a refusal or a
// failure prints "<name>: <error>" (and a hint line when it has one, WithHint) and exits 1.
//
//	fs := cmdline.New("msgxctl show", "<msg_id> [--raw] [--json]", "Shows one message.", stdout)
//	raw := fs.Bool("raw", false, "print the message's XML")
//	args, err := fs.Parse(os.Args[1:])
//	if err != nil { return err } // cmdline.Exit maps it: Done → 0, *UsageError → 2, else 1
package cmdline

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/msgx/msgx/pkg/buildinfo"
)

// Done is returned by Parse when it printed the help or the version: the caller returns it, and
// Exit exits 0.
var Done = errors.New("done")

// UsageError is a command line that does not parse (an unknown flag, a value that is not of its
// kind, a missing or extra argument) or a bad configuration: exit code 2.
type UsageError struct {
	Msg  string // one line, starting with the command's name
	Hint string // the help command
	Fix  string // instead of the help command: what to change, in a sentence
}

func (e *UsageError) Error() string { return e.Msg }

// HintError is a refusal or a failure (exit code 1) whose fix is known: Exit prints its hint on a
// second line.
type HintError struct {
	Err  error
	Hint string
}

func (e *HintError) Error() string { return e.Err.Error() }
func (e *HintError) Unwrap() error { return e.Err }

// WithHint returns err with the hint naming its fix; nil and "" leave err as it is.
func WithHint(err error, hint string) error {
	if err == nil || hint == "" {
		return err
	}
	return &HintError{Err: err, Hint: hint}
}

// FlagSet is a command's flags, its synopsis and its description.
type FlagSet struct {
	*flag.FlagSet
	name     string
	synopsis string
	about    string
	out      io.Writer
	version  *bool
}

// New returns the flags of command name (e.g. "msgxctl show"); synopsis follows the name in the
// usage line; about is the text under it; help and version go to out.
func New(name, synopsis, about string, out io.Writer) *FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // the flag package would print its error and the usage: Parse reports once
	f := &FlagSet{FlagSet: fs, name: name, synopsis: synopsis, about: about, out: out}
	f.version = fs.Bool("version", false, "print the version and exit")
	return f
}

// Usagef returns a *UsageError of this command.
func (f *FlagSet) Usagef(format string, args ...any) error {
	return &UsageError{Msg: f.name + ": " + fmt.Sprintf(format, args...), Hint: f.name + " -h"}
}

// Refusef returns a refusal of this command (exit code 1): a command line msgx understands but
// will not carry out (e.g. a class that is never replayed).
func (f *FlagSet) Refusef(format string, args ...any) error {
	return fmt.Errorf("%s: %s", f.name, fmt.Sprintf(format, args...))
}

// Parse parses args, flags anywhere, and returns the positional arguments. It returns Done after
// printing the help (-h, -help, --help) or the version, and a *UsageError for a flag it does not
// know or a flag value that does not parse (not a number, a boolean, a duration).
func (f *FlagSet) Parse(args []string) ([]string, error) {
	var pos []string
	for {
		err := f.FlagSet.Parse(args)
		if errors.Is(err, flag.ErrHelp) {
			f.PrintUsage()
			return nil, Done
		}
		if err != nil {
			return nil, f.Usagef("%s", err)
		}
		rest := f.FlagSet.Args()
		if len(rest) == 0 {
			break
		}
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			pos = append(pos, rest...) // after "--" everything is positional
			break
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
	if *f.version {
		fmt.Fprintf(f.out, "%s %s\n", f.name, buildinfo.Read())
		return nil, Done
	}
	return pos, nil
}

// NoArgs parses the flags of a command that takes no positional argument.
func (f *FlagSet) NoArgs(args []string) error {
	pos, err := f.Parse(args)
	if err == nil && len(pos) > 0 {
		err = f.Usagef("unexpected argument %q", pos[0])
	}
	return err
}

// AsksHelp reports whether args ask for the help or the version (before any "--"): a command
// that must do something before it parses its flags (load its configuration) checks it first.
func AsksHelp(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "-h", "-help", "--help", "-version", "--version":
			return true
		}
	}
	return false
}

// PrintUsage writes the usage line, the description and the flags to the help output.
func (f *FlagSet) PrintUsage() {
	fmt.Fprintf(f.out, "usage: %s %s\n", f.name, f.synopsis)
	if f.about != "" {
		fmt.Fprintf(f.out, "\n%s\n", strings.TrimSpace(f.about))
	}
	fmt.Fprintln(f.out, "\nflags:")
	f.FlagSet.SetOutput(f.out)
	f.FlagSet.PrintDefaults()
	f.FlagSet.SetOutput(io.Discard)
	fmt.Fprintln(f.out, "  -h, --help\n    \tprint this help and exit")
}

// Exit reports err the way every msgx command does and returns the exit code: nil and Done 0;
// a *UsageError 2, as its line and a hint (its fix, or the help command); anything else 1, as
// "name: err" (name is left out when err already starts with it), then "hint: …" when err
// carries one (WithHint).
func Exit(stderr io.Writer, name string, err error) int {
	var ue *UsageError
	var he *HintError
	switch {
	case err == nil, errors.Is(err, Done):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintln(stderr, ue.Msg)
		if ue.Fix != "" {
			fmt.Fprintf(stderr, "hint: %s\n", ue.Fix)
		} else if ue.Hint != "" {
			fmt.Fprintf(stderr, "run '%s' for usage\n", ue.Hint)
		}
		return 2
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, name+" ") && !strings.HasPrefix(msg, name+":") {
		msg = name + ": " + msg
	}
	fmt.Fprintln(stderr, msg)
	if errors.As(err, &he) {
		fmt.Fprintf(stderr, "hint: %s\n", he.Hint)
	}
	return 1
}

// Service parses the command line of a service binary, which has no flags or arguments of its
// own (its MSGX_ variables configure it). start reports whether the binary should start; when
// not, code is its exit code, the help, the version or the usage error printed.
func Service(name, about string, args []string, stdout, stderr io.Writer) (code int, start bool) {
	fs := New(name, "[-h | --version]", about+"\n\nConfigured by its MSGX_ environment variables (docs/configuration.md).", stdout)
	pos, err := fs.Parse(args)
	if err == nil && len(pos) > 0 {
		err = fs.Usagef("unexpected argument %q (configure it with MSGX_ variables)", pos[0])
	}
	if err != nil {
		return Exit(stderr, name, err), false
	}
	return 0, true
}
