// Command devbroker is the development Kafka broker as its own process: kfake (the real wire
// protocol) with msgx's two topics created, optionally keeping its data in a directory so a
// restart is the same cluster. The local stack (make up), the demo, the end-to-end tests and the
// dev Kubernetes overlay run it; production uses a real Kafka cluster. It logs one JSON line
// "kafka: serving" with the brokers' addresses once clients can connect, and stops on SIGTERM.
package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/msgx/msgx/pkg/cmdline"
	"github.com/msgx/msgx/pkg/dev/broker"
	"github.com/msgx/msgx/pkg/obs"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	logs := obs.NewLogOutput(os.Stderr, obs.LogQueueLines) // logging never blocks the broker
	err := run(ctx, os.Args[1:], logs)
	stop()
	_ = logs.CloseWithin(obs.LogFlushTimeout) // the queued lines before the error line and the exit
	os.Exit(cmdline.Exit(os.Stderr, "devbroker", err))
}

func run(ctx context.Context, args []string, logw io.Writer) error {
	fs := cmdline.New("devbroker", "[--listen ADDR] [--data-dir DIR] [flags]", "The development Kafka broker (kfake) as its own process.", os.Stdout)
	listen := fs.String("listen", "127.0.0.1:9092", "comma-separated host:port to listen on, one broker each (port 0: a free port)")
	advertise := fs.String("advertise", "", "comma-separated host:port clients are told to use, one per -listen address (default: the listen addresses; set it when listening on 0.0.0.0)")
	dataDir := fs.String("data-dir", "", "keep topics and records in this directory and reload them at start (default: memory only)")
	partitions := fs.Int("partitions", broker.Partitions, "partitions of each topic created at start")
	changes := fs.String("topic-changes", broker.TopicChanges, "topic of KAFKA:msg (MSGX_KAFKA_TOPIC_CHANGES)")
	state := fs.String("topic-state", broker.TopicState, "compacted topic of KAFKA:schd (MSGX_KAFKA_TOPIC_STATE)")
	level := fs.String("log-level", "info", "debug, info, warn or error")
	certFile := fs.String("tls-cert", "", "PEM server certificate: serve only TLS (with -tls-key)")
	keyFile := fs.String("tls-key", "", "PEM private key of -tls-cert")
	saslUser := fs.String("sasl-user", "", "require SASL SCRAM-SHA-512 with this user (a superuser; with -sasl-password-file)")
	saslPasswordFile := fs.String("sasl-password-file", "", "file holding the -sasl-user's password (not a flag: flags show in ps)")
	if err := fs.NoArgs(args); err != nil {
		return err
	}
	log := obs.NewLogger(logw, *level, "devbroker")
	opts := broker.Options{Listen: split(*listen), Advertise: split(*advertise), DataDir: *dataDir}
	if (*certFile == "") != (*keyFile == "") {
		return fmt.Errorf("-tls-cert and -tls-key go together")
	}
	if *certFile != "" {
		cert, err := tls.LoadX509KeyPair(*certFile, *keyFile)
		if err != nil {
			return fmt.Errorf("load the TLS certificate: %w", err)
		}
		opts.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	if (*saslUser == "") != (*saslPasswordFile == "") {
		return fmt.Errorf("-sasl-user and -sasl-password-file go together")
	}
	if *saslUser != "" {
		pw, err := os.ReadFile(*saslPasswordFile)
		if err != nil {
			return fmt.Errorf("read the SASL password: %w", err)
		}
		opts.SCRAMUser, opts.SCRAMPassword = *saslUser, strings.TrimRight(string(pw), "\r\n")
	}
	b, err := broker.StartWith(opts)
	if err != nil {
		return err
	}
	defer func() {
		b.Close()
		log.Info().Msg("kafka: stopped")
	}()
	if err := b.CreateTopics(*changes, *state, int32(*partitions)); err != nil {
		return err
	}
	log.Info().Strs("brokers", b.Addrs()).Str("data_dir", *dataDir).Strs("topics", []string{*changes, *state}).
		Bool("tls", opts.TLS != nil).Str("sasl", map[bool]string{true: broker.SCRAMMechanism}[opts.SCRAMUser != ""]).
		Msg("kafka: serving")
	<-ctx.Done()
	return nil
}

func split(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}
