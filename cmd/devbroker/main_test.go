package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/dev/broker"
	"github.com/msgx/msgx/pkg/dev/kafkatest"
	"github.com/msgx/msgx/pkg/dev/tlsenv"
	"github.com/msgx/msgx/pkg/kafka"
)

// devbroker is one run of the command.
type devbroker struct {
	brokers []string
	stop    context.CancelFunc
	done    chan error
}

// start runs the command with args and waits for its "kafka: serving" line.
func start(t *testing.T, args ...string) *devbroker {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r, w := io.Pipe()
	d := &devbroker{stop: cancel, done: make(chan error, 1)}
	go func() {
		err := run(ctx, args, w)
		_ = w.Close()
		d.done <- err
	}()
	serving := make(chan []string, 1)
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			var l struct {
				Message string   `json:"message"`
				Brokers []string `json:"brokers"`
			}
			if json.Unmarshal(sc.Bytes(), &l) == nil && l.Message == "kafka: serving" {
				serving <- l.Brokers
			}
		}
	}()
	select {
	case d.brokers = <-serving:
	case err := <-d.done:
		t.Fatalf("devbroker ended before serving: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("devbroker did not serve")
	}
	t.Cleanup(func() { d.close(t) })
	return d
}

func (d *devbroker) close(t *testing.T) {
	if d.stop == nil {
		return
	}
	d.stop()
	d.stop = nil
	require.NoError(t, <-d.done)
}

func produce(t *testing.T, brokers []string, n int) {
	t.Helper()
	p, err := broker.DialPlain(broker.ClientConfig(brokers))
	require.NoError(t, err)
	defer p.Close()
	var recs []kafka.Record
	for i := range n {
		recs = append(recs, kafka.Record{Topic: broker.TopicChanges, Key: "k", Value: []byte{byte('a' + i)}})
	}
	for _, err := range p.Send(context.Background(), recs) {
		require.NoError(t, err)
	}
}

// With a data directory, a restarted broker is the same cluster: topics and records survive.
func TestDataSurvivesRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	first := start(t, "-listen", "127.0.0.1:0", "-data-dir", dir)
	require.Len(t, first.brokers, 1)
	p, err := kafka.Dial(broker.ClientConfig(first.brokers))
	require.NoError(t, err)
	infos, err := p.CheckTopics(context.Background())
	require.NoError(t, err)
	require.NoError(t, p.Close())
	require.Len(t, infos, 3) // both event topics and the heartbeat topic
	for _, in := range infos {
		require.Equal(t, broker.Partitions, in.Partitions, in.Name)
		if in.Name == broker.TopicState {
			require.Equal(t, "compact", in.CleanupPolicy)
		}
	}
	produce(t, first.brokers, 3)
	first.close(t)

	second := start(t, "-listen", first.brokers[0], "-data-dir", dir)
	require.Equal(t, first.brokers, second.brokers)
	produce(t, second.brokers, 1)
	recs := kafkatest.Consume(t, second.brokers, broker.TopicChanges, 4, time.Minute)
	var got []string
	for _, r := range recs {
		got = append(got, string(r.Value))
	}
	require.Equal(t, "abca", strings.Join(got, ""), "the records of before the restart, then the new one")
	require.Equal(t, int64(3), recs[3].Offset)
}

// Without a data directory the cluster lives in memory: a restart starts empty.
func TestMemoryOnlyStartsEmpty(t *testing.T) {
	t.Parallel()
	first := start(t, "-listen", "127.0.0.1:0")
	produce(t, first.brokers, 2)
	first.close(t)
	second := start(t, "-listen", first.brokers[0])
	produce(t, second.brokers, 1)
	recs := kafkatest.Consume(t, second.brokers, broker.TopicChanges, 1, time.Minute)
	require.Len(t, recs, 1, "only the record produced after the restart")
	require.Equal(t, int64(0), recs[0].Offset, "the partition's log starts again at offset 0")
}

func TestBadFlags(t *testing.T) {
	t.Parallel()
	err := run(context.Background(), []string{"-listen", "127.0.0.1:0,127.0.0.1:0", "-advertise", "a:1"}, io.Discard)
	require.ErrorContains(t, err, "1 advertised addresses for 2 listen addresses")
	err = run(context.Background(), []string{"-listen", "nope"}, io.Discard)
	require.ErrorContains(t, err, `listen address "nope"`)
}

// With -tls-cert/-tls-key and -sasl-user, the broker speaks only TLS and admits only the SCRAM
// user: a client that verifies the CA and authenticates with SCRAM-SHA-512 produces; a
// plaintext client and a wrong password are refused.
func TestTLSAndSCRAM(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ca, err := tlsenv.NewCA(dir)
	require.NoError(t, err)
	pwFile := filepath.Join(dir, "pw")
	require.NoError(t, os.WriteFile(pwFile, []byte("s3cret\n"), 0o600))
	d := start(t, "-listen", "127.0.0.1:0", "-tls-cert", ca.CertFile, "-tls-key", ca.KeyFile,
		"-sasl-user", "msgx", "-sasl-password-file", pwFile)

	cfg := broker.ClientConfig(d.brokers)
	cfg.TLS, cfg.TLSCAFile = true, ca.CAFile
	cfg.SASLMechanism, cfg.SASLUser, cfg.SASLPassword = broker.SCRAMMechanism, "msgx", "s3cret"
	p, err := kafka.Dial(cfg)
	require.NoError(t, err)
	infos, err := p.CheckTopics(context.Background())
	require.NoError(t, err)
	require.Len(t, infos, 3) // both event topics and the heartbeat topic
	require.NoError(t, p.Close())

	for name, bad := range map[string]func(*kafka.Config){
		"plaintext":      func(c *kafka.Config) { c.TLS, c.TLSCAFile = false, "" },
		"wrong password": func(c *kafka.Config) { c.SASLPassword = "guess" },
		"no SASL":        func(c *kafka.Config) { c.SASLMechanism, c.SASLUser, c.SASLPassword = "", "", "" },
	} {
		c := cfg
		c.DialTimeout, c.IOTimeout = 2*time.Second, 2*time.Second
		bad(&c)
		p, err := kafka.Dial(c)
		if err == nil {
			_, err = p.CheckTopics(context.Background())
			_ = p.Close()
		}
		require.Error(t, err, name)
	}

	_, err = startErr("-listen", "127.0.0.1:0", "-tls-cert", ca.CertFile)
	require.ErrorContains(t, err, "-tls-cert and -tls-key go together")
	_, err = startErr("-listen", "127.0.0.1:0", "-sasl-user", "msgx")
	require.ErrorContains(t, err, "-sasl-user and -sasl-password-file go together")
}

// startErr runs the command with args that must fail before serving.
func startErr(args ...string) (string, error) {
	var out strings.Builder
	err := run(context.Background(), args, &out)
	return out.String(), err
}
