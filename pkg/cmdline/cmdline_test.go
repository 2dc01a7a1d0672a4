package cmdline

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func newSet(out *bytes.Buffer) (*FlagSet, *bool, *int) {
	fs := New("tool sub", "<id> [--raw]", "Does a thing.", out)
	raw := fs.Bool("raw", false, "raw output")
	n := fs.Int("n", 1, "how many")
	return fs, raw, n
}

func TestFlagsAnywhere(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	fs, raw, n := newSet(&out)
	pos, err := fs.Parse([]string{"38", "--raw", "x", "-n", "3", "--", "--raw"})
	require.NoError(t, err)
	require.Equal(t, []string{"38", "x", "--raw"}, pos, "after -- everything is positional")
	require.True(t, *raw)
	require.Equal(t, 3, *n)
	require.Empty(t, out.String())
}

func TestHelpAndVersionAreDone(t *testing.T) {
	t.Parallel()
	for _, arg := range []string{"-h", "--help", "-help"} {
		var out bytes.Buffer
		fs, _, _ := newSet(&out)
		_, err := fs.Parse([]string{"38", arg, "--bogus"})
		require.ErrorIs(t, err, Done, arg)
		require.Contains(t, out.String(), "usage: tool sub <id> [--raw]\n\nDoes a thing.\n")
		require.Contains(t, out.String(), "-raw")
		require.Equal(t, 0, Exit(&out, "tool", err))
	}
	var out bytes.Buffer
	fs, _, _ := newSet(&out)
	_, err := fs.Parse([]string{"--version"})
	require.ErrorIs(t, err, Done)
	require.True(t, strings.HasPrefix(out.String(), "tool sub "), out.String())
	require.Contains(t, out.String(), "(revision ")
}

func TestUnknownFlagIsOneLineAndExit2(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	fs, _, _ := newSet(&out)
	_, err := fs.Parse([]string{"38", "--bogus"})
	var ue *UsageError
	require.ErrorAs(t, err, &ue)
	require.Equal(t, 2, Exit(&errOut, "tool", err))
	require.Equal(t, "tool sub: flag provided but not defined: -bogus\nrun 'tool sub -h' for usage\n", errOut.String())
	require.Empty(t, out.String(), "no usage dump")
}

// A flag value that is not of its kind is a command line that does not parse: exit 2 and the
// help command; a refusal exits 1, with its hint when it has one.
func TestBadValueIsAUsageErrorAndRefusalsExit1(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	fs, _, _ := newSet(&out)
	_, err := fs.Parse([]string{"-n", "many"})
	require.Error(t, err)
	require.Equal(t, 2, Exit(&errOut, "tool", err))
	require.Equal(t, "tool sub: invalid value \"many\" for flag -n: parse error\nrun 'tool sub -h' for usage\n", errOut.String())

	errOut.Reset()
	require.Equal(t, 1, Exit(&errOut, "tool", errors.New("refused")))
	require.Equal(t, "tool: refused\n", errOut.String())

	errOut.Reset()
	require.Equal(t, 1, Exit(&errOut, "tool", WithHint(fmt.Errorf("read: %w", errors.New("gone")), "bring it back")))
	require.Equal(t, "tool: read: gone\nhint: bring it back\n", errOut.String())
	require.NoError(t, WithHint(nil, "x"))

	errOut.Reset()
	require.Equal(t, 2, Exit(&errOut, "tool", &UsageError{Msg: "tool: bad configuration", Hint: "tool -h", Fix: "see the docs"}))
	require.Equal(t, "tool: bad configuration\nhint: see the docs\n", errOut.String(), "the fix instead of the help command")
}
