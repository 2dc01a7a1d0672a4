package dispatch

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/msgx/msgx/pkg/sendclass"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/msgx/msgx/pkg/backoff"
	"github.com/msgx/msgx/pkg/clock"
	"github.com/msgx/msgx/pkg/kafka"
)

// ErrRefused marks what the dispatcher refuses to work with: a producer configuration that
// breaks rule D3b. The binary exits with code 2.
var ErrRefused = errors.New("refusing to start")

// errTermStarting is the readiness answer of a term that has not yet dialled and checked the
// topics.
var errTermStarting = errors.New("kafka: the leader's term is starting (dial, lease check, topic check)")

// ErrNoProducer answers every record sent between leadership terms.
var ErrNoProducer = errors.New("kafka producer not connected")

// Producer is the Kafka producer of one leadership term: kafka.Producer in production.
type Producer interface {
	Sender
	// CheckTopics describes the configured topics (kafka.ErrTopicMissing when one is absent,
	// kafka.ErrTopicNotCompacted when the state topic is not compacted).
	CheckTopics(ctx context.Context) ([]kafka.TopicInfo, error)
	Close() error
}

var _ Producer = (*kafka.Producer)(nil)

// maxRetryWait caps the wait between two attempts to reach the brokers.
const maxRetryWait = 30 * time.Second

// defaultStallAfter is how long a send may wait for the brokers before readiness fails: far
// longer than a healthy transaction takes, shorter than the send timeout.
const defaultStallAfter = 5 * time.Second

// Link is the dispatcher's connection to Kafka across leadership terms. It is the Dispatcher's
// Sender: each term (Term) dials a new producer (initialising its transactional producers, which
// fences every older producer of the same transactional ids), checks that this instance still
// leads, checks the topics and installs the producer for the term's work; between terms every
// Send fails with ErrNoProducer. An unreachable broker delays the work (retried with a doubling
// wait), it does not end the process. So does a topic the check refuses (missing, or the state
// topic not compacted): nothing is published until the platform team fixes it, readiness fails
// with the check's error, msgx_kafka_topic_unusable names the topic, and the check is asked
// again, so the fix needs no restart.
//
// The lease check after dialling orders the Kafka fence like the PostgreSQL one: a deposed
// leader that initialises its producer after the new leader took the lease fails the check and
// never sends; one that initialised before is fenced by the new leader's initialisation.
//
// When the work ends because the producer broke (kafka.ErrBroken: a send abandoned at its
// timeout, a transaction its coordinator could not finish), the term closes it and dials a new
// one (after a wait that doubles while producers keep breaking before any send succeeds),
// checks the lease again, and resumes.
//
// The Link also answers the dispatcher's readiness (Ready): whether Kafka can take its records.
type Link struct {
	cfg   kafka.Config
	retry time.Duration
	log   zerolog.Logger
	// Dial opens a producer (kafka.Dial); tests replace it.
	Dial func(kafka.Config) (Producer, error)
	// Clock times the sends for Ready (the system clock; tests replace it).
	Clock clock.Clock
	// StallAfter is how long a send may wait for the brokers before Ready fails.
	StallAfter time.Duration

	current atomic.Pointer[Producer]

	mu sync.Mutex
	// down is why the current term cannot produce and since when (nil: it can, or no term runs).
	down *Blocked
	// brokenWait is the wait before dialling again after a broken producer (0: none).
	brokenWait time.Duration
	inflight   map[int64]sending    // every unanswered send
	lastOK     map[string]time.Time // per topic, the last send the broker acknowledged
	nextSend   int64

	unusable *prometheus.GaugeVec // per configured topic: 1 while the topic check refuses it
}

// Describe and Collect make the Link a Prometheus collector of msgx_kafka_topic_unusable.
func (l *Link) Describe(ch chan<- *prometheus.Desc) { l.unusable.Describe(ch) }
func (l *Link) Collect(ch chan<- prometheus.Metric) { l.unusable.Collect(ch) }

// noteTopics records a topic check's outcome in msgx_kafka_topic_unusable: 1 for a topic it
// refused, 0 for one it found usable; a topic it could not decide (no broker answered) keeps its
// value.
func (l *Link) noteTopics(infos []kafka.TopicInfo, err error) {
	for _, t := range kafka.UnusableTopics(err) {
		l.unusable.WithLabelValues(t).Set(1)
	}
	for _, in := range infos {
		l.unusable.WithLabelValues(in.Name).Set(0)
	}
}

