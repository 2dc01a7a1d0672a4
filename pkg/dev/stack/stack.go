// Package stack runs msgx locally the way production runs it: the four binaries as separate
// processes against PostgreSQL, the MySQL mailbox and a Kafka broker (the development broker,
// cmd/devbroker, as its own process), coordinating only through PostgreSQL. The demo (cmd/demo), the local stack (cmd/devstack),
// the end-to-end tests and the end-to-end benchmark use it. It is development tooling: it
// creates databases and the mailbox tables, which production never does.
package stack

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/msgx/msgx/pkg/buildinfo"
	"github.com/msgx/msgx/pkg/dev/broker"
	"github.com/msgx/msgx/pkg/dev/mailboxdb"
	"github.com/msgx/msgx/pkg/httpauth"
	"github.com/msgx/msgx/pkg/kafka"
	"github.com/msgx/msgx/pkg/migrate"
)

// Binaries are the four stages, in start order.
var Binaries = []string{"ingest", "processor", "dispatcher", "jobs"}

// Broker is the development Kafka broker's command; the stack runs it as its own process.
const Broker = "devbroker"

// Console is the operator web console's command: the local stack runs it beside the four
// binaries (it elects no leader and serves pages on its own address).
const Console = "console"

// Tools are the other commands a stack user may run.
var Tools = []string{"msgxctl", "simulate"}

// Root finds the repository root (the directory of msgx's go.mod) from the working directory.
func Root() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.Contains(string(b), "module github.com/msgx/msgx\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("stack: not inside the msgx repository")
		}
		dir = parent
	}
}

// Build compiles the binaries, the broker and the tools into binDir, each stamped with the
// checkout's version the way `make build` stamps it (pkg/buildinfo), so --version, the start-up
// log and msgx_build_info name the commit. Every Build of one checkout links into one shared
// directory (sharedBinDir) and binDir gets hard links to the results: go build leaves a target
// whose build ID already matches untouched, so the test packages that each build a stack link
// the binaries once per change of the tree rather than once each.
func Build(ctx context.Context, binDir string) error {
	root, err := Root()
	if err != nil {
		return err
	}
	names := append(append(slices.Clone(Binaries), Broker, Console), Tools...)
	shared, unlock, err := sharedBinDir(root)
	if err != nil {
		return err
	}
	defer unlock()
	if err := build(ctx, root, shared, names); err != nil {
		return err
	}
	if err := os.MkdirAll(binDir, 0o755); err != nil {
		return fmt.Errorf("build binaries: %w", err)
	}
	for _, n := range names {
		if err := linkOrCopy(filepath.Join(shared, n), filepath.Join(binDir, n)); err != nil {
			return fmt.Errorf("build binaries: %w", err)
		}
	}
	return nil
}

// sharedBinDir is the directory every Build of the checkout at root links into (in the user's
// cache, one per checkout path), locked until unlock is called.
func sharedBinDir(root string) (dir string, unlock func(), err error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", nil, fmt.Errorf("build binaries: %w", err)
	}
	sum := sha256.Sum256([]byte(root))
	dir = filepath.Join(cache, "msgx", "bin", hex.EncodeToString(sum[:8]))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", nil, fmt.Errorf("build binaries: %w", err)
	}
	lock, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", nil, fmt.Errorf("build binaries: %w", err)
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		lock.Close()
		return "", nil, fmt.Errorf("build binaries: lock %s: %w", dir, err)
	}
	return dir, func() { lock.Close() }, nil
}

