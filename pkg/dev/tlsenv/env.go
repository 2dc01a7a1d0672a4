package tlsenv

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// process-wide state: one root directory, one CA, at most one server of each kind.
var (
	mu       sync.Mutex
	root     string
	ca       *CA
	stoppers []func() error // run by Shutdown, newest first
)

// dirPrefix names this package's directories in os.TempDir(): msgx-tlsenv-<pid>-<random>.
const dirPrefix = "msgx-tlsenv-"

// Run runs the tests and then Shutdown; use it as os.Exit(tlsenv.Run(m)) in TestMain.
func Run(m *testing.M) int {
	code := m.Run()
	if err := Shutdown(); err != nil {
		fmt.Fprintln(os.Stderr, "tlsenv:", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// Shutdown stops every server this process started and removes their directories.
func Shutdown() error {
	mu.Lock()
	defer mu.Unlock()
	var errs []error
	for i := len(stoppers) - 1; i >= 0; i-- {
		errs = append(errs, stoppers[i]())
	}
	stoppers = nil
	if root != "" {
		errs = append(errs, os.RemoveAll(root))
		root, ca = "", nil
	}
	pgOnce, myOnce = sync.Once{}, sync.Once{}
	pgInst, myInst, pgErr, myErr = nil, nil, nil, nil
	return errors.Join(errs...)
}

// setup makes the process's root directory and CA (callers hold mu).
func setup() (string, *CA, error) {
	if root != "" {
		return root, ca, nil
	}
	reapOrphans()
	dir, err := os.MkdirTemp("", fmt.Sprintf("%s%d-", dirPrefix, os.Getpid()))
	if err != nil {
		return "", nil, err
	}
	// The servers run as postgres and mysql: they must traverse it.
	if err := os.Chmod(dir, 0o755); err != nil {
		return "", nil, err
	}
	c, err := NewCA(dir)
	if err != nil {
		_ = os.RemoveAll(dir)
		return "", nil, err
	}
	root, ca = dir, c
	return root, ca, nil
}

// onShutdown registers a stop function (callers hold mu).
func onShutdown(stop func() error) { stoppers = append(stoppers, stop) }

// reapOrphans stops the servers of test processes that died without Shutdown and removes their
// directories.
func reapOrphans() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), dirPrefix+"*"))
	for _, d := range dirs {
		rest := strings.TrimPrefix(filepath.Base(d), dirPrefix)
		pid, err := strconv.Atoi(strings.SplitN(rest, "-", 2)[0])
		if err != nil || pid == os.Getpid() || alive(pid) {
			continue
		}
		if _, err := os.Stat(filepath.Join(d, "pg", "data", "postmaster.pid")); err == nil {
			_ = stopPostgres(filepath.Join(d, "pg", "data"))
		}
		if b, err := os.ReadFile(filepath.Join(d, "mariadb", "mariadbd.pid")); err == nil {
			if p, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				_ = syscall.Kill(p, syscall.SIGKILL)
			}
		}
		_ = os.RemoveAll(d)
	}
}

func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// chown gives path (recursively) to the system user name.
func chown(path, user string) error {
	out, err := exec.Command("chown", "-R", user+":", path).CombinedOutput()
	if err != nil {
		return fmt.Errorf("chown %s %s: %w: %s", user, path, err, out)
	}
	return nil
}

// copyFile copies src to dst with mode.
func copyFile(src, dst string, mode os.FileMode) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, mode)
}

// requireRoot skips nothing: the servers need root to switch users, so a non-root run fails
// with one clear line.
func requireRoot() error {
	if os.Geteuid() != 0 {
		return errors.New("tlsenv starts PostgreSQL and MariaDB as their system users: run the tests as root")
	}
	return nil
}
