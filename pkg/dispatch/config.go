package dispatch

import (
	"errors"
	"fmt"
	"time"

	"github.com/msgx/msgx/pkg/envconf"
)

// Config tunes the dispatcher. The tagged fields are the stage's settings (variable, default:
// pkg/envconf, docs/configuration.md); the topics are the Kafka adapter's and ErrorWait the
// process's MSGX_BACKOFF_MAX, set by the binary. Zero tuning values take their default.
type Config struct {
	Batch        int           `envconfig:"MSGX_DISPATCH_BATCH" default:"2000" desc:"dispatcher: KAFKA:msg events sent per batch"`
	FlushPeriod  time.Duration `envconfig:"MSGX_SCHD_FLUSH_PERIOD" default:"3s" desc:"dispatcher: KAFKA:schd aggregation period"`
	FlushLimit   int           `envconfig:"MSGX_SCHD_FLUSH_LIMIT" default:"500" desc:"dispatcher: FLIDs per KAFKA:schd flush"`
	TopicChanges string        // topic of KAFKA:msg
	TopicState   string        // topic of KAFKA:schd
	// TopicHeartbeat is the heartbeat's topic ("": no heartbeat) and HeartbeatKey its records'
	// key, the deployment's transactional id prefix.
	TopicHeartbeat  string
	HeartbeatKey    string
	HeartbeatPeriod time.Duration `envconfig:"MSGX_HEARTBEAT_PERIOD" default:"10s" desc:"dispatcher: a heartbeat record on MSGX_KAFKA_TOPIC_HEARTBEAT every this long (docs/events.md, \"Heartbeat\"): consumers tell a quiet msgx from a stalled one by it"`
	// Idle is the KAFKA:msg loop's wait after a batch that was not full.
	Idle time.Duration `default:"100ms"`
	// StatsPeriod is how often the backlog gauges are refreshed.
	StatsPeriod time.Duration `default:"5s"`
	// LagSample is the end-to-end lag's sampling: it observes the records of one message in
	// LagSample, chosen by a hash of the message id (so independently of the lag and of the
	// batch), one primary-key probe of proc_state each. 1: every record.
	LagSample int `default:"16"`
	// ErrorWait caps the wait after a database error or a Kafka outage.
	ErrorWait time.Duration `default:"30s"`
	// SendWarn is how long a send may stay unanswered before a warning is logged (and again
	// each time as long again passes).
	SendWarn time.Duration `envconfig:"MSGX_DISPATCH_SEND_WARN" default:"5s" desc:"dispatcher: log a warning when a send has been waiting for the broker this long"`
	// TailReader reads a topic at the start of every term (ReadTail); nil: the topics are not read.
	TailReader TopicReader
	// TailMargin is how much earlier than the last commit the database kept the topics are
	// read: more than a send and its outbox update take.
	TailMargin time.Duration `default:"5m"`
	// HoldFile is a test hook (the real-process zombie test): while this file exists, every
	// send waits after its batch was read and before it reaches Kafka. Empty (the default) it is
	// inert; MSGX_ENV=production refuses it.
	HoldFile string `envconfig:"MSGX_DEV_HOLD_SEND" desc:"tests only: while this file exists every send waits after its batch was read, before Kafka; production refuses it"`
}

// Validate reports every bad value of the stage's settings, one line each.
func (c Config) Validate() error {
	var p envconf.Problems
	p.Between("MSGX_DISPATCH_BATCH", int64(c.Batch), 1, 10000)
	p.Positive("MSGX_SCHD_FLUSH_PERIOD", c.FlushPeriod)
	p.Between("MSGX_SCHD_FLUSH_LIMIT", int64(c.FlushLimit), 1, 10000)
	p.Positive("MSGX_DISPATCH_SEND_WARN", c.SendWarn)
	p.Positive("MSGX_HEARTBEAT_PERIOD", c.HeartbeatPeriod)
	return p.Err()
}

func (c *Config) defaults() error {
	for _, d := range []*time.Duration{&c.Idle, &c.StatsPeriod, &c.ErrorWait, &c.SendWarn, &c.TailMargin, &c.HeartbeatPeriod} {
		*d = max(*d, 0)
	}
	envconf.FillZero(c)
	switch {
	case c.Batch < 1:
		return fmt.Errorf("dispatch: batch must be positive, got %d", c.Batch)
	case c.LagSample < 1:
		return fmt.Errorf("dispatch: lag sample must be positive, got %d", c.LagSample)
	case c.FlushLimit < 1:
		return fmt.Errorf("dispatch: flush limit must be positive, got %d", c.FlushLimit)
	case c.FlushPeriod <= 0:
		return fmt.Errorf("dispatch: flush period must be positive, got %s", c.FlushPeriod)
	case c.TopicChanges == "" || c.TopicState == "":
		return errors.New("dispatch: both topics must be set")
	}
	return nil
}

// ProductionRefusals are the dispatcher settings production refuses: the send-hold test hook.
func (c Config) ProductionRefusals() error {
	var p envconf.Problems
	if c.HoldFile != "" {
		p.Add("MSGX_DEV_HOLD_SEND", "a test hook; production refuses it")
	}
	return p.Err()
}
