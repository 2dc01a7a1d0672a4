// Command devstack brings up a local msgx: PostgreSQL database msgx (migrated), the mailbox
// database msgx_mailbox with its tables, the development Kafka broker (cmd/devbroker) on
// 127.0.0.1:9092 with both topics and its data in .devstack/kafka, the operator console (its URL
// and a login token printed), and the four binaries, each
// its own process (logs in .devstack/logs) connected as its own least-privilege PostgreSQL role
// and MariaDB user (pkg/roles, production names msgx_ingest, …, fresh passwords at each start),
// its API behind a bearer token, and the simulated AODB answering msgx's requests (-aodb). It supervises the binaries like Kubernetes would: one that exits is reported (exit
// code or signal, its last log lines) and started again after a delay that doubles while it
// keeps crashing. It stops everything on Ctrl-C. PostgreSQL and MariaDB themselves are started
// by scripts/ensure-db.sh (make up runs it first).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/msgx/msgx/pkg/cmdline"
	"github.com/msgx/msgx/pkg/dev/apachekafka"
	"github.com/msgx/msgx/pkg/dev/broker"
	"github.com/msgx/msgx/pkg/dev/simulate"
	"github.com/msgx/msgx/pkg/dev/stack"
	"github.com/msgx/msgx/pkg/dev/verify"
	"github.com/msgx/msgx/pkg/httpauth"
	"github.com/msgx/msgx/pkg/roles"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	code := cmdline.Exit(os.Stderr, "devstack", run(ctx, os.Args[1:], os.Stdout))
	stop()
	os.Exit(code)
}

// options are one devstack's settings: the flags, and where it keeps its state (tests give
// their own databases, role prefix, directories and ports).
type options struct {
	fresh                   bool
	pgServer, mysqlServer   string
	pgDB, mailDB            string
	rolePrefix              string
	kafkaPort               int
	kafka                   string // dev or apache
	restartDelay            time.Duration
	aodb                    bool
	binDir, logDir, dataDir string
	prebuilt                bool
	randomPorts             bool
	// up, when set, is called once everything serves (tests).
	up func(*stack.Stack)
}

func run(ctx context.Context, args []string, out io.Writer) error {
	fs := cmdline.New("devstack", "[--fresh] [flags]", "Runs msgx locally the way production runs it (make up): databases, broker, the binaries, supervised.", out)
	o := options{pgDB: "msgx", mailDB: "msgx_mailbox", rolePrefix: roles.DefaultPrefix}
	fs.BoolVar(&o.fresh, "fresh", false, "drop and recreate both databases (and empty the broker) first")
	fs.StringVar(&o.pgServer, "pg", "postgres://postgres@127.0.0.1:5432", "PostgreSQL server URL (no database)")
	fs.StringVar(&o.mysqlServer, "mysql", "root@tcp(127.0.0.1:3306)/", "MariaDB/MySQL server DSN (no database)")
	fs.IntVar(&o.kafkaPort, "kafka-port", 9092, "port of the development Kafka broker")
	fs.StringVar(&o.kafka, "kafka", "dev", "the Kafka broker: dev (the development broker, cmd/devbroker) or apache (a real Apache Kafka 4 KRaft node from the jars of scripts/ensure-kafka.sh, new at each start, logs in .devstack/apache-kafka: use it with -fresh, so that the databases start empty too)")
	fs.DurationVar(&o.restartDelay, "restart-delay", 2*time.Second, "delay before a binary that exited is started again (doubles while it keeps crashing)")
	fs.BoolVar(&o.aodb, "aodb", true, "run the simulated AODB: it answers msgx's requests (msgxctl request …) from a generated day of today's date")
	if err := fs.NoArgs(args); err != nil {
		return err
	}
	if o.kafka != "dev" && o.kafka != "apache" {
		return fs.Usagef("-kafka must be dev or apache, got %q", o.kafka)
	}
	root, err := stack.Root()
	if err != nil {
		return err
	}
	dir := filepath.Join(root, ".devstack")
	o.binDir, o.logDir, o.dataDir = filepath.Join(dir, "bin"), filepath.Join(dir, "logs"), filepath.Join(dir, "kafka")
	return devstack(ctx, o, out)
}

