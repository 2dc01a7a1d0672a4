// Package stack runs msgx locally the way production runs it: the four binaries as separate
// processes against PostgreSQL, the MySQL mailbox and a Kafka broker (the development broker,
// cmd/devbroker, as its own process), coordinating only through PostgreSQL. The demo (cmd/demo), the local stack (cmd/devstack),
// the end-to-end tests and the end-to-end benchmark use it. It is development tooling: it
// creates databases and the mailbox tables, which production never does.
package stack

import (
	"bufio"
	"context"
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
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

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

// Build compiles the binaries, the broker and the tools into binDir.
func Build(ctx context.Context, binDir string) error {
	root, err := Root()
	if err != nil {
		return err
	}
	args := []string{"build", "-o", binDir + string(os.PathSeparator)}
	for _, b := range append(append(slices.Clone(Binaries), Broker), Tools...) {
		args = append(args, "./cmd/"+b)
	}
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("build binaries: %v\n%s", err, out)
	}
	return nil
}

// Databases names where the stack keeps its state.
type Databases struct {
	PGServer    string // e.g. postgres://postgres@127.0.0.1:5432 (no database)
	PGDatabase  string
	MySQLServer string // e.g. root@tcp(127.0.0.1:3306)/
	MySQLDB     string
	Fresh       bool // drop and recreate both
}

// Prepare creates (or recreates) the PostgreSQL database with every migration applied and the
// mailbox database with its tables, and returns their URL and DSN.
func Prepare(ctx context.Context, d Databases) (pgURL, mysqlDSN string, err error) {
	admin, err := pgx.Connect(ctx, d.PGServer+"/postgres?sslmode=disable")
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
	pgURL = d.PGServer + "/" + url.PathEscape(d.PGDatabase) + "?sslmode=disable"
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
	// RandomPorts lets each binary pick a free HTTP port (tests); otherwise each serves on its
	// role's default address (127.0.0.1:8081 … 8084).
	RandomPorts bool
	// RoleEnv are extra settings of one binary (by name), after Env: its own database role's
	// MSGX_PG_URL and MSGX_MYSQL_DSN, the way production runs each binary.
	RoleEnv map[string][]string
	// KafkaAuth, when set, makes the broker speak only TLS and require SASL/SCRAM-SHA-512, and
	// gives every binary (and Stack.Kafka) the matching settings.
	KafkaAuth *KafkaAuth
}

// KafkaAuth is the broker's TLS certificate and its one SCRAM-SHA-512 user.
type KafkaAuth struct {
	CertFile, KeyFile string // the broker's server certificate and key (PEM)
	CAFile            string // the CA clients verify the broker with
	User, Password    string
}

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

	mu    sync.Mutex
	procs map[string]*Proc
}

