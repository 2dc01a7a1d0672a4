package tlsenv

import (
	"errors"
	"fmt"
	"os"
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
	// The servers run as postgres and mysql: they must read the CA file.
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

// reapOrphans removes the CA directories of test processes that died without Shutdown (their
// servers are pkg/dev/privdb's, which reaps them).
func reapOrphans() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), dirPrefix+"*"))
	for _, d := range dirs {
		rest := strings.TrimPrefix(filepath.Base(d), dirPrefix)
		pid, err := strconv.Atoi(strings.SplitN(rest, "-", 2)[0])
		if err != nil || pid == os.Getpid() || syscall.Kill(pid, 0) == nil {
			continue
		}
		_ = os.RemoveAll(d)
	}
}