// linkOrCopy makes dst the file src is: a hard link, or a copy where src is on another file
// system. A later build that replaces src leaves dst as it was.
func linkOrCopy(src, dst string) error {
	_ = os.Remove(dst)
	if err := os.Link(src, dst); err == nil {
		return nil
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// build runs go build in root for the commands names (cmd/<name>) into binDir, with the version
// ldflags when root is a git checkout.
func build(ctx context.Context, root, binDir string, names []string) error {
	args := []string{"build", "-o", binDir + string(os.PathSeparator)}
	if version, revision, ok := gitVersion(ctx, root); ok {
		args = append(args, "-ldflags", buildinfo.LDFlags(version, revision))
	}
	var pkgs []string
	for _, n := range names {
		pkgs = append(pkgs, "./cmd/"+n)
	}
	cmd := exec.CommandContext(ctx, "go", append(args, pkgs...)...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("build binaries: %v\n%s", err, out)
	}
	return nil
}

// gitVersion is the Makefile's VERSION and REVISION for the checkout at dir (git describe
// --tags --always --dirty, git rev-parse HEAD); ok is false when git cannot tell.
func gitVersion(ctx context.Context, dir string) (version, revision string, ok bool) {
	git := func(args ...string) string {
		cmd := exec.CommandContext(ctx, "git", args...)
		cmd.Dir = dir
		out, err := cmd.Output()
		if err != nil {
			return ""
		}
		return strings.TrimSpace(string(out))
	}
	version, revision = git("describe", "--tags", "--always", "--dirty"), git("rev-parse", "HEAD")
	return version, revision, version != "" && revision != ""
}

// Databases names where the stack keeps its state.
type Databases struct {
	// PGServer is the administrator's URL without a database, e.g. postgres://postgres@127.0.0.1:5432;
	// its parameters (sslmode=verify-full&sslrootcert=… for a TLS server) are kept in every URL
	// made from it, sslmode=disable when it has none.
	PGServer    string
	PGDatabase  string
	MySQLServer string // e.g. root@tcp(127.0.0.1:3306)/
	MySQLDB     string
	Fresh       bool // drop and recreate both
}

// Prepare creates (or recreates) the PostgreSQL database with every migration applied and the
// mailbox database with its tables, and returns their URL and DSN.
func Prepare(ctx context.Context, d Databases) (pgURL, mysqlDSN string, err error) {
	adminURL, err := d.pgURL("postgres")
	if err != nil {
		return "", "", err
	}
	admin, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return "", "", fmt.Errorf("connect PostgreSQL: %w", err)
	}
	defer admin.Close(ctx)
	ident := pgx.Identifier{d.PGDatabase}.Sanitize()
	if d.Fresh {
		if _, err := admin.Exec(ctx, "DROP DATABASE IF EXISTS "+ident+" WITH (FORCE)"); err != nil {
			return "", "", fmt.Errorf("drop database: %w", err)
		}
	}
	var exists bool
	if err := admin.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, d.PGDatabase).Scan(&exists); err != nil {
		return "", "", err
	}
	if !exists {
		if _, err := admin.Exec(ctx, "CREATE DATABASE "+ident); err != nil {
			return "", "", fmt.Errorf("create database: %w", err)
		}
	}
	if pgURL, err = d.pgURL(d.PGDatabase); err != nil {
		return "", "", err
	}
	conn, err := pgx.Connect(ctx, pgURL)
	if err != nil {
		return "", "", err
	}
	defer conn.Close(ctx)
	if _, err := migrate.Up(ctx, conn); err != nil {
		return "", "", err
	}
	if d.Fresh {
		if err := mailboxdb.DropDatabase(ctx, d.MySQLServer, d.MySQLDB); err != nil {
			return "", "", err
		}
	}
	mysqlDSN, err = mailboxdb.CreateDatabase(ctx, d.MySQLServer, d.MySQLDB)
	if err != nil {
		return "", "", err
	}
	return pgURL, mysqlDSN, nil
}

// pgURL is the administrator's URL on database db of PGServer: its parameters, or sslmode=disable.
func (d Databases) pgURL(db string) (string, error) {
	u, err := url.Parse(d.PGServer)
	if err != nil {
		return "", fmt.Errorf("parse the PostgreSQL server URL: %w", err)
	}
	u.Path, u.RawPath = "/"+db, ""
	if q := u.Query(); q.Get("sslmode") == "" {
		q.Set("sslmode", "disable")
		u.RawQuery = q.Encode()
	}
	return u.String(), nil
}

