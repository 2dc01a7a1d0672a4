package main

import (
	"context"
	"time"

	"github.com/msgx/msgx/pkg/dispatch"
	"github.com/msgx/msgx/pkg/kafka"
	"github.com/msgx/msgx/pkg/leader"
	"github.com/msgx/msgx/pkg/outbox"
	"github.com/msgx/msgx/pkg/settings"
)

// Config is the dispatcher binary's configuration: the process's settings and the parts it runs.
type Config struct {
	settings.Process
	Leader leader.Config
	settings.Retry

	Kafka    kafka.Config
	Dispatch dispatch.Config
}

// load reads and validates the environment.
func load() (Config, error) { return settings.Load[Config](settings.RoleDispatcher) }

// Validate reports every bad value, one line each; in production also the refusals.
func (c Config) Validate() error {
	return settings.Check(c.Process, c.Leader, c.Retry, c.Kafka, c.Dispatch)
}

// dispatchConfig is the dispatcher's configuration.
func (c Config) dispatchConfig() dispatch.Config {
	dc := c.Dispatch
	dc.TopicChanges, dc.TopicState = c.Kafka.TopicChanges, c.Kafka.TopicState
	dc.TopicHeartbeat, dc.HeartbeatKey = c.Kafka.TopicHeartbeat, c.Kafka.TxnIDPrefix
	dc.ErrorWait = c.BackoffMax
	kc := c.Kafka
	// Every term starts by reading what the topics took since the last commit the database kept.
	dc.TailReader = func(ctx context.Context, topic string, since time.Time, fn func(kafka.ConsumedRecord) error) error {
		_, err := kafka.ReadCommittedSince(ctx, kc, topic, since, fn)
		return err
	}
	return dc
}

// outboxPolicy is the retry policy of delivery (the same as processing).
func (c Config) outboxPolicy() outbox.Policy { return outbox.Policy(c.Retry) }
