package cmd_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// unreachablePG is a PostgreSQL nobody listens on: a binary that started its service would retry
// it forever (or fail), never exit 0 at once.
const unreachablePG = "postgres://postgres@127.0.0.1:1/msgx?sslmode=disable&connect_timeout=1"

// result is one run of a binary.
type result struct {
	code           int
	stdout, stderr string
	took           time.Duration
}

// held is a listener the test holds on MSGX_HTTP_ADDR and MSGX_API_ADDR: a binary that started
// its service could not bind it and would fail, not exit 0.
var held = sync.OnceValue(func() string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	return l.Addr().String() // kept open for the whole test binary
})

// runBin runs binary bin with args and the unreachable database, bounded by 60 s.
func runBin(t *testing.T, bin string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(binDir, bin), args...)
	cmd.Env = append(cleanEnv(), "MSGX_PG_URL="+unreachablePG, "MSGX_MYSQL_DSN=root@tcp(127.0.0.1:1)/none?timeout=1s",
		"MSGX_HTTP_ADDR="+held(), "MSGX_API_ADDR="+held(), "MSGX_KAFKA_BROKERS=127.0.0.1:1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	r := result{stdout: stdout.String(), stderr: stderr.String(), took: time.Since(start)}
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit) && exit.ExitCode() >= 0:
		r.code = exit.ExitCode()
	default:
		t.Fatalf("%s %v did not end by itself within 60s (it started something): %v\nstdout: %s\nstderr: %s", bin, args, err, r.stdout, r.stderr)
	}
	return r
}

// invocation is a binary and the command words before the flags ("msgxctl", "dlq", "list").
type invocation struct {
	bin   string
	words []string
}

func (in invocation) name() string { return strings.Join(append([]string{in.bin}, in.words...), " ") }

// msgxctlCommands finds every msgxctl command and sub-command from msgxctl's own help, so that a
// command added later is covered without touching this test.
func msgxctlCommands(t *testing.T) []invocation {
	t.Helper()
	top := runBin(t, "msgxctl", "-h")
	require.Equal(t, 0, top.code, top.stderr)
	var out []invocation
	cmdLine := regexp.MustCompile(`(?m)^  ([a-z][a-z-]*) `)
	subs := regexp.MustCompile(`^usage: msgxctl [a-z-]+ <([a-z|-]+)>`)
	for _, m := range cmdLine.FindAllStringSubmatch(top.stdout, -1) {
		c := m[1]
		out = append(out, invocation{"msgxctl", []string{c}})
		help := runBin(t, "msgxctl", c, "-h")
		require.Equal(t, 0, help.code, "msgxctl %s -h: %s", c, help.stderr)
		if sm := subs.FindStringSubmatch(help.stdout); sm != nil {
			for _, sub := range strings.Split(sm[1], "|") {
				out = append(out, invocation{"msgxctl", []string{c, sub}})
			}
		}
	}
	require.GreaterOrEqual(t, len(out), 20, "msgxctl's commands and sub-commands: %v", out)
	return out
}

// Every binary and every msgxctl command and sub-command: -h and --help print the usage and exit
// 0, --version prints the build and exits 0, an unknown flag prints one line and a hint and exits
// 2; none of them starts anything (each returns at once although the database is unreachable and
// its HTTP addresses are taken, and logs nothing).
func TestHelpVersionAndUnknownFlagStartNothing(t *testing.T) {
	t.Parallel()
	var all []invocation
	for _, b := range append(append([]string{}, binaries...), others...) {
		all = append(all, invocation{bin: b})
	}
	all = append(all, msgxctlCommands(t)...)
	wantVersion := fmt.Sprintf("%s (revision %s, %s)\n", testVersion, testRevision, runtime.Version())
	for _, in := range all {
		t.Run(in.name(), func(t *testing.T) {
			t.Parallel()
			name := in.name()
			for _, h := range []string{"-h", "--help"} {
				r := runBin(t, in.bin, append(append([]string{}, in.words...), h)...)
				require.Equal(t, 0, r.code, "%s %s: %s", name, h, r.stderr)
				require.True(t, strings.HasPrefix(r.stdout, "usage: "+name+" "), "%s %s:\n%s", name, h, r.stdout)
				require.Contains(t, r.stdout, "--help")
				require.Empty(t, r.stderr, "%s %s logs nothing: it starts nothing", name, h)
			}
			r := runBin(t, in.bin, append(append([]string{}, in.words...), "--version")...)
			require.Equal(t, 0, r.code, "%s --version: %s", name, r.stderr)
			require.Equal(t, name+" "+wantVersion, r.stdout)
			require.Empty(t, r.stderr)

			r = runBin(t, in.bin, append(append([]string{}, in.words...), "--no-such-flag")...)
			require.Equal(t, 2, r.code, "%s --no-such-flag: %s %s", name, r.stdout, r.stderr)
			require.Equal(t, name+": flag provided but not defined: -no-such-flag\nrun '"+name+" -h' for usage\n", r.stderr,
				"one line, no duplicate, and a hint")
			require.Empty(t, r.stdout, "no usage dump")
		})
	}
}

