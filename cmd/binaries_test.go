// Package cmd_test runs the real binaries as processes: configuration refusals, probes, leader
// and standby, graceful shutdown.
package cmd_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/buildinfo"
	"github.com/msgx/msgx/pkg/dev/kafkatest"
	"github.com/msgx/msgx/pkg/dev/mailboxtest"
	"github.com/msgx/msgx/pkg/dev/testdb"
)

var (
	binDir string
	// binaries are the four service binaries.
	binaries = []string{"ingest", "processor", "dispatcher", "jobs"}
	// others are every other binary of cmd/.
	others = []string{"console", "msgxctl", "devbroker", "devstack", "demo", "simulate", "chaos"}
)

// The version the test binaries are linked with (-ldflags -X, pkg/buildinfo).
const (
	testVersion  = "v0.0.0-cmdtest"
	testRevision = "cmdtest0rev"
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "msgx-bin-")
	if err != nil {
		panic(err)
	}
	binDir = dir
	args := append([]string{"build", "-ldflags", buildinfo.LDFlags(testVersion, testRevision), "-o", dir + "/"}, func() []string {
		var pkgs []string
		for _, b := range append(append([]string{}, binaries...), others...) {
			pkgs = append(pkgs, "./"+b)
		}
		return pkgs
	}()...)
	build := exec.Command("go", args...)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build binaries:", err)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

func TestBadConfigurationExitsWithOneLine(t *testing.T) {
	t.Parallel()
	cases := []struct {
		bin  string
		env  []string
		want string
	}{
		{"processor", []string{"MSGX_MAX_ATTEMPTS=0"}, "processor: bad configuration: MSGX_MAX_ATTEMPTS: must be between 1 and 100, got 0"},
		{"ingest", []string{"MSGX_POLL_INTERVAL=soon"}, `ingest: bad configuration: MSGX_POLL_INTERVAL: cannot parse "soon" as Duration`},
		{"ingest", []string{"MSGX_ENV=production", "MSGX_SHADOW=true", "MSGX_PG_URL=postgres://u@db/msgx?sslmode=verify-full",
			"MSGX_MYSQL_DSN=u@tcp(aodb:3306)/m?tls=true", "MSGX_API_TOKENS=aodb:send:" + strings.Repeat("ab", 32)}, "ingest: bad configuration: MSGX_COMPAT_ENTRY: must be false in production shadow mode"},
		{"dispatcher", []string{"MSGX_ENV=production", "MSGX_PG_URL=postgres://u@db/msgx?sslmode=verify-full"},
			"dispatcher: bad configuration: MSGX_KAFKA_TLS: production requires TLS to the Kafka brokers"},
		{"processor", []string{"MSGX_ENV=production", "MSGX_MYSQL_DSN=u@tcp(aodb:3306)/m?tls=true", "MSGX_KAFKA_TLS=true"},
			"processor: bad configuration: MSGX_PG_URL: production requires sslmode=verify-full"},
		{"dispatcher", []string{"MSGX_KAFKA_INPROCESS=true"}, "dispatcher: bad configuration: MSGX_KAFKA_INPROCESS: removed; the development broker runs as its own process"},
		{"jobs", []string{"MSGX_KAFKA_ACKS=1"}, "jobs: bad configuration: MSGX_KAFKA_ACKS: producer rule D3b"},
	}
	for _, c := range cases {
		t.Run(c.bin, func(t *testing.T) {
			t.Parallel()
			// A binary that accepted the configuration would run on: the context ends it.
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, filepath.Join(binDir, c.bin))
			cmd.Env = append(cleanEnv(), c.env...)
			out, err := cmd.CombinedOutput()
			require.NoError(t, ctx.Err(), "%s accepted the configuration and ran: %s", c.bin, out)
			var exit *exec.ExitError
			require.ErrorAs(t, err, &exit)
			require.Equal(t, 2, exit.ExitCode())
			line := strings.TrimSuffix(string(out), "\n")
			require.NotContains(t, line, "\n", "exactly one line")
			require.True(t, strings.HasPrefix(line, c.want), "got %q", line)
		})
	}
}

// instance is one running binary.
type instance struct {
	cmd  *exec.Cmd
	addr chan string
	done chan error
}

func start(t *testing.T, bin string, env ...string) *instance {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, bin))
	cmd.Env = append(cleanEnv(), append([]string{"MSGX_HTTP_ADDR=127.0.0.1:0", "MSGX_API_ADDR=127.0.0.1:0", "MSGX_SHUTDOWN_DRAIN=0s", "MSGX_LEADER_RETRY=200ms", "MSGX_LEADER_SESSION_TIMEOUT=2s"}, env...)...)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	in := &instance{cmd: cmd, addr: make(chan string, 1), done: make(chan error, 1)}
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			var line struct {
				Message string `json:"message"`
				Addr    string `json:"addr"`
			}
			if json.Unmarshal(sc.Bytes(), &line) == nil && strings.HasPrefix(line.Message, "http: serving") {
				in.addr <- line.Addr
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
		in.done <- cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
	})
	return in
}

