package rehearse_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// proc is one container replica run as a local process.
type proc struct {
	name string // e.g. msgx-ingest-0
	cmd  *exec.Cmd
	log  string // its stdout and stderr
	env  []string
	done chan struct{}
	err  error
}

// start runs argv with exactly env (nothing inherited), its output in logDir/name.log.
func start(t *testing.T, logDir, name string, argv, env []string) *proc {
	t.Helper()
	p, err := launch(logDir, name, argv, env)
	require.NoError(t, err)
	t.Cleanup(func() { p.stop(20 * time.Second) })
	return p
}

// launch is start without a test: safe in any goroutine; the caller stops the process.
func launch(logDir, name string, argv, env []string) (*proc, error) {
	logPath := filepath.Join(logDir, name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env, cmd.Stdout, cmd.Stderr = env, f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, log: logPath, env: env, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		_ = f.Close()
		close(p.done)
	}()
	return p, nil
}

// exited reports whether the process has ended.
func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM and kills after grace (the kubelet's shutdown after the preStop hook).
func (p *proc) stop(grace time.Duration) {
	if p.exited() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

// tail is the end of the process's log.
func (p *proc) tail(lines int) string {
	b, _ := os.ReadFile(p.log)
	all := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(all[max(0, len(all)-lines):], "\n")
}

// getenv is the value of one of the process's variables.
func (p *proc) getenv(name string) string {
	for _, kv := range p.env {
		if k, v, _ := strings.Cut(kv, "="); k == name {
			return v
		}
	}
	return ""
}

// run runs argv to its end with exactly env and returns its output; a non-zero exit fails the
// test with the output (the binary's own message).
func run(t *testing.T, what string, argv, env []string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s (%s) failed:\n%s", what, strings.Join(argv, " "), out)
	return string(out)
}

// waitReady waits until the process's /readyz (its MSGX_HTTP_ADDR) answers 200; a process that
// exits meanwhile fails the test with its own last lines.
func waitReady(t *testing.T, p *proc, timeout time.Duration) {
	t.Helper()
	require.NoError(t, ready(p, timeout))
}

// ready is waitReady's wait, safe in any goroutine: nil once /readyz answers 200, else why not.
func ready(p *proc, timeout time.Duration) error {
	url := "http://" + p.getenv("MSGX_HTTP_ADDR") + "/readyz"
	deadline := time.Now().Add(timeout)
	var last string
	for {
		if p.exited() {
			return fmt.Errorf("%s exited (%v) with the environment its manifest gives it:\n%s", p.name, p.err, p.tail(20))
		}
		resp, err := http.Get(url)
		if err == nil {
			b := make([]byte, 2048)
			n, _ := resp.Body.Read(b)
			resp.Body.Close()
			last = fmt.Sprintf("%d %s", resp.StatusCode, b[:n])
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		} else {
			last = err.Error()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready within %s (last /readyz: %s):\n%s", p.name, timeout, last, p.tail(20))
		}
		select {
		case <-p.done:
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// freeAddr is a loopback address free now, for a process to listen on. Its port is below the
// kernel's ephemeral range (32768 and up on Linux): a port ":0" gives comes from that range,
// where any outgoing connection (to PostgreSQL, Kafka, MariaDB) may take it between this check
// and the process's own listen ("address already in use", seen once in make test).
func freeAddr(t *testing.T) string {
	t.Helper()
	for range 100 {
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", 20000+rand.IntN(12000)))
		if err != nil {
			continue // taken
		}
		defer l.Close()
		return l.Addr().String()
	}
	t.Fatal("no free port in 20000-31999 after 100 tries")
	return ""
}
