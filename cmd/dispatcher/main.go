// Command dispatcher is msgx's dispatcher stage: while it leads the dispatcher role it drains the
// msg_event outbox to Kafka (pkg/dispatch). See docs/architecture.md and docs/events.md.
package main

import (
	"context"
	"errors"
	"fmt"
	"github.com/msgx/msgx/pkg/dev/broker"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/msgx/msgx/pkg/clock"
	"github.com/msgx/msgx/pkg/config"
	"github.com/msgx/msgx/pkg/daemon"
	"github.com/msgx/msgx/pkg/dispatch"
	"github.com/msgx/msgx/pkg/kafka"
	"github.com/msgx/msgx/pkg/leader"
	"github.com/msgx/msgx/pkg/obs"
	"github.com/msgx/msgx/pkg/outbox"
)

func main() {
	cfg, err := config.Load(config.RoleDispatcher)
	if err != nil {
		fmt.Fprintf(os.Stderr, "dispatcher: bad configuration: %v\n", err)
		os.Exit(2)
	}
	log := obs.NewLogger(os.Stderr, cfg.LogLevel, "dispatcher")
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := run(ctx, cfg, log, nil); err != nil {
		log.Error().Err(err).Msg("dispatcher failed")
		if errors.Is(err, errRefused) {
			fmt.Fprintf(os.Stderr, "dispatcher: %v\n", err)
			os.Exit(2)
		}
		os.Exit(1)
	}
}

// errRefused marks a configuration the dispatcher refuses to start with (D3).
var errRefused = errors.New("refusing to start")

// inProcessPartitions is the partition count of the topics of the in-process broker.
const inProcessPartitions = 6

func kafkaConfig(cfg config.Config) kafka.Config {
	return kafka.Config{
		Brokers:        cfg.KafkaBrokers,
		ClientID:       cfg.KafkaClientID,
		Version:        cfg.KafkaVersion,
		DialTimeout:    cfg.KafkaDialTimeout,
		IOTimeout:      cfg.KafkaIOTimeout,
		ProduceTimeout: cfg.KafkaProduceTimeout,
		TLS:            cfg.KafkaTLS,
		TLSCAFile:      cfg.KafkaTLSCAFile,
		SASLMechanism:  cfg.KafkaSASLMechanism,
		SASLUser:       cfg.KafkaSASLUser,
		SASLPassword:   cfg.KafkaSASLPassword,
		TopicChanges:   cfg.KafkaTopicChanges,
		TopicState:     cfg.KafkaTopicState,
	}
}