// Help goes before everything else, whatever follows it, even a bad configuration (msgxctl) or
// flags that are not there.
func TestHelpWinsOverTheRestOfTheLine(t *testing.T) {
	t.Parallel()
	r := runBin(t, "msgxctl", "show", "38", "--raw", "-h", "--no-such-flag")
	require.Equal(t, 0, r.code, r.stderr)
	require.True(t, strings.HasPrefix(r.stdout, "usage: msgxctl show "))

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(binDir, "msgxctl"), "migrate", "-h")
	cmd.Env = append(cleanEnv(), "MSGX_MAX_ATTEMPTS=0")
	out, err := cmd.Output()
	require.NoError(t, err, "a bad configuration does not stop the help")
	require.True(t, strings.HasPrefix(string(out), "usage: msgxctl migrate "))
}

// Refusals exit 1 with one line naming what is wrong, before anything is opened: the database is
// unreachable, so these would otherwise fail connecting.
func TestRefusalsExit1(t *testing.T) {
	t.Parallel()
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"replay", "--class", "BOGUS", "--dry-run"}, "msgxctl replay: unknown class BOGUS (one of CODEC_ERROR, UNSUPPORTED, INFRA, EXHAUSTED)\n"},
		{[]string{"replay", "--class", "protocol", "--dry-run"}, "msgxctl replay: class PROTOCOL is never replayed (only CODEC_ERROR, UNSUPPORTED, INFRA, EXHAUSTED): the same bytes would fail the same way\n"},
		{[]string{"replay", "--ids", "7"}, "msgxctl replay: --reason is required (audit; --actor defaults to "},
		{[]string{"show", "abc"}, "msgxctl show: msg_id \"abc\" is not a number\n"},
		{[]string{"dlq", "list", "--target", "KAFKA:nope"}, "msgxctl dlq list: --target must be KAFKA:msg or KAFKA:schd, got \"KAFKA:nope\"\n"},
		{[]string{"dlq", "list", "--limit", "many"}, "msgxctl dlq list: invalid value \"many\" for flag -limit: parse error\n"},
		{[]string{"request", "schedule", "--from", "tomorrow", "--to", "2026-12-03", "--dry-run"}, "msgxctl request schedule: --from: want YYYY-MM-DD, got \"tomorrow\"\n"},
	}
	for _, c := range cases {
		r := runBin(t, "msgxctl", c.args...)
		require.Equal(t, 1, r.code, "%v: %s", c.args, r.stderr)
		require.True(t, strings.HasPrefix(r.stderr, c.want), "%v: got %q", c.args, r.stderr)
		require.NotContains(t, r.stderr, "connect", "refused before connecting")
		require.Equal(t, 1, strings.Count(r.stderr, "\n"), "one line: %q", r.stderr)
	}
	r := runBin(t, "msgxctl", "replay", "--class", "EXHAUSTED")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "--reason is required")
	require.NotRegexp(t, "--actor.*required", r.stderr, "--actor has a default: not claimed to be required")

	// Usage errors exit 2: a missing or stray argument, an unknown command or sub-command.
	for _, args := range [][]string{{"show"}, {"show", "1", "2"}, {"status", "extra"}, {"nope"}, {"dlq", "nope"}, {"history"}, {}} {
		r := runBin(t, "msgxctl", args...)
		require.Equal(t, 2, r.code, "%v: %s", args, r.stderr)
		require.Contains(t, r.stderr, "-h' for usage", "%v", args)
	}
	r = runBin(t, "ingest", "extra")
	require.Equal(t, 2, r.code)
	require.Equal(t, "ingest: unexpected argument \"extra\" (configure it with MSGX_ variables)\nrun 'ingest -h' for usage\n", r.stderr)
}

// With the default configuration and no database, a binary retries and says what to do.
func TestMissingDatabaseNamesTheFix(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(binDir, "processor"))
	cmd.Env = append(cleanEnv(), "MSGX_PG_URL=postgres://postgres@127.0.0.1:5432/msgx_cmdtest_no_such_db?sslmode=disable",
		"MSGX_HTTP_ADDR=127.0.0.1:0", "MSGX_LEADER_RETRY=100ms")
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { cancel(); _ = cmd.Wait() })
	lines := make(chan string)
	go func() {
		buf := make([]byte, 0, 64*1024)
		b := make([]byte, 4096)
		for {
			n, err := stderr.Read(b)
			buf = append(buf, b[:n]...)
			for {
				i := bytes.IndexByte(buf, '\n')
				if i < 0 {
					break
				}
				lines <- string(buf[:i])
				buf = buf[i+1:]
			}
			if err != nil {
				close(lines)
				return
			}
		}
	}()
	var start string
	deadline := time.After(30 * time.Second)
	for {
		select {
		case l, ok := <-lines:
			require.True(t, ok, "processor exited")
			if strings.Contains(l, `"message":"starting"`) {
				start = l
			}
			if strings.Contains(l, "leader campaign failed") || strings.Contains(l, "identity rule check failed") { // the processor checks the identity rule first
				require.Contains(t, l, `database \"msgx_cmdtest_no_such_db\" does not exist`)
				require.Contains(t, l, `"hint":"the database of MSGX_PG_URL does not exist: run make up`)
				require.Contains(t, l, "msgxctl migrate against MSGX_PG_URL")
				require.Contains(t, start, `"version":"`+testVersion+`"`, "the start-up line came first, with the version")
				require.Contains(t, start, `"MSGX_PG_URL":"postgres://postgres@127.0.0.1:5432/msgx_cmdtest_no_such_db?sslmode=disable"`)
				require.Contains(t, start, `"MSGX_MAX_ATTEMPTS":"5"`, "the effective configuration")
				return
			}
		case <-deadline:
			t.Fatal("no retry log line")
		}
	}
}
