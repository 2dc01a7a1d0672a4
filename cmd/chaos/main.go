// Command chaos is the fault suite (make chaos): it builds the binaries, starts a private
// PostgreSQL cluster and MariaDB instance (TLS only, with the run's CA), runs every scenario of
// pkg/dev/chaos (or the short form with -short; the suite on a real three-node Apache Kafka
// cluster with -kafka) with the binaries configured as production (their own roles, verified TLS,
// Kafka TLS with SCRAM-SHA-512, MSGX_ENV=production), on a single-node Apache Kafka except the
// scenarios that fault the development broker, and, with -write, writes the run, one row per
// scenario, as a file of its own in docs/runs/reliability. It exits non-zero when a scenario
// fails, naming it and what broke.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/msgx/msgx/pkg/cmdline"
	"github.com/msgx/msgx/pkg/dev/chaos"
	"github.com/msgx/msgx/pkg/dev/stack"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	code := cmdline.Exit(os.Stderr, "chaos", run(ctx, os.Args[1:]))
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string) error {
	fs := cmdline.New("chaos", "[--short | --kafka] [--dev-broker] [--run NAME] [--env KEY=VALUE]… [--write DIR] [--note TEXT]", "The fault suite: every scenario on private PostgreSQL and MariaDB servers (docs/reliability.md).", os.Stdout)
	short := fs.Bool("short", false, "the short form: one kill per binary, one PostgreSQL restart, one broker freeze")
	onKafka := fs.Bool("kafka", false, "the scenarios on a real three-node Apache Kafka cluster instead of the development broker (make chaos-kafka)")
	devBroker := fs.Bool("dev-broker", false, "every scenario on the development broker, none on a single-node Apache Kafka (a machine without Java 17)")
	only := fs.String("run", "", "run only the scenarios whose name contains this (or one of these, comma-separated)")
	write := fs.String("write", "", "write the run's section as a file of its own in this directory (docs/runs/reliability)")
	note := fs.String("note", "", "a sentence added to the section (e.g. what else loaded the machine)")
	var env settingsFlag
	fs.Var(&env, "env", "a setting of every binary of every scenario, after the scenario's own (repeatable; the configuration column names it), e.g. MSGX_MARKER_STANDBYS=0")
	if err := fs.NoArgs(args); err != nil {
		return err
	}
	root, err := stack.Root()
	if err != nil {
		return err
	}
	work := filepath.Join(root, ".chaos")
	scenarios := chaos.Full()
	var node *chaos.RealKafka // the Apache Kafka of the scenarios that do not fault the development broker
	switch {
	case *short && *onKafka:
		return fmt.Errorf("--short and --kafka exclude each other")
	case *short:
		scenarios = chaos.Short()
	case *onKafka:
		k := chaos.NewRealKafka(filepath.Join(work, "apache-kafka"))
		defer func() { _ = k.Close() }()
		scenarios = chaos.Kafka(k)
	}
	if !*onKafka && !*devBroker {
		node = chaos.NewKafkaNode(filepath.Join(work, "apache-kafka-node"))
		defer func() { _ = node.Close() }()
	}
	if *only != "" {
		var keep []chaos.Scenario
		for _, s := range scenarios {
			for _, part := range strings.Split(*only, ",") {
				if part != "" && strings.Contains(s.Name, part) {
					keep = append(keep, s)
					break
				}
			}
		}
		scenarios = keep
	}
	started, machine := time.Now(), chaos.Machine()
	fmt.Println("chaos: building the binaries …")
	if err := stack.Build(ctx, filepath.Join(work, "bin")); err != nil {
		return err
	}
	srv, err := chaos.StartServers()
	if err != nil {
		return err
	}
	defer srv.Close()
	results, err := chaos.RunAll(ctx, chaos.Config{
		BinDir: filepath.Join(work, "bin"), WorkDir: work, Seed: uint64(started.Unix()),
		Date: chaos.AirportToday(), Log: os.Stdout, Kafka: node, Env: env,
	}, srv, scenarios)
	if err != nil {
		return err
	}
	section := chaos.Section(results, started, time.Since(started), machine, *note)
	fmt.Println(section)
	if *write != "" {
		path, err := chaos.WriteRun(*write, started, section)
		if err != nil {
			return err
		}
		fmt.Println("chaos: written to", path, "(update docs/reliability.md's current figures from it)")
	}
	if failed := chaos.Failures(results); len(failed) > 0 {
		return fmt.Errorf("%d of %d scenarios failed:\n  %s", len(failed), len(results), strings.Join(failed, "\n  "))
	}
	return nil
}

// settingsFlag collects repeated --env KEY=VALUE.
type settingsFlag []string

func (s *settingsFlag) String() string { return strings.Join(*s, " ") }

func (s *settingsFlag) Set(v string) error {
	if k, _, ok := strings.Cut(v, "="); !ok || !strings.HasPrefix(k, "MSGX_") {
		return fmt.Errorf("want MSGX_NAME=VALUE, got %q", v)
	}
	*s = append(*s, v)
	return nil
}