// devstack runs the stack until ctx ends.
func devstack(ctx context.Context, o options, out io.Writer) error {
	if !o.prebuilt {
		fmt.Fprintln(out, "devstack: building the binaries …")
		if err := stack.Build(ctx, o.binDir); err != nil {
			return err
		}
	}
	kafkaDir := o.dataDir
	if o.fresh {
		if err := os.RemoveAll(kafkaDir); err != nil {
			return err
		}
	}
	db, err := stack.PrepareRoles(ctx, stack.Databases{
		PGServer: o.pgServer, PGDatabase: o.pgDB, MySQLServer: o.mysqlServer, MySQLDB: o.mailDB, Fresh: o.fresh,
	}, o.rolePrefix)
	if err != nil {
		return err
	}
	pgURL, mysqlDSN, access := db.PGURL, db.MySQLDSN, db.Access
	var external []string
	if o.kafka == "apache" {
		kafkaDir = filepath.Join(filepath.Dir(o.dataDir), "apache-kafka")
		cluster, err := startApacheKafka(ctx, kafkaDir, out)
		if err != nil {
			return err
		}
		defer cluster.Close()
		external = cluster.Addrs()
	}
	s, err := stack.Start(ctx, stack.Options{
		BinDir: o.binDir, LogDir: o.logDir, RandomPorts: o.randomPorts, ExternalBrokers: external,
		RoleEnv: access.RoleEnv(), KafkaPort: o.kafkaPort, KafkaDataDir: kafkaDir,
		Env: []string{"MSGX_POLL_INTERVAL=200ms"},
		Supervise: &stack.Supervision{
			Delay:  o.restartDelay,
			OnExit: func(e stack.Exit) { fmt.Fprintf(out, "devstack: %s\n", e) },
			OnRestart: func(key string, p *stack.Proc) {
				fmt.Fprintf(out, "devstack: %s restarted (pid %d), serving on %s\n", key, p.Pid(), p.Addr)
			},
		},
	})
	if err != nil {
		return err
	}
	kafkaLog := filepath.Join(o.logDir, stack.Broker+".log")
	if o.kafka == "apache" {
		kafkaLog = filepath.Join(kafkaDir, "node1", "server.log")
	}
	fmt.Fprintf(out, "devstack: up (each binary logs in as its own role %s<binary>)\n  PostgreSQL  %s   (administrator: migrations and roles)\n  mailbox     %s\n  Kafka       %v %s (topics msgx.flight.changes, msgx.flight.state; data in %s, log %s)\n",
		roles.DefaultPrefix, pgURL, mysqlDSN, s.Brokers, o.kafka, kafkaDir, kafkaLog)
	for _, b := range stack.Binaries {
		fmt.Fprintf(out, "  %-10s  http://%s/readyz  /metrics   log %s\n", b, s.Proc(b).Addr, filepath.Join(o.logDir, b+".log"))
	}
	consoleURL, consoleToken, err := startConsole(ctx, s)
	if err != nil {
		return errors.Join(err, s.Close())
	}
	fmt.Fprintf(out, "  console     %s   log in with the token %s   (user \"operator\", scopes read+operate; a new one at each start)   log %s\n",
		consoleURL, consoleToken, filepath.Join(o.logDir, stack.Console+".log"))
	ctl := filepath.Join(o.binDir, "msgxctl")
	printAccess(out, s, access, ctl)
	if o.aodb {
		stopAODB, err := startAODB(mysqlDSN, access.PG[roles.Admin], ctl, out)
		if err != nil {
			return errors.Join(err, s.Close())
		}
		defer stopAODB()
	}
	fmt.Fprintln(out, "devstack: Ctrl-C stops everything")
	if o.up != nil {
		o.up(s)
	}
	<-ctx.Done()
	fmt.Fprintln(out, "devstack: stopping …")
	return s.Close()
}

