package dispatch

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/msgx/msgx/pkg/backoff"
	"github.com/msgx/msgx/pkg/clock"
	"github.com/msgx/msgx/pkg/kafka"
)

// ErrRefused marks what the dispatcher refuses to work with: a producer configuration that
// breaks rule D3, or a configured topic missing on the cluster. The binary exits with code 2.
var ErrRefused = errors.New("refusing to start")

// ErrNoProducer answers every record sent between leadership terms.
var ErrNoProducer = errors.New("kafka producer not connected")

// Producer is the Kafka producer of one leadership term: kafka.Producer in production.
type Producer interface {
	Sender
	// CheckTopics describes the configured topics (kafka.ErrTopicMissing when one is absent).
	CheckTopics(ctx context.Context) ([]kafka.TopicInfo, error)
	Close() error
}

var _ Producer = (*kafka.Producer)(nil)

// maxRetryWait caps the wait between two attempts to reach the brokers.
const maxRetryWait = 30 * time.Second

// Link is the dispatcher's connection to Kafka across leadership terms. It is the Dispatcher's
// Sender: each term (Term) dials a new producer (initialising its transactional producers, which
// fences every older producer of the same transactional ids), checks that this instance still
// leads, checks the topics and installs the producer for the term's work; between terms every
// Send fails with ErrNoProducer. An unreachable broker delays the work (retried with a doubling
// wait), it does not end the process; a missing topic refuses the work.
//
// The lease check after dialling orders the Kafka fence like the PostgreSQL one: a deposed
// leader that initialises its producer after the new leader took the lease fails the check and
// never sends; one that initialised before is fenced by the new leader's initialisation.
//
// When the work ends because the producer broke (kafka.ErrBroken: a send abandoned at its
// timeout), the term closes it and dials a new one, checks the lease again, and resumes.
type Link struct {
	cfg   kafka.Config
	retry time.Duration
	log   zerolog.Logger
	// Dial opens a producer (kafka.Dial); tests replace it.
	Dial func(kafka.Config) (Producer, error)

	current atomic.Pointer[Producer]
}

var _ Sender = (*Link)(nil)

// NewLink returns the link for cfg; retry is the first wait after a failed attempt. A
// configuration that breaks producer rule D3 is refused (ErrRefused) before anything connects.
func NewLink(cfg kafka.Config, retry time.Duration, log zerolog.Logger) (*Link, error) {
	if err := kafka.VerifyD3(cfg); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrRefused, err)
	}
	if retry <= 0 {
		return nil, fmt.Errorf("dispatch: link retry must be positive, got %s", retry)
	}
	return &Link{
		cfg: cfg, retry: retry, log: log,
		Dial: func(c kafka.Config) (Producer, error) { return kafka.Dial(c) },
	}, nil
}

// Term runs one leadership term's work with a connected producer: it dials until a broker
// answers, runs leads (an error ends the term with it: leader.ErrFenced), checks the topics
// (asking again while the brokers do not answer), installs the producer, runs work and closes
// the producer when work returns. It returns nil without running work when ctx ends first, and
// an ErrRefused error when a topic is missing.
func (l *Link) Term(ctx context.Context, leads func(context.Context) error, work func(context.Context) error) error {
	for {
		err := l.term(ctx, leads, work)
		if !errors.Is(err, kafka.ErrBroken) || ctx.Err() != nil {
			return err
		}
		l.log.Warn().Err(err).Msg("kafka producer broken; dialling a new one")
	}
}

func (l *Link) term(ctx context.Context, leads func(context.Context) error, work func(context.Context) error) error {
	var p Producer
	ok, err := l.attempt(ctx, "kafka not reachable", func() error {
		var err error
		p, err = l.Dial(l.cfg)
		return err
	})
	if !ok {
		return err
	}
	defer func() {
		l.current.Store(nil)
		if err := p.Close(); err != nil {
			l.log.Warn().Err(err).Msg("kafka producer close")
		}
	}()
	if err := leads(ctx); err != nil {
		return fmt.Errorf("lease check after producer initialisation: %w", err)
	}
	var infos []kafka.TopicInfo
	ok, err = l.attempt(ctx, "kafka topic check failed", func() error {
		var err error
		infos, err = p.CheckTopics(ctx)
		if errors.Is(err, kafka.ErrTopicMissing) {
			return fmt.Errorf("%w: topic check: %w", ErrRefused, err)
		}
		return err
	})
	if !ok {
		return err
	}
	for _, in := range infos {
		ev := l.log.Info()
		if in.Name == l.cfg.TopicState && in.CleanupPolicy != "" && in.CleanupPolicy != "compact" {
			ev = l.log.Warn().Str("want", "compact")
		}
		ev.Str("topic", in.Name).Int("partitions", in.Partitions).Str("cleanup_policy", in.CleanupPolicy).Msg("kafka topic checked")
	}
	l.current.Store(&p)
	return work(ctx)
}

// attempt runs op until it succeeds (true), is refused (false, the error) or ctx ends (false,
// nil), waiting retry, then twice as long each time, up to maxRetryWait.
func (l *Link) attempt(ctx context.Context, what string, op func() error) (bool, error) {
	wait := l.retry
	for {
		err := op()
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, ErrRefused):
			return false, err
		}
		l.log.Warn().Err(err).Strs("brokers", l.cfg.Brokers).Dur("retry_in", wait).Msg(what)
		if !clock.WallSleep(ctx, wait) {
			return false, nil
		}
		wait = backoff.Next(wait, l.retry, maxRetryWait)
	}
}

// Send sends with the current term's producer.
func (l *Link) Send(ctx context.Context, recs []kafka.Record) []error {
	p := l.current.Load()
	if p == nil {
		errs := make([]error, len(recs))
		for i := range errs {
			errs[i] = ErrNoProducer
		}
		return errs
	}
	return (*p).Send(ctx, recs)
}

// Ping asks the current term's producer whether a broker answers.
func (l *Link) Ping(ctx context.Context) error {
	p := l.current.Load()
	if p == nil {
		return ErrNoProducer
	}
	return (*p).Ping(ctx)
}
