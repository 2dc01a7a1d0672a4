// Package privdb starts private PostgreSQL clusters and MariaDB instances on free ports of
// 127.0.0.1, each in its own temporary directory, so that a test or the chaos suite can restart,
// stop or kill them without disturbing the shared development servers. They are plaintext with a
// password-less administrator by default; Options make them TLS-only with a password (pkg/dev/tlsenv).
// They run as their system users (postgres, mysql): the caller must be root. Data is thrown away
// on Close; directories of processes that died without Close are reaped by the next Start.
package privdb

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
)

// Options change how a server is made; the zero value is plaintext TCP with a password-less
// administrator (PostgreSQL trust, MariaDB root@127.0.0.1).
type Options struct {
	// TLS, when set, makes the server accept TCP connections over TLS only, with this
	// certificate (PostgreSQL hostssl only; MariaDB require_secure_transport).
	TLS *TLS
	// Password, when set, is the administrator's: PostgreSQL's postgres logs in with SCRAM-SHA-256
	// over TCP; MariaDB gets the TCP administrator AdminUser with it (REQUIRE SSL with TLS).
	Password string
	// Fast trades durability for speed, for servers no test kills: PostgreSQL
	// synchronous_commit=off, MariaDB innodb_flush_log_at_trx_commit=0 (a killed server may
	// lose the last commits).
	Fast bool
}

// TLS are a server's PEM files: its certificate and key, and the CA clients verify it with.
type TLS struct {
	CAFile, CertFile, KeyFile string
	// MySQLConfig is the go-sql-driver TLS configuration (tls=<name>) the caller registered to
	// trust CAFile (mysql.RegisterTLSConfig): MariaDB.ServerDSN names it.
	MySQLConfig string
}

// install copies the server's certificate and key into dir (the server's system user owns dir).
func (t *TLS) install(dir string) (cert, key string, err error) {
	cert, key = filepath.Join(dir, "server.pem"), filepath.Join(dir, "server.key")
	if err := copyFile(t.CertFile, cert, 0o644); err != nil {
		return "", "", err
	}
	return cert, key, copyFile(t.KeyFile, key, 0o600)
}

func copyFile(src, dst string, mode os.FileMode) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, mode)
}

// dirPrefix names this package's directories in os.TempDir(): msgx-privdb-<pid>-<random>.
const dirPrefix = "msgx-privdb-"

// newDir makes a directory for one server, traversable by the server's system user, after
// reaping the servers and directories of dead processes.
func newDir(kind string) (string, error) {
	if os.Geteuid() != 0 {
		return "", errors.New("privdb starts PostgreSQL and MariaDB as their system users: run as root")
	}
	reapOrphans()
	dir, err := os.MkdirTemp("", fmt.Sprintf("%s%d-%s-", dirPrefix, os.Getpid(), kind))
	if err != nil {
		return "", err
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		return "", err
	}
	return dir, nil
}

// reapOrphans stops the servers left by processes that died without Close and removes their
// directories.
func reapOrphans() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), dirPrefix+"*"))
	for _, d := range dirs {
		rest := strings.TrimPrefix(filepath.Base(d), dirPrefix)
		pid, err := strconv.Atoi(strings.SplitN(rest, "-", 2)[0])
		if err != nil || pid == os.Getpid() || alive(pid) {
			continue
		}
		if _, err := os.Stat(filepath.Join(d, "data", "postmaster.pid")); err == nil {
			_ = pgCtl(filepath.Join(d, "data"), "-m", "immediate", "-w", "stop")
		}
		if b, err := os.ReadFile(filepath.Join(d, "mariadbd.pid")); err == nil {
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

func chown(path, user string) error {
	out, err := exec.Command("chown", "-R", user+":", path).CombinedOutput()
	if err != nil {
		return fmt.Errorf("chown %s %s: %w: %s", user, path, err, out)
	}
	return nil
}

func runAs(user string, args ...string) error {
	cmd := exec.Command("runuser", append([]string{"-u", user, "--"}, args...)...)
	cmd.Dir = "/"
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s: %w: %s", filepath.Base(args[0]), err, out)
	}
	return nil
}

func pgBin(name string) (string, error) {
	m, _ := filepath.Glob("/usr/lib/postgresql/*/bin/" + name)
	if len(m) == 0 {
		return "", fmt.Errorf("%s not found under /usr/lib/postgresql/*/bin", name)
	}
	sort.Strings(m)
	return m[len(m)-1], nil
}

func pgCtl(data string, args ...string) error {
	bin, err := pgBin("pg_ctl")
	if err != nil {
		return err
	}
	return runAs("postgres", append([]string{bin, "-D", data}, args...)...)
}