// Options configure a running stack.
type Options struct {
	BinDir string
	LogDir string   // each binary logs to LogDir/<name>.log
	PGURL  string   // MSGX_PG_URL of every binary (empty: RoleEnv gives each its own)
	MySQL  string   // MSGX_MYSQL_DSN (empty: RoleEnv gives each its own)
	Env    []string // extra MSGX_ settings for every binary
	// KafkaPort fixes the broker's port on 127.0.0.1 (0: any free port).
	KafkaPort int
	// KafkaDataDir keeps the broker's data across its restarts (empty: memory only).
	KafkaDataDir string
	// ExternalBrokers, when set, are the bootstrap addresses of a Kafka cluster the caller runs
	// (its topics created beforehand): the stack starts no broker of its own.
	ExternalBrokers []string
	// RandomPorts lets each binary pick a free HTTP port (tests); otherwise each serves on its
	// role's default address (127.0.0.1:8081 … 8084).
	RandomPorts bool
	// Supervise, when set, restarts a binary that exits without being stopped (see Supervision).
	Supervise *Supervision
	// RoleEnv are extra settings of one binary (by name), after Env: its own database role's
	// MSGX_PG_URL and MSGX_MYSQL_DSN, the way production runs each binary.
	RoleEnv map[string][]string
	// KafkaAuth, when set, makes the broker speak only TLS and require SASL/SCRAM-SHA-512, and
	// gives every binary (and Stack.Kafka) the matching settings.
	KafkaAuth *KafkaAuth
	// Only, when set, are the binaries Start starts (default: all of Binaries); the others may
	// be started with StartInstance.
	Only []string
}

// KafkaAuth is the broker's TLS certificate and its one SCRAM-SHA-512 user.
type KafkaAuth struct {
	CertFile, KeyFile string // the broker's server certificate and key (PEM)
	CAFile            string // the CA clients verify the broker with
	User, Password    string
}

// Supervision restarts the binaries the way Kubernetes restarts a container: a binary that exits
// without StopProc or Close is reported to OnExit (exit code or signal, its last log lines) and
// started again after Delay; every further exit within a minute of its start doubles the delay,
// up to 16×Delay (a crash loop backs off). The broker is not supervised.
type Supervision struct {
	Delay  time.Duration // default 1s
	OnExit func(Exit)
	// OnRestart, when set, is told when a restarted binary serves again.
	OnRestart func(key string, p *Proc)
}

// Exit is one unexpected exit of a binary.
type Exit struct {
	Key       string // the binary's key: its name, or name-N for instance N > 1
	Pid       int
	Code      int    // exit code (-1 when ended by a signal)
	Signal    string // the signal that ended it, if any
	LastLines []string
	RestartIn time.Duration
	At        time.Time
}

func (e Exit) String() string {
	how := fmt.Sprintf("exit code %d", e.Code)
	if e.Signal != "" {
		how = "killed by " + e.Signal
	}
	return fmt.Sprintf("%s (pid %d) exited: %s; restart in %s; last log lines:\n  %s", e.Key, e.Pid, how, e.RestartIn, strings.Join(e.LastLines, "\n  "))
}

// lastLines is how many log lines an Exit carries.
const lastLines = 8

// Stack is a running local msgx.
type Stack struct {
	opts    Options
	broker  *Proc
	Brokers []string
	Kafka   kafka.Config
	// APIToken is a bearer token with scopes send and read for ingest's API, made at Start (its
	// hash is in every binary's MSGX_API_TOKENS as client "stack").
	APIToken string
	apiEntry httpauth.Client

	mu      sync.Mutex
	procs   map[string]*Proc
	closing bool
	ctx     context.Context // ends at Close: restarts stop
	cancel  context.CancelFunc
	wg      sync.WaitGroup // supervisors' restarts
}

