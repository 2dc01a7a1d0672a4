package cmd_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/dev/testdb"
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
	return runBinEnv(t, bin, nil, args...)
}

// runBinEnv is runBin with env added to (and overriding) its environment.
func runBinEnv(t *testing.T, bin string, env []string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(binDir, bin), args...)
	cmd.Env = append(cleanEnv(), "MSGX_PG_URL="+unreachablePG, "MSGX_MYSQL_DSN=root@tcp(127.0.0.1:1)/none?timeout=1s",
		"MSGX_HTTP_ADDR="+held(), "MSGX_API_ADDR="+held(), "MSGX_KAFKA_BROKERS=127.0.0.1:1")
	cmd.Env = append(cmd.Env, env...) // the last value of a variable wins
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
	r := runBin(t, "msgxctl", "replay", "--class", "protocol", "--dry-run")
	require.Equal(t, 1, r.code, r.stderr)
	require.Equal(t, "msgxctl replay: class PROTOCOL is never replayed (only CODEC_ERROR, UNSUPPORTED, INFRA, EXHAUSTED): the same bytes would fail the same way\n", r.stderr)

	r = runBin(t, "msgxctl", "replay", "--class", "EXHAUSTED")
	require.Equal(t, 2, r.code, "a missing --reason is a command line that does not parse")
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

// ctlCase is one msgxctl run of TestMsgxctlContract and what it must answer.
type ctlCase struct {
	pg     string   // MSGX_PG_URL; "": the unreachable one
	env    []string // more variables
	args   []string
	code   int
	stderr []string // each in the first line of stderr (code 1 and 2)
	hint   string   // the second and last line of stderr starts with it; "": stderr is one line
	stdout string   // in stdout (code 0)
}