func (in *instance) url(t *testing.T) string {
	t.Helper()
	select {
	case a := <-in.addr:
		in.addr <- a
		return "http://" + a
	case err := <-in.done:
		t.Fatalf("binary exited before serving: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("binary did not start serving")
	}
	return ""
}

type readiness struct {
	Ready  bool              `json:"ready"`
	Role   string            `json:"role"`
	Epoch  int64             `json:"epoch"`
	Checks map[string]string `json:"checks"`
}

func readyz(t *testing.T, base string) readiness {
	t.Helper()
	resp, err := http.Get(base + "/readyz")
	require.NoError(t, err)
	defer resp.Body.Close()
	var r readiness
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&r))
	return r
}

// waitRole polls /readyz until it reports role (waiting on the other process, bounded).
func waitRole(t *testing.T, base, role string) readiness {
	t.Helper()
	return waitReadyz(t, base, "role "+role, func(r readiness) bool { return r.Role == role })
}

// waitReadyz polls /readyz until its answer is what want accepts (bounded).
func waitReadyz(t *testing.T, base, what string, want func(readiness) bool) readiness {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		r := readyz(t, base)
		if want(r) {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never reported %s (last %+v)", base, what, r)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestBinariesServeProbesLeadAndShutDown(t *testing.T) {
	t.Parallel()
	pg := testdb.New(t)
	mb := mailboxtest.New(t)
	kafka, _ := kafkatest.Broker(t)
	for _, bin := range binaries {
		t.Run(bin, func(t *testing.T) {
			env := []string{"MSGX_PG_URL=" + pg.URL, "MSGX_MYSQL_DSN=" + mb.DSN, "MSGX_KAFKA_BROKERS=" + strings.Join(kafka.Addrs(), ",")}
			first := start(t, bin, env...)
			base := first.url(t)

			resp, err := http.Get(base + "/healthz")
			require.NoError(t, err)
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			require.Equal(t, http.StatusOK, resp.StatusCode)
			require.Equal(t, "ok\n", string(body))

			// A leader is ready once its term started (the dispatcher's: dialled, topics checked,
			// their tail read).
			r := waitReadyz(t, base, "a ready leader", func(r readiness) bool { return r.Role == "leader" && r.Ready })
			require.Equal(t, "ok", r.Checks["postgres"])

			second := start(t, bin, env...)
			r2 := readyz(t, second.url(t))
			require.Equal(t, "standby", r2.Role, "a second instance of %s waits", bin)
			require.True(t, r2.Ready, "a standby is ready (it serves probes and reads)")

			resp, err = http.Get(base + "/metrics")
			require.NoError(t, err)
			metrics, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			require.Contains(t, string(metrics), fmt.Sprintf(`msgx_leader{role="%s"} 1`, bin))

			// SIGTERM: the leader exits 0 and releases the lock; the standby takes over.
			require.NoError(t, first.cmd.Process.Signal(syscall.SIGTERM))
			select {
			case err := <-first.done:
				require.NoError(t, err, "graceful exit")
			case <-time.After(30 * time.Second):
				t.Fatal("no exit after SIGTERM")
			}
			r2 = waitRole(t, second.url(t), "leader")
			require.Greater(t, r2.Epoch, r.Epoch)
			require.NoError(t, second.cmd.Process.Signal(syscall.SIGTERM))
			select {
			case err := <-second.done:
				require.NoError(t, err)
			case <-time.After(30 * time.Second):
				t.Fatal("no exit after SIGTERM")
			}
		})
	}
}

func TestReadinessReportsAnUnreachableMailbox(t *testing.T) {
	t.Parallel()
	pg := testdb.New(t)
	in := start(t, "processor", "MSGX_PG_URL="+pg.URL, "MSGX_MYSQL_DSN=root@tcp(127.0.0.1:1)/none?timeout=1s")
	base := in.url(t)
	resp, err := http.Get(base + "/readyz")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	var r readiness
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&r))
	require.False(t, r.Ready)
	require.Equal(t, "ok", r.Checks["postgres"])
	require.Contains(t, r.Checks["mailbox"], "mailbox:")
}

// cleanEnv is the environment without any MSGX_ variable of the developer's shell.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "MSGX_") {
			env = append(env, kv)
		}
	}
	return env
}