// Start starts the broker (it creates the two topics; none with Options.ExternalBrokers) and
// the four binaries, and waits until each serves.
func Start(ctx context.Context, opts Options) (*Stack, error) {
	if err := os.MkdirAll(opts.LogDir, 0o755); err != nil {
		return nil, err
	}
	s := &Stack{opts: opts, procs: map[string]*Proc{}}
	var err error
	if s.APIToken, s.apiEntry, err = httpauth.NewToken("stack", httpauth.ScopeSend, httpauth.ScopeRead); err != nil {
		return nil, err
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	if len(opts.ExternalBrokers) > 0 {
		s.Brokers = opts.ExternalBrokers
	} else if err := s.StartBroker(ctx); err != nil {
		return nil, err
	}
	s.Kafka = broker.ClientConfig(s.Brokers)
	s.Kafka.ClientID = "msgx-stack"
	if a := opts.KafkaAuth; a != nil {
		s.Kafka.TLS, s.Kafka.TLSCAFile = true, a.CAFile
		s.Kafka.SASLMechanism, s.Kafka.SASLUser, s.Kafka.SASLPassword = broker.SCRAMMechanism, a.User, a.Password
	}
	start := Binaries
	if opts.Only != nil {
		start = opts.Only
	}
	for _, b := range start {
		if _, err := s.StartProc(ctx, b); err != nil {
			s.Close()
			return nil, err
		}
	}
	return s, nil
}

// StartBroker starts the development broker process (cmd/devbroker) and waits until it serves.
// After a restart it listens on the same address, so the binaries reconnect to it; with
// Options.KafkaDataDir it keeps its topics and records.
func (s *Stack) StartBroker(ctx context.Context) error {
	listen := fmt.Sprintf("127.0.0.1:%d", s.opts.KafkaPort)
	if len(s.Brokers) > 0 {
		listen = s.Brokers[0]
	}
	args := []string{"-listen", listen}
	if s.opts.KafkaDataDir != "" {
		args = append(args, "-data-dir", s.opts.KafkaDataDir)
	}
	if a := s.opts.KafkaAuth; a != nil {
		pw := filepath.Join(s.opts.LogDir, Broker+".sasl-password")
		if err := os.WriteFile(pw, []byte(a.Password), 0o600); err != nil {
			return err
		}
		args = append(args, "-tls-cert", a.CertFile, "-tls-key", a.KeyFile, "-sasl-user", a.User, "-sasl-password-file", pw)
	}
	p, err := s.spawn(ctx, Broker, Broker, args, nil, "kafka: serving")
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.broker = p
	s.Brokers = p.Brokers
	s.mu.Unlock()
	return nil
}

// StopBroker stops the broker process with SIGTERM and waits for it.
func (s *Stack) StopBroker() error {
	s.mu.Lock()
	p := s.broker
	s.broker = nil
	s.mu.Unlock()
	if p == nil {
		return nil
	}
	return p.stop()
}

// Broker returns the running broker process (nil while stopped).
func (s *Stack) BrokerProc() *Proc {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.broker
}

// Env is the environment every binary of this stack gets.
func (s *Stack) Env() []string {
	env := []string{
		"MSGX_KAFKA_BROKERS=" + strings.Join(s.Brokers, ","),
		"MSGX_API_TOKENS=" + s.apiEntry.String(),
		// No Service routes to a local stack: nothing to drain on SIGTERM.
		"MSGX_SHUTDOWN_DRAIN=0s",
	}
	// Empty: each binary gets its own in RoleEnv (no shared administrator credentials).
	if s.opts.PGURL != "" {
		env = append(env, "MSGX_PG_URL="+s.opts.PGURL)
	}
	if s.opts.MySQL != "" {
		env = append(env, "MSGX_MYSQL_DSN="+s.opts.MySQL)
	}
	if s.opts.RandomPorts {
		env = append(env, "MSGX_HTTP_ADDR=127.0.0.1:0", "MSGX_API_ADDR=127.0.0.1:0", "MSGX_CONSOLE_ADDR=127.0.0.1:0")
	}
	if a := s.opts.KafkaAuth; a != nil {
		env = append(env, "MSGX_KAFKA_TLS=true", "MSGX_KAFKA_TLS_CA_FILE="+a.CAFile,
			"MSGX_KAFKA_SASL_MECHANISM="+broker.SCRAMMechanism, "MSGX_KAFKA_SASL_USER="+a.User, "MSGX_KAFKA_SASL_PASSWORD="+a.Password)
	}
	return append(env, s.opts.Env...)
}

// Proc is one running binary.
type Proc struct {
	Name    string   // the command
	Key     string   // Name, or Name-N for instance N > 1
	Addr    string   // host:port of its ops HTTP server (the four binaries)
	APIAddr string   // host:port of its API server (ingest)
	Brokers []string // the brokers' addresses (the broker)
	Started time.Time
	env     []string // its own settings beyond the stack's (StartInstanceWith)
	cmd     *exec.Cmd
	done    chan struct{}
	err     error

	stopping     atomic.Bool  // stopped on purpose: not an unexpected exit
	restartDelay atomic.Int64 // the supervisor's next delay when it started this one (crash loop backoff)
	mu           sync.Mutex
	tail         []string // its last log lines
}

// Done is closed when the process has exited.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Wait waits for the process to exit and returns its error.
func (p *Proc) Wait() error { <-p.done; return p.err }

// Pid is the process id.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Signal sends sig to the process.
func (p *Proc) Signal(sig os.Signal) error { return p.cmd.Process.Signal(sig) }

// StartProc starts one binary and waits until it serves HTTP.
func (s *Stack) StartProc(ctx context.Context, name string) (*Proc, error) {
	return s.StartInstance(ctx, name, 1)
}

// InstanceKey is the key (and log name) of instance n of a binary: the name for n = 1, name-n
// after.
func InstanceKey(name string, n int) string {
	if n <= 1 {
		return name
	}
	return fmt.Sprintf("%s-%d", name, n)
}

// StartInstance starts instance n of a binary (a standby beside instance 1: use RandomPorts)
// and waits until it serves HTTP.
func (s *Stack) StartInstance(ctx context.Context, name string, n int) (*Proc, error) {
	return s.StartInstanceWith(ctx, name, n, nil)
}

// StartInstanceWith is StartInstance with settings of this instance only (after the stack's;
// a supervised restart keeps them).
func (s *Stack) StartInstanceWith(ctx context.Context, name string, n int, env []string) (*Proc, error) {
	key := InstanceKey(name, n)
	p, err := s.spawn(ctx, name, key, nil, env, "http: serving")
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.procs[key] = p
	s.mu.Unlock()
	return p, nil
}

// Procs returns the running binaries by key.
func (s *Stack) Procs() map[string]*Proc {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]*Proc, len(s.procs))
	for k, p := range s.procs {
		out[k] = p
	}
	return out
}