// startAODB runs the simulated AODB on the mailbox (it answers msgx's requests from a day of
// today's date), prints how to ask it, and returns its stop.
func startAODB(mysqlDSN, adminURL, ctl string, out io.Writer) (func(), error) {
	cfg := simulate.DefaultConfig().Today()
	a, err := simulate.StartAODB(mysqlDSN, simulate.Generate(cfg).AODBModel(), simulate.AODBConfig{}, time.Second)
	if err != nil {
		return nil, err
	}
	day := cfg.Date.Format(time.DateOnly)
	fmt.Fprintf(out, "  AODB:         simulated, answers coutmsgs requests for %s (%d flights): MSGX_PG_URL='%s' %s request schedule --from %s --to %s --reason try\n",
		day, cfg.Flights, adminURL, ctl, day, day)
	return func() {
		if err := a.Stop(); err != nil {
			fmt.Fprintln(out, "devstack: simulated AODB:", err)
		}
	}, nil
}

// startConsole starts the operator console (supervised like the binaries, as its own database
// role) with a new operator token, and returns its login URL and the token.
func startConsole(ctx context.Context, s *stack.Stack) (string, string, error) {
	token, entry, err := httpauth.NewToken("operator", httpauth.ScopeRead, httpauth.ScopeOperate)
	if err != nil {
		return "", "", err
	}
	p, err := s.StartInstanceWith(ctx, stack.Console, 1, []string{"MSGX_CONSOLE_TOKENS=" + entry.String()})
	if err != nil {
		return "", "", fmt.Errorf("console: %w", err)
	}
	return "http://" + p.APIAddr + "/login", token, nil
}

// startApacheKafka starts one new Apache Kafka KRaft node in dir (emptied first: a node is
// formatted for one run; its logs stay after the stop) and creates both topics, the state topic
// compacted, as production has them.
func startApacheKafka(ctx context.Context, dir string, out io.Writer) (*apachekafka.Cluster, error) {
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	fmt.Fprintln(out, "devstack: starting Apache Kafka (one KRaft node) …")
	lctx, cancel := context.WithTimeout(ctx, apachekafka.StartTimeout)
	defer cancel()
	cluster, err := apachekafka.Launch(lctx, 1, apachekafka.Options{Dir: dir})
	if err != nil {
		return nil, fmt.Errorf("apache kafka (%s prepares the machine): %w", apachekafka.EnsureScript, err)
	}
	for topic, configs := range map[string]map[string]string{
		verify.TopicChanges:   nil,
		verify.TopicState:     {"cleanup.policy": "compact"},
		broker.TopicHeartbeat: nil,
	} {
		if err := cluster.CreateTopic(ctx, topic, broker.Partitions, configs); err != nil {
			return nil, errors.Join(fmt.Errorf("create %s: %w", topic, err), cluster.Close())
		}
	}
	return cluster, nil
}

// printAccess prints how to reach the running stack: the API token, the compat entry, the read
// API and msgxctl with the read-only and the operators' roles.
func printAccess(out io.Writer, s *stack.Stack, access stack.Access, ctl string) {
	fmt.Fprintf(out, "  API token:    export MSGX_TOKEN=%s   (client \"stack\", scopes send+read; a new one at each start)\n", s.APIToken)
	fmt.Fprintf(out, "  compat entry: curl -X POST -H \"Authorization: Bearer $MSGX_TOKEN\" -H 'Content-Type: application/xml' --data-binary @msg.xml http://%s/cminmsgs/send\n", s.Proc("ingest").APIAddr)
	fmt.Fprintf(out, "  read API:     curl -H \"Authorization: Bearer $MSGX_TOKEN\" http://%s/flights/<FLID>\n", s.Proc("ingest").APIAddr)
	fmt.Fprintf(out, "  status:       MSGX_PG_URL='%s' %s status   (read-only role)\n", access.PG[roles.Reader], ctl)
	fmt.Fprintf(out, "  operator:     export MSGX_PG_URL='%s'   (msgxctl replay, dlq, request …)\n", access.PG[roles.Admin])
}