// Start starts the broker (it creates the two topics) and the four binaries, and waits until
// each serves.
func Start(ctx context.Context, opts Options) (*Stack, error) {
	if err := os.MkdirAll(opts.LogDir, 0o755); err != nil {
		return nil, err
	}
	s := &Stack{opts: opts, procs: map[string]*Proc{}}
	var err error
	if s.APIToken, s.apiEntry, err = httpauth.NewToken("stack", httpauth.ScopeSend, httpauth.ScopeRead); err != nil {
		return nil, err
	}
	if err := s.StartBroker(ctx); err != nil {
		return nil, err
	}
	s.Kafka = broker.ClientConfig(s.Brokers)
	s.Kafka.ClientID = "msgx-stack"
	if a := opts.KafkaAuth; a != nil {
		s.Kafka.TLS, s.Kafka.TLSCAFile = true, a.CAFile
		s.Kafka.SASLMechanism, s.Kafka.SASLUser, s.Kafka.SASLPassword = broker.SCRAMMechanism, a.User, a.Password
	}
	for _, b := range Binaries {
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
	p, err := s.spawn(ctx, Broker, args, "kafka: serving")
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

// Env is the environment every binary of this stack gets.
func (s *Stack) Env() []string {
	env := []string{
		"MSGX_KAFKA_BROKERS=" + strings.Join(s.Brokers, ","),
		"MSGX_API_TOKENS=" + s.apiEntry.String(),
	}
	// Empty: each binary gets its own in RoleEnv (no shared administrator credentials).
	if s.opts.PGURL != "" {
		env = append(env, "MSGX_PG_URL="+s.opts.PGURL)
	}
	if s.opts.MySQL != "" {
		env = append(env, "MSGX_MYSQL_DSN="+s.opts.MySQL)
	}
	if s.opts.RandomPorts {
		env = append(env, "MSGX_HTTP_ADDR=127.0.0.1:0", "MSGX_API_ADDR=127.0.0.1:0")
	}
	if a := s.opts.KafkaAuth; a != nil {
		env = append(env, "MSGX_KAFKA_TLS=true", "MSGX_KAFKA_TLS_CA_FILE="+a.CAFile,
			"MSGX_KAFKA_SASL_MECHANISM="+broker.SCRAMMechanism, "MSGX_KAFKA_SASL_USER="+a.User, "MSGX_KAFKA_SASL_PASSWORD="+a.Password)
	}
	return append(env, s.opts.Env...)
}

// Proc is one running binary.
type Proc struct {
	Name    string
	Addr    string   // host:port of its ops HTTP server (the four binaries)
	APIAddr string   // host:port of its API server (ingest)
	Brokers []string // the brokers' addresses (the broker)
	cmd     *exec.Cmd
	done    chan struct{}
	err     error
}

// Wait waits for the process to exit and returns its error.
func (p *Proc) Wait() error { <-p.done; return p.err }

// Pid is the process id.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Signal sends sig to the process.
func (p *Proc) Signal(sig os.Signal) error { return p.cmd.Process.Signal(sig) }

// StartProc starts one binary and waits until it serves HTTP.
func (s *Stack) StartProc(ctx context.Context, name string) (*Proc, error) {
	p, err := s.spawn(ctx, name, nil, "http: serving")
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.procs[name] = p
	s.mu.Unlock()
	return p, nil
}

// spawn starts BinDir/name with args, logging to LogDir/name.log, and waits for its JSON log
// line whose message starts with ready (it carries "addr" or "brokers").
func (s *Stack) spawn(ctx context.Context, name string, args []string, ready string) (*Proc, error) {
	logf, err := os.OpenFile(filepath.Join(s.opts.LogDir, name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(filepath.Join(s.opts.BinDir, name), args...)
	cmd.Env = append(append(cleanEnv(), s.Env()...), s.opts.RoleEnv[name]...)
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
	p := &Proc{Name: name, cmd: cmd, done: make(chan struct{})}
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
	}()
	select {
	case l := <-readyc:
		p.Addr, p.APIAddr, p.Brokers = l.Addr, l.APIAddr, l.Brokers
	case <-p.done:
		return nil, fmt.Errorf("%s exited at start: %v (see %s)", name, p.err, filepath.Join(s.opts.LogDir, name+".log"))
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		return nil, fmt.Errorf("%s did not start serving within 30s", name)
	case <-ctx.Done():
		_ = cmd.Process.Kill()
		return nil, ctx.Err()
	}
	return p, nil
}

// stop sends SIGTERM and waits (SIGKILL after 40s).
func (p *Proc) stop() error {
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

// StopProc stops one binary with SIGTERM (graceful) and waits for it.
func (s *Stack) StopProc(name string) error {
	p := s.Proc(name)
	if p == nil {
		return nil
	}
	err := p.stop()
	s.mu.Lock()
	delete(s.procs, name)
	s.mu.Unlock()
	return err
}

// Close stops every binary gracefully, then the broker.
func (s *Stack) Close() error {
	var errs []error
	for i := len(Binaries) - 1; i >= 0; i-- {
		if err := s.StopProc(Binaries[i]); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", Binaries[i], err))
		}
	}
	if err := s.StopBroker(); err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", Broker, err))
	}
	return errors.Join(errs...)
}

func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "MSGX_") {
			env = append(env, kv)
		}
	}
	return env
}