// supervise reports p's unexpected exit and starts it again (Supervision).
func (s *Stack) supervise(p *Proc, delay time.Duration) {
	sv := s.opts.Supervise
	if sv == nil || p.stopping.Load() || p.Name == Broker {
		return
	}
	s.mu.Lock()
	if s.closing || s.procs[p.Key] != p {
		s.mu.Unlock()
		return
	}
	delete(s.procs, p.Key)
	s.wg.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.wg.Done()
		base := sv.Delay
		if base <= 0 {
			base = time.Second
		}
		if delay == 0 || time.Since(p.Started) > time.Minute {
			delay = base
		}
		e := Exit{Key: p.Key, Pid: p.Pid(), Code: -1, RestartIn: delay, At: time.Now()}
		if st, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus); ok && st.Signaled() {
			e.Signal = st.Signal().String()
		} else {
			e.Code = p.cmd.ProcessState.ExitCode()
		}
		p.mu.Lock()
		e.LastLines = slices.Clone(p.tail)
		p.mu.Unlock()
		if sv.OnExit != nil {
			sv.OnExit(e)
		}
		for {
			t := time.NewTimer(delay)
			select {
			case <-s.ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			np, err := s.spawn(s.ctx, p.Name, p.Key, nil, p.env, "http: serving")
			delay = min(2*delay, 16*base)
			if err != nil {
				if sv.OnExit != nil && s.ctx.Err() == nil {
					sv.OnExit(Exit{Key: p.Key, Code: -1, LastLines: []string{err.Error()}, RestartIn: delay, At: time.Now()})
				}
				continue
			}
			s.mu.Lock()
			if s.closing {
				s.mu.Unlock()
				_ = np.stop()
				return
			}
			s.procs[p.Key] = np
			np.restartDelay.Store(int64(delay))
			s.mu.Unlock()
			if sv.OnRestart != nil {
				sv.OnRestart(p.Key, np)
			}
			return
		}
	}()
}

