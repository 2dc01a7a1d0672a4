// Command devstack brings up a local msgx: PostgreSQL database msgx (migrated), the mailbox
// database msgx_mailbox with its tables, the development Kafka broker (cmd/devbroker) on
// 127.0.0.1:9092 with both topics and its data in .devstack/kafka, and the four binaries, each
// its own process (logs in .devstack/logs), and the simulated AODB answering msgx's requests
// (-aodb). It supervises the binaries like Kubernetes would: one that exits is reported (exit
// code or signal, its last log lines) and started again after a delay that doubles while it
// keeps crashing. It stops everything on Ctrl-C. PostgreSQL and MariaDB themselves are started
// by scripts/ensure-db.sh (make up runs it first).
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/msgx/msgx/pkg/cmdline"
	"github.com/msgx/msgx/pkg/dev/simulate"
	"github.com/msgx/msgx/pkg/dev/stack"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	code := cmdline.Exit(os.Stderr, "devstack", run(ctx, os.Args[1:]))
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string) error {
	fs := cmdline.New("devstack", "[--fresh] [flags]", "Runs msgx locally the way production runs it (make up): databases, broker, the binaries, supervised.", os.Stdout)
	fresh := fs.Bool("fresh", false, "drop and recreate both databases (and empty the broker) first")
	pgServer := fs.String("pg", "postgres://postgres@127.0.0.1:5432", "PostgreSQL server URL (no database)")
	myServer := fs.String("mysql", "root@tcp(127.0.0.1:3306)/", "MariaDB/MySQL server DSN (no database)")
	kafkaPort := fs.Int("kafka-port", 9092, "port of the development Kafka broker")
	restartDelay := fs.Duration("restart-delay", 2*time.Second, "delay before a binary that exited is started again (doubles while it keeps crashing)")
	aodb := fs.Bool("aodb", true, "run the simulated AODB: it answers msgx's requests (msgxctl request …) from a generated day of today's date")
	if err := fs.NoArgs(args); err != nil {
		return err
	}
	root, err := stack.Root()
	if err != nil {
		return err
	}
	dir := filepath.Join(root, ".devstack")
	fmt.Println("devstack: building the binaries …")
	if err := stack.Build(ctx, filepath.Join(dir, "bin")); err != nil {
		return err
	}
	kafkaDir := filepath.Join(dir, "kafka")
	if *fresh {
		if err := os.RemoveAll(kafkaDir); err != nil {
			return err
		}
	}
	pgURL, mysqlDSN, err := stack.Prepare(ctx, stack.Databases{
		PGServer: *pgServer, PGDatabase: "msgx", MySQLServer: *myServer, MySQLDB: "msgx_mailbox", Fresh: *fresh,
	})
	if err != nil {
		return err
	}
	s, err := stack.Start(ctx, stack.Options{
		BinDir: filepath.Join(dir, "bin"), LogDir: filepath.Join(dir, "logs"),
		PGURL: pgURL, MySQL: mysqlDSN, KafkaPort: *kafkaPort, KafkaDataDir: kafkaDir,
		Env: []string{"MSGX_POLL_INTERVAL=200ms"},
		Supervise: &stack.Supervision{
			Delay:  *restartDelay,
			OnExit: func(e stack.Exit) { fmt.Printf("devstack: %s\n", e) },
			OnRestart: func(key string, p *stack.Proc) {
				fmt.Printf("devstack: %s restarted (pid %d), serving on %s\n", key, p.Pid(), p.Addr)
			},
		},
	})
	if err != nil {
		return err
	}
	fmt.Printf("devstack: up\n  PostgreSQL  %s\n  mailbox     %s\n  Kafka       %v (topics msgx.flight.changes, msgx.flight.state; data in %s, log %s)\n",
		pgURL, mysqlDSN, s.Brokers, kafkaDir, filepath.Join(dir, "logs", stack.Broker+".log"))
	for _, b := range stack.Binaries {
		fmt.Printf("  %-10s  http://%s/readyz  /metrics   log %s\n", b, s.Proc(b).Addr, filepath.Join(dir, "logs", b+".log"))
	}
	fmt.Printf("  API token:    export MSGX_TOKEN=%s   (client \"stack\", scopes send+read; a new one at each start)\n", s.APIToken)
	fmt.Printf("  compat entry: curl -X POST -H \"Authorization: Bearer $MSGX_TOKEN\" -H 'Content-Type: application/xml' --data-binary @msg.xml http://%s/cminmsgs/send\n", s.Proc("ingest").APIAddr)
	fmt.Printf("  read API:     curl -H \"Authorization: Bearer $MSGX_TOKEN\" http://%s/flights/<FLID>\n", s.Proc("ingest").APIAddr)
	fmt.Printf("  status:       MSGX_PG_URL='%s' %s status\n", pgURL, filepath.Join(dir, "bin", "msgxctl"))
	if *aodb {
		cfg := simulate.DefaultConfig().Today()
		a, err := simulate.StartAODB(mysqlDSN, simulate.Generate(cfg).AODBModel(), simulate.AODBConfig{}, time.Second)
		if err != nil {
			return errors.Join(err, s.Close())
		}
		defer func() {
			if err := a.Stop(); err != nil {
				fmt.Println("devstack: simulated AODB:", err)
			}
		}()
		fmt.Printf("  AODB:         simulated, answers coutmsgs requests for %s (%d flights): %s request schedule --from %s --to %s --reason try\n",
			cfg.Date.Format(time.DateOnly), cfg.Flights, filepath.Join(dir, "bin", "msgxctl"), cfg.Date.Format(time.DateOnly), cfg.Date.Format(time.DateOnly))
	}
	fmt.Println("devstack: Ctrl-C stops everything")
	<-ctx.Done()
	fmt.Println("devstack: stopping …")
	return s.Close()
}