// msgxctl's contract (docs/runbook.md), each case exit code and hint: 2 with a hint line for a
// command line or a configuration msgxctl cannot use, whatever the database; 1 for a refusal or
// a failure, with a hint naming the fix of a missing database or schema or an unreachable
// server; --json accepted before the command; [] for an empty list in --json; the flight
// commands. Real PostgreSQL where the case needs a database.
func TestMsgxctlContract(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	noDB, err := url.Parse(testdb.AdminURL())
	require.NoError(t, err)
	noDB.Path = "/msgx_cmdtest_no_such_db"
	noSchema := testdb.WithSearchPath(testdb.AdminURL(), "msgx_cmdtest_no_schema")
	const usage, fix = "run 'msgxctl", "hint: "
	cases := []ctlCase{
		// a missing database or schema names the fix
		{pg: noDB.String(), args: []string{"status"}, code: 1, stderr: []string{`database "msgx_cmdtest_no_such_db" does not exist`},
			hint: "hint: the database of MSGX_PG_URL does not exist: run make up"},
		{pg: noDB.String(), args: []string{"flight", "100005"}, code: 1, hint: "hint: the database of MSGX_PG_URL does not exist"},
		{pg: noSchema, args: []string{"status"}, code: 1, stderr: []string{`relation "inbox_cursor" does not exist`},
			hint: "hint: msgx's schema is not there: run msgxctl migrate against MSGX_PG_URL"},
		{pg: noSchema, args: []string{"show", "38"}, code: 1, hint: "hint: msgx's schema is not there"},
		{pg: noSchema, args: []string{"dlq", "list"}, code: 1, hint: "hint: msgx's schema is not there"},
		{pg: noSchema, args: []string{"flights", "--day", "2021-01-23"}, code: 1, hint: "hint: msgx's schema is not there"},
		{args: []string{"status"}, code: 1, stderr: []string{"connection refused"}, hint: "hint: no PostgreSQL answers at MSGX_PG_URL"},
		// command lines that do not parse, and a bad configuration: 2 and a hint
		{args: []string{"status", "-json=maybe"}, code: 2, stderr: []string{`msgxctl status: invalid boolean value "maybe" for -json`}, hint: usage},
		{args: []string{"dlq", "list", "--limit", "abc"}, code: 2, stderr: []string{`invalid value "abc" for flag -limit`}, hint: usage},
		{args: []string{"show", "ABC"}, code: 2, stderr: []string{`msgxctl show: msg_id "ABC" is not a number`}, hint: usage},
		{args: []string{"flight", "ABC"}, code: 2, stderr: []string{`msgxctl flight: FLID "ABC" is not a number`}, hint: usage},
		{args: []string{"flights"}, code: 2, stderr: []string{"msgxctl flights: --day: want YYYY-MM-DD"}, hint: usage},
		{args: []string{"flights", "--day", "23.01.2021"}, code: 2, stderr: []string{"want YYYY-MM-DD"}, hint: usage},
		{args: []string{"replay", "--class", "BOGUS", "--dry-run"}, code: 2, stderr: []string{"msgxctl replay: unknown class BOGUS (one of CODEC_ERROR, UNSUPPORTED, INFRA, EXHAUSTED)"}, hint: usage},
		{args: []string{"replay", "--ids", "7"}, code: 2, stderr: []string{"msgxctl replay: --reason is required (audit; --actor defaults to "}, hint: usage},
		{args: []string{"replay", "--ids", "7,x", "--dry-run"}, code: 2, stderr: []string{`--ids: "x" is not an id`}, hint: usage},
		{args: []string{"dlq", "list", "--target", "KAFKA:nope"}, code: 2, stderr: []string{`--target must be KAFKA:msg or KAFKA:schd, got "KAFKA:nope"`}, hint: usage},
		{args: []string{"request", "schedule", "--from", "tomorrow", "--to", "2026-12-03", "--dry-run"}, code: 2, stderr: []string{`--from: want YYYY-MM-DD, got "tomorrow"`}, hint: usage},
		{args: []string{"request", "show", "ABC"}, code: 2, stderr: []string{`request ID "ABC" is not a number`}, hint: usage},
		{args: []string{"token", "new", "alice", "--scope", "view"}, code: 2, stderr: []string{`unknown scope "view"`}, hint: usage},
		{args: []string{"--json"}, code: 2, stderr: []string{"msgxctl: no command"}, hint: usage},
		{args: []string{"--limit", "3", "dlq", "list"}, code: 2, stderr: []string{"flag provided but not defined: -limit"}, hint: usage},
		{pg: "not a url", args: []string{"status"}, code: 2, stderr: []string{"msgxctl status: bad configuration: MSGX_PG_URL: must be a postgres:// URL"},
			hint: "hint: set the MSGX_ variables named above as docs/configuration.md describes"},
		{env: []string{"MSGX_MAX_ATTEMPTS=0"}, args: []string{"show", "38"}, code: 2, stderr: []string{"MSGX_MAX_ATTEMPTS"}, hint: fix},
		// a refusal and a failure: 1
		{args: []string{"replay", "--class", "protocol", "--dry-run"}, code: 1, stderr: []string{"class PROTOCOL is never replayed"}},
		{pg: db.URL, args: []string{"show", "38"}, code: 1, stderr: []string{"msgxctl: message 38 not found"}},
		{pg: db.URL, args: []string{"flight", "100005"}, code: 1, stderr: []string{"msgxctl: flight 100005 not found"}},
		// --json before the command, [] for empty lists, the flight commands
		{pg: db.URL, args: []string{"--json", "status"}, stdout: `"leaders": []`},
		{pg: db.URL, args: []string{"status", "--json"}, stdout: `"outbox": []`},
		{pg: db.URL, args: []string{"status"}, stdout: "dispatcher lag"},
		{pg: db.URL, args: []string{"--json", "replay", "--class", "INFRA", "--dry-run"}, stdout: `"items": []`},
		{pg: db.URL, args: []string{"--json", "dlq", "list"}, stdout: "[]"},
		{pg: db.URL, args: []string{"--json", "backfill", "list-abandoned"}, stdout: "[]"},
		{pg: db.URL, args: []string{"--json", "request", "list-open"}, stdout: "[]"},
		{pg: db.URL, args: []string{"flights", "--day", "2021-01-23", "--json"}, stdout: "[]"},
		{pg: db.URL, args: []string{"flights", "--day", "2021-01-23"}, stdout: "no flights on 2021-01-23"},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			t.Parallel()
			env := c.env
			if c.pg != "" {
				env = append(env, "MSGX_PG_URL="+c.pg)
			}
			r := runBinEnv(t, "msgxctl", env, c.args...)
			require.Equal(t, c.code, r.code, "stdout: %s\nstderr: %s", r.stdout, r.stderr)
			if c.code == 0 {
				require.Contains(t, r.stdout, c.stdout)
				require.Empty(t, r.stderr)
				return
			}
			lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")
			for _, s := range c.stderr {
				require.Contains(t, lines[0], s)
			}
			if c.hint == "" {
				require.Len(t, lines, 1, "one line, no hint: %q", r.stderr)
				return
			}
			require.Len(t, lines, 2, "one line and a hint: %q", r.stderr)
			require.True(t, strings.HasPrefix(lines[1], c.hint), "hint %q, got %q", c.hint, lines[1])
		})
	}
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