var _ Sender = (*Link)(nil)

// NewLink returns the link for cfg; retry is the first wait after a failed attempt. A
// configuration that breaks producer rule D3b is refused (ErrRefused) before anything connects.
func NewLink(cfg kafka.Config, retry time.Duration, log zerolog.Logger) (*Link, error) {
	if err := kafka.VerifyD3(cfg); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrRefused, err)
	}
	if retry <= 0 {
		return nil, fmt.Errorf("dispatch: link retry must be positive, got %s", retry)
	}
	return &Link{
		cfg: cfg, retry: retry, log: log,
		Dial:  func(c kafka.Config) (Producer, error) { return kafka.Dial(c) },
		Clock: clock.System{}, StallAfter: defaultStallAfter,
		inflight: map[int64]sending{}, lastOK: map[string]time.Time{},
		unusable: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "msgx_kafka_topic_unusable",
			Help: "1 while the leader's topic check refuses the topic (missing, or the state topic not compacted): nothing is published until it is fixed.",
		}, []string{"topic"}),
	}, nil
}

// Term runs one leadership term's work with a connected producer: it dials until a broker
// answers, runs leads (an error ends the term with it: leader.ErrFenced), checks the topics
// (asking again while the brokers do not answer or a topic is unusable), installs the producer,
// runs work and closes the producer when work returns. It returns nil without running work
// when ctx ends first.
func (l *Link) Term(ctx context.Context, leads func(context.Context) error, work func(context.Context) error) error {
	for {
		err := l.term(ctx, leads, work)
		if !errors.Is(err, kafka.ErrBroken) || ctx.Err() != nil {
			l.clearDown() // no term: only the probe answers for readiness
			return err
		}
		l.setDown(sendclass.Broken, err, l.Clock.Now())
		l.mu.Lock()
		l.brokenWait = backoff.Next(l.brokenWait, l.retry, maxRetryWait)
		wait := l.brokenWait
		l.mu.Unlock()
		l.log.Warn().Err(err).Dur("retry_in", wait).Msg("kafka producer broken; dialling a new one")
		if !clock.WallSleep(ctx, wait) {
			return nil
		}
	}
}

func (l *Link) term(ctx context.Context, leads func(context.Context) error, work func(context.Context) error) error {
	// Not ready until this term can produce: dialled, still leading, the topics usable.
	l.setDown(sendclass.Starting, errTermStarting, l.Clock.Now())
	// The gauges are the leader's: a term that ends leaves no verdict behind.
	defer l.unusable.Reset()
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
		l.current.Store(nil) // Term says whether the link is down meanwhile
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
		l.noteTopics(infos, err)
		return err
	})
	if !ok {
		return err
	}
	for _, in := range infos {
		l.log.Info().Str("topic", in.Name).Int("partitions", in.Partitions).Str("cleanup_policy", in.CleanupPolicy).Msg("kafka topic checked")
	}
	l.clearDown()
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
		class := sendclass.Unreachable
		if kafka.Unusable(err) {
			class = sendclass.Topic
		}
		l.setDown(class, fmt.Errorf("%s: %w", what, err), l.Clock.Now())
		ev := l.log.Warn()
		if kafka.Unusable(err) {
			ev = l.log.Error() // the platform team's fix is needed: nothing is published meanwhile
		}
		ev.Err(err).Strs("brokers", l.cfg.Brokers).Dur("retry_in", wait).Msg(what)
		if !clock.WallSleep(ctx, wait) {
			return false, nil
		}
		wait = backoff.Next(wait, l.retry, maxRetryWait)
	}
}

// Send sends with the current term's producer, noting for Ready whether Kafka took records.
func (l *Link) Send(ctx context.Context, recs []kafka.Record) []error {
	p := l.current.Load()
	if p == nil {
		errs := make([]error, len(recs))
		for i := range errs {
			errs[i] = ErrNoProducer
		}
		return errs
	}
	topic := ""
	if len(recs) > 0 {
		topic = recs[0].Topic
	}
	id := l.started(topic)
	errs := (*p).Send(ctx, recs)
	l.answered(id, errs)
	return errs
}