// spawn starts BinDir/name with args and env (after the stack's), logging to LogDir/key.log, and waits for its JSON log
// line whose message starts with ready (it carries "addr" or "brokers").
func (s *Stack) spawn(ctx context.Context, name, key string, args, env []string, ready string) (*Proc, error) {
	logf, err := os.OpenFile(filepath.Join(s.opts.LogDir, key+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(filepath.Join(s.opts.BinDir, name), args...)
	cmd.Env = append(append(append(CleanEnv(), s.Env()...), s.opts.RoleEnv[name]...), env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		logf.Close()
		return nil, err
	}
	cmd.Stdout = logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &Proc{Name: name, Key: key, env: env, cmd: cmd, done: make(chan struct{}), Started: time.Now()}
	type readyLine struct {
		Message string   `json:"message"`
		Addr    string   `json:"addr"`
		APIAddr string   `json:"api_addr"`
		Brokers []string `json:"brokers"`
	}
	readyc := make(chan readyLine, 1)
	go func() {
		defer logf.Close()
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Bytes()
			_, _ = logf.Write(append(line, '\n'))
			p.mu.Lock()
			if len(p.tail) == lastLines {
				p.tail = p.tail[1:]
			}
			p.tail = append(p.tail, string(line))
			p.mu.Unlock()
			var l readyLine
			if json.Unmarshal(line, &l) == nil && strings.HasPrefix(l.Message, ready) {
				select {
				case readyc <- l:
				default:
				}
			}
		}
		_, _ = io.Copy(logf, stderr)
		p.err = cmd.Wait()
		close(p.done)
		s.supervise(p, time.Duration(p.restartDelay.Load()))
	}()
	select {
	case l := <-readyc:
		p.Addr, p.APIAddr, p.Brokers = l.Addr, l.APIAddr, l.Brokers
	case <-p.done:
		return nil, fmt.Errorf("%s exited at start: %v (see %s)", key, p.err, filepath.Join(s.opts.LogDir, key+".log"))
	case <-time.After(30 * time.Second):
		p.stopping.Store(true)
		_ = cmd.Process.Kill()
		return nil, fmt.Errorf("%s did not start serving within 30s", key)
	case <-ctx.Done():
		p.stopping.Store(true)
		_ = cmd.Process.Kill()
		return nil, ctx.Err()
	}
	return p, nil
}

// stop sends SIGTERM and waits (SIGKILL after 40s).
func (p *Proc) stop() error {
	p.stopping.Store(true)
	_ = p.cmd.Process.Signal(syscall.SIGCONT) // a frozen process must run to stop
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(40 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
	return p.err
}

// Proc returns the running process of a binary (nil if none).
func (s *Stack) Proc(name string) *Proc {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.procs[name]
}

// StopProc stops one binary (by key: name or name-N) with SIGTERM (graceful) and waits for it.
func (s *Stack) StopProc(key string) error {
	p := s.Proc(key)
	if p == nil {
		return nil
	}
	err := p.stop()
	s.mu.Lock()
	if s.procs[key] == p {
		delete(s.procs, key)
	}
	s.mu.Unlock()
	return err
}

// Close stops every binary gracefully (pending restarts are dropped): the console, the four in
// reverse start order, then the broker.
func (s *Stack) Close() error {
	s.mu.Lock()
	s.closing = true
	s.mu.Unlock()
	s.cancel()
	s.wg.Wait()
	var errs []error
	order := []string{Console}
	for i := len(Binaries) - 1; i >= 0; i-- {
		order = append(order, Binaries[i])
	}
	for _, name := range order {
		for key := range s.Procs() {
			if key != name && !strings.HasPrefix(key, name+"-") {
				continue
			}
			if err := s.StopProc(key); err != nil && !isSignalExit(err) {
				errs = append(errs, fmt.Errorf("%s: %w", key, err))
			}
		}
	}
	if err := s.StopBroker(); err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", Broker, err))
	}
	return errors.Join(errs...)
}

// isSignalExit: a process that ended by a signal sent earlier (a SIGKILL the caller sent) is not
// a failure to stop.
func isSignalExit(err error) bool {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return false
	}
	st, ok := ee.Sys().(syscall.WaitStatus)
	return ok && st.Signaled() && st.Signal() == syscall.SIGKILL
}

// CleanEnv is the process environment without MSGX_ settings.
func CleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "MSGX_") {
			env = append(env, kv)
		}
	}
	return env
}