// run is the whole binary; tests call it. started, when set, is told the HTTP server.
func run(ctx context.Context, cfg config.Config, log zerolog.Logger, started func(*obs.Server)) error {
	kcfg := kafkaConfig(cfg)
	if cfg.KafkaInProcess {
		broker, err := broker.Start()
		if err != nil {
			return err
		}
		defer broker.Close()
		kcfg.Brokers = broker.Addrs()
		if err := kafka.EnsureTopics(kcfg, inProcessPartitions); err != nil {
			return err
		}
		log.Warn().Strs("brokers", kcfg.Brokers).Msg("in-process Kafka broker: development only, data lives in memory")
	}
	// Producer rule D3: refuse to start on any violation, before touching anything else.
	if _, err := kafka.NewSaramaConfig(kcfg); err != nil {
		return fmt.Errorf("%w: %w", errRefused, err)
	}

	pool, err := daemon.OpenPool(ctx, cfg, config.RoleDispatcher)
	if err != nil {
		return err
	}
	defer pool.Close()
	store, err := outbox.New(pool, outbox.Policy{MaxAttempts: cfg.MaxAttempts, BackoffBase: cfg.BackoffBase, BackoffMax: cfg.BackoffMax})
	if err != nil {
		return err
	}
	reg := obs.NewRegistry()
	sender := &currentProducer{}
	disp, err := dispatch.New(dispatch.Config{
		Batch:        cfg.DispatchBatch,
		FlushPeriod:  cfg.SchdFlushPeriod,
		FlushLimit:   cfg.SchdFlushLimit,
		TopicChanges: cfg.KafkaTopicChanges,
		TopicState:   cfg.KafkaTopicState,
		ErrorWait:    cfg.BackoffMax,
	}, store, sender, clock.System{}, reg, log)
	if err != nil {
		return err
	}

	work := func(ctx context.Context, lease leader.Lease) error {
		p, err := connect(ctx, kcfg, cfg.LeaderRetry, log)
		if err != nil || p == nil {
			return err
		}
		defer func() {
			sender.p.Store(nil)
			if err := p.Close(); err != nil {
				log.Warn().Err(err).Msg("kafka producer close")
			}
		}()
		infos, err := checkTopics(ctx, p, cfg.LeaderRetry, log)
		if err != nil || infos == nil {
			return err
		}
		for _, in := range infos {
			ev := log.Info()
			if in.Name == kcfg.TopicState && in.CleanupPolicy != "" && in.CleanupPolicy != "compact" {
				ev = log.Warn().Str("want", "compact")
			}
			ev.Str("topic", in.Name).Int("partitions", in.Partitions).Str("cleanup_policy", in.CleanupPolicy).Msg("kafka topic checked")
		}
		sender.p.Store(p)
		return disp.Run(ctx, lease)
	}

	return daemon.Run(ctx, daemon.Spec{
		Role:     config.RoleDispatcher,
		Config:   cfg,
		Log:      log,
		Registry: reg,
		Pool:     pool,
		Checks: []obs.Check{{Name: "kafka", Fn: func(ctx context.Context) error {
			return kafka.Reachable(ctx, kcfg.Brokers, cfg.KafkaDialTimeout)
		}}},
		Work:    work,
		Started: started,
	})
}

// connect dials Kafka until it answers or ctx ends (nil producer, nil error): an unreachable
// broker delays the work, it does not end the process.
func connect(ctx context.Context, kcfg kafka.Config, retry time.Duration, log zerolog.Logger) (*kafka.Producer, error) {
	wait := retry
	for {
		p, err := kafka.Dial(kcfg)
		if err == nil {
			return p, nil
		}
		log.Warn().Err(err).Strs("brokers", kcfg.Brokers).Dur("retry_in", wait).Msg("kafka not reachable")
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, nil
		case <-t.C:
		}
		wait = min(2*wait, 30*time.Second)
	}
}

// checkTopics runs the start-up topic check: a missing topic refuses to work (the error ends
// the process with a clear line); a broker that does not answer is asked again until ctx ends
// (nil infos, nil error).
func checkTopics(ctx context.Context, p *kafka.Producer, retry time.Duration, log zerolog.Logger) ([]kafka.TopicInfo, error) {
	wait := retry
	for {
		infos, err := p.CheckTopics(ctx)
		switch {
		case err == nil:
			return infos, nil
		case errors.Is(err, kafka.ErrTopicMissing):
			return nil, fmt.Errorf("%w: topic check: %w", errRefused, err)
		}
		log.Warn().Err(err).Dur("retry_in", wait).Msg("kafka topic check failed")
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, nil
		case <-t.C:
		}
		wait = min(2*wait, 30*time.Second)
	}
}

// currentProducer is the dispatcher's Sender: the producer of the current leadership term.
type currentProducer struct {
	p atomic.Pointer[kafka.Producer]
}

var errNoProducer = errors.New("kafka producer not connected")

func (c *currentProducer) Send(ctx context.Context, recs []kafka.Record) []error {
	p := c.p.Load()
	if p == nil {
		errs := make([]error, len(recs))
		for i := range errs {
			errs[i] = errNoProducer
		}
		return errs
	}
	return p.Send(ctx, recs)
}

func (c *currentProducer) Ping(ctx context.Context) error {
	p := c.p.Load()
	if p == nil {
		return errNoProducer
	}
	return p.Ping(ctx)
}