// started records a send's start for Ready and returns its id.
func (l *Link) started(topic string) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.nextSend++
	l.inflight[l.nextSend] = sending{at: l.Clock.Now(), topic: topic}
	return l.nextSend
}

// answered records a send's answers: one record acknowledged means Kafka takes records (and
// ends the doubling of the redial wait); a batch the cluster refused (kafka.Unavailable) means
// it cannot, since the send started, until a send succeeds again.
func (l *Link) answered(id int64, errs []error) {
	l.mu.Lock()
	s := l.inflight[id]
	delete(l.inflight, id)
	l.mu.Unlock()
	for _, err := range errs {
		if err == nil {
			l.mu.Lock()
			l.down, l.brokenWait = nil, 0
			l.lastOK[s.topic] = l.Clock.Now()
			l.mu.Unlock()
			return
		}
	}
	for _, err := range errs {
		if kafka.Unavailable(err) {
			class := sendclass.Refused
			if errors.Is(err, kafka.ErrBroken) {
				class = sendclass.Broken
			}
			l.setDown(class, fmt.Errorf("kafka cannot take records: %w", err), s.at)
			return
		}
	}
}

// setDown records that the term cannot produce, for class and err, since at, or since it went
// down when it already was.
func (l *Link) setDown(class string, err error, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	since := at
	if l.down != nil && l.down.Since.Before(at) {
		since = l.down.Since
	}
	l.down = &Blocked{Class: class, Err: err, Since: since}
}

// clearDown records that the term can produce, or that no term runs.
func (l *Link) clearDown() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.down = nil
}

// Ready is the dispatcher's readiness check of Kafka. It fails when no broker answers a
// metadata request within the check timeout (kafka.Probe), and, while this instance leads,
// when its term cannot produce (Blocked).
func (l *Link) Ready(ctx context.Context) error {
	if err := kafka.Probe(ctx, l.cfg, l.cfg.CheckTimeout); err != nil {
		return err
	}
	if b := l.Blocked("", l.Clock.Now()); b != nil {
		return b
	}
	return nil
}

// Blocked is why the term's sends are blocked or failing (Class, Err) and since when.
type Blocked struct {
	Class string
	Err   error
	Since time.Time
}

func (b *Blocked) Error() string { return b.Err.Error() }
func (b *Blocked) Unwrap() error { return b.Err }

// sending is one unanswered send: when it started and the topic of its records.
type sending struct {
	at    time.Time
	topic string
}

// Blocked says whether the term's sends to topic ("": any topic) are blocked at now: the term
// cannot produce (no producer dialled, the cluster refused the last send and none has succeeded
// since, a broken producer, a topic refused, the term starting), or a send has waited longer
// than StallAfter. Nil: they are not (or no term runs). It is the one judgement behind Ready
// and the dispatcher's report of its sends (Reporter).
func (l *Link) Blocked(topic string, now time.Time) *Blocked {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.down != nil {
		b := *l.down // the caller keeps a copy
		return &b
	}
	var oldest time.Time
	for _, s := range l.inflight {
		if (topic == "" || s.topic == topic) && (oldest.IsZero() || s.at.Before(oldest)) {
			oldest = s.at
		}
	}
	if waited := now.Sub(oldest); !oldest.IsZero() && waited > l.StallAfter {
		return &Blocked{Class: sendclass.Stalled, Since: oldest,
			Err: fmt.Errorf("kafka send waiting for the brokers for %s", waited.Round(time.Millisecond))}
	}
	return nil
}

// LastSent is when the broker last acknowledged a send to topic (zero: not since the process
// started).
func (l *Link) LastSent(topic string) time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lastOK[topic]
}

// Ping asks the current term's producer whether a broker answers. The dispatcher pings after a
// batch failed whole: when no broker answers, the term cannot produce until a send succeeds.
func (l *Link) Ping(ctx context.Context) error {
	p := l.current.Load()
	if p == nil {
		return ErrNoProducer
	}
	err := (*p).Ping(ctx)
	if err != nil {
		l.setDown(sendclass.Unreachable, fmt.Errorf("a batch failed and no broker answers: %w", err), l.Clock.Now())
	}
	return err
}
