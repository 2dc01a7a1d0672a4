package dispatch_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/msgx/msgx/pkg/sendclass"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/clock"
	"github.com/msgx/msgx/pkg/dev/kafkatest"
	"github.com/msgx/msgx/pkg/dispatch"
	"github.com/msgx/msgx/pkg/kafka"
	"github.com/msgx/msgx/pkg/leader"
)

// fakeProducer records what a term does with its producer.
type fakeProducer struct {
	mu         sync.Mutex
	checkErrs  []error             // answers of CheckTopics, in turn; then success
	checkInfos [][]kafka.TopicInfo // the topics found usable with each of checkErrs
	checks     int
	sent       int
	closed     bool
	answer     error         // every record's answer
	hold       chan struct{} // when set, a send waits until it is closed
	onCheck    func()        // when set, called at the start of every CheckTopics
}

func (p *fakeProducer) Send(_ context.Context, recs []kafka.Record) []error {
	p.mu.Lock()
	hold := p.hold
	p.mu.Unlock()
	if hold != nil {
		<-hold
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sent += len(recs)
	errs := make([]error, len(recs))
	for i := range errs {
		errs[i] = p.answer
	}
	return errs
}

func (p *fakeProducer) set(answer error, hold chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.answer, p.hold = answer, hold
}

func (p *fakeProducer) Ping(context.Context) error { return nil }

func (p *fakeProducer) CheckTopics(context.Context) ([]kafka.TopicInfo, error) {
	if p.onCheck != nil {
		p.onCheck()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.checks++
	if len(p.checkErrs) > 0 {
		err := p.checkErrs[0]
		p.checkErrs = p.checkErrs[1:]
		var infos []kafka.TopicInfo
		if len(p.checkInfos) > 0 {
			infos, p.checkInfos = p.checkInfos[0], p.checkInfos[1:]
		}
		return infos, err
	}
	names := kafkatest.Config(nil) // the topics newLink's links check
	return []kafka.TopicInfo{{Name: names.TopicChanges, Partitions: 1}, {Name: names.TopicState, Partitions: 1, CleanupPolicy: "compact"}}, nil
}

func (p *fakeProducer) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	return nil
}

// newLink returns a link whose Dial fails dialErrs times, then returns p.
func newLink(t *testing.T, dialErrs int64, p *fakeProducer) (*dispatch.Link, *atomic.Int64) {
	t.Helper()
	l, err := dispatch.NewLink(kafkatest.Config([]string{"127.0.0.1:1"}), time.Millisecond, zerolog.Nop())
	require.NoError(t, err)
	dials := &atomic.Int64{}
	l.Dial = func(kafka.Config) (dispatch.Producer, error) {
		if dials.Add(1) <= dialErrs {
			return nil, errors.New("connection refused")
		}
		return p, nil
	}
	return l, dials
}

// leads is the lease check of a term that still leads.
func leads(context.Context) error { return nil }

func sendOne(l *dispatch.Link) error {
	return l.Send(context.Background(), []kafka.Record{{Topic: "changes", Key: "1"}})[0]
}

// A term waits out an unreachable broker and a failing topic check, then works with the
// producer; after the term the producer is closed and sending fails until the next term.
func TestLinkTermRetriesThenWorks(t *testing.T) {
	t.Parallel()
	p := &fakeProducer{checkErrs: []error{errors.New("broker timeout"), errors.New("broker timeout")}}
	l, dials := newLink(t, 3, p)
	require.ErrorIs(t, sendOne(l), dispatch.ErrNoProducer, "before the term")
	require.ErrorIs(t, l.Ping(context.Background()), dispatch.ErrNoProducer)

	worked := false
	err := l.Term(context.Background(), leads, func(ctx context.Context) error {
		worked = true
		require.NoError(t, sendOne(l))
		require.NoError(t, l.Ping(ctx))
		return errors.New("fenced")
	})
	require.EqualError(t, err, "fenced", "the work's error ends the term")
	require.True(t, worked)
	require.Equal(t, int64(4), dials.Load(), "three refused dials, then one that connects")
	require.Equal(t, 3, p.checks, "two failed topic checks, then one that answers")
	require.Equal(t, 1, p.sent)
	require.True(t, p.closed, "the term's producer is closed with the term")
	require.ErrorIs(t, sendOne(l), dispatch.ErrNoProducer, "after the term")
}

// A term whose lease check fails after the producer is initialised (a newer leader took over
// meanwhile) never runs its work, and closes the producer.
func TestLinkTermChecksLeaseAfterDial(t *testing.T) {
	t.Parallel()
	p := &fakeProducer{}
	l, _ := newLink(t, 0, p)
	err := l.Term(context.Background(), func(context.Context) error { return leader.ErrFenced }, func(context.Context) error {
		t.Error("work must not run")
		return nil
	})
	require.ErrorIs(t, err, leader.ErrFenced)
	require.True(t, p.closed)
	require.Zero(t, p.checks, "the lease is checked before anything else")
}

// A broken producer (a send abandoned at its timeout) ends the work; the term dials a new
// producer, checks the lease again and resumes.
func TestLinkTermRedialsBrokenProducer(t *testing.T) {
	t.Parallel()
	p := &fakeProducer{}
	l, dials := newLink(t, 0, p)
	var leaseChecks, runs atomic.Int64
	err := l.Term(context.Background(), func(context.Context) error { leaseChecks.Add(1); return nil }, func(context.Context) error {
		if runs.Add(1) == 1 {
			return fmt.Errorf("step: %w", kafka.ErrBroken)
		}
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, int64(2), runs.Load())
	require.Equal(t, int64(2), dials.Load())
	require.Equal(t, int64(2), leaseChecks.Load())
}

// An unusable topic (missing, or the state topic not compacted) holds the work without ending
// the term: the gauge says which topic, and the check is asked again until the platform team's
// fix lands (readiness: cmd/dispatcher's TestNoTopicIsCreated, on a real broker).
func TestLinkHoldsUnusableTopic(t *testing.T) {
	t.Parallel()
	names := kafkatest.Config(nil)
	missing := &kafka.TopicError{Topic: names.TopicChanges, Err: fmt.Errorf("%w: changes", kafka.ErrTopicMissing)}
	deleting := &kafka.TopicError{Topic: names.TopicState, Err: fmt.Errorf("%w: state has cleanup.policy=delete", kafka.ErrTopicNotCompacted)}
	p := &fakeProducer{checkErrs: []error{errors.New("broker timeout"), errors.Join(missing, deleting), deleting},
		checkInfos: [][]kafka.TopicInfo{nil, nil, {{Name: names.TopicChanges, Partitions: 1}}}}
	l, _ := newLink(t, 0, p)
	gauges := func() string {
		var b strings.Builder
		for _, topic := range []string{names.TopicChanges, names.TopicState} {
			v, _ := gaugeValue(t, l, topic)
			fmt.Fprintf(&b, "%s=%v ", strings.TrimPrefix(topic, "msgx.flight."), v)
		}
		return b.String()
	}
	var seen []string // the gauges before each check: what the previous one left
	p.onCheck = func() { seen = append(seen, gauges()) }
	var during string
	err := l.Term(context.Background(), leads, func(context.Context) error {
		during = gauges()
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, "changes=0 state=0 ", during, "the work runs once the topics are usable")
	require.Len(t, seen, 4)
	require.Equal(t, "changes=-1 state=-1 ", seen[0])
	require.Equal(t, "changes=-1 state=-1 ", seen[1], "a broker timeout says nothing of the topics")
	require.Equal(t, "changes=1 state=1 ", seen[2])
	require.Equal(t, "changes=0 state=1 ", seen[3])
	require.Equal(t, "changes=-1 state=-1 ", gauges(), "a term that ended leaves no verdict behind")
}

// gaugeValue reads msgx_kafka_topic_unusable{topic} from the link (false, -1: not set).
func gaugeValue(t *testing.T, l *dispatch.Link, topic string) (float64, bool) {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(l))
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			if m.GetLabel()[0].GetValue() == topic {
				return m.GetGauge().GetValue(), true
			}
		}
	}
	return -1, false
}

// A term whose context ends while the broker is unreachable ends quietly, without work.
func TestLinkTermEndsWithContext(t *testing.T) {
	t.Parallel()
	l, dials := newLink(t, 1<<30, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- l.Term(ctx, leads, func(context.Context) error {
			t.Error("work must not run")
			return nil
		})
	}()
	require.Eventually(t, func() bool { return dials.Load() >= 3 }, 10*time.Second, time.Millisecond, "dialling again and again")
	cancel()
	require.NoError(t, <-done)
}

// Producer rule D3b is checked before anything connects.
func TestLinkRefusesD3Violation(t *testing.T) {
	t.Parallel()
	cfg := kafkatest.Config([]string{"127.0.0.1:1"})
	cfg.Version = "2.0.0"
	_, err := dispatch.NewLink(cfg, time.Second, zerolog.Nop())
	require.ErrorIs(t, err, dispatch.ErrRefused)
	require.Contains(t, err.Error(), "MSGX_KAFKA_VERSION: must be at least 2.1.0")
}

// With a real broker, a term connects, checks the topics and sends.
func TestLinkTermWithBroker(t *testing.T) {
	t.Parallel()
	b, kcfg := kafkatest.Broker(t)
	l, err := dispatch.NewLink(kcfg, 10*time.Millisecond, zerolog.Nop())
	require.NoError(t, err)
	require.NoError(t, l.Term(context.Background(), leads, func(ctx context.Context) error {
		return l.Send(ctx, []kafka.Record{{Topic: kcfg.TopicChanges, Key: "7", Value: []byte("v")}})[0]
	}))
	recs := kafkatest.Consume(t, b.Addrs(), kcfg.TopicChanges, 1, time.Minute)
	require.Equal(t, "7", recs[0].Key)
}

// TestLinkReady: readiness fails while the leader's term cannot produce — its last batch was
// refused by the cluster, or a send has waited longer than StallAfter — although a broker
// answers metadata, and passes again once a send succeeds; a standby answers by the probe only.
func TestLinkReady(t *testing.T) {
	t.Parallel()
	_, cfg := kafkatest.Broker(t)
	l, err := dispatch.NewLink(cfg, time.Millisecond, zerolog.Nop())
	require.NoError(t, err)
	clk := clock.NewFake(time.Date(2026, 12, 4, 8, 0, 0, 0, time.UTC))
	l.Clock = clk
	p := &fakeProducer{}
	l.Dial = func(kafka.Config) (dispatch.Producer, error) { return p, nil }
	ctx := context.Background()
	require.NoError(t, l.Ready(ctx), "a standby: the probe passes")

	require.NoError(t, l.Term(ctx, leads, func(context.Context) error {
		require.NoError(t, sendOne(l))
		require.NoError(t, l.Ready(ctx))

		p.set(&kafka.Error{Op: "produce", Err: syscall.ECONNREFUSED}, nil)
		require.Error(t, sendOne(l))
		require.ErrorIs(t, l.Ready(ctx), syscall.ECONNREFUSED, "the cluster refused the batch: not ready")

		p.set(nil, nil)
		require.NoError(t, sendOne(l))
		require.NoError(t, l.Ready(ctx), "a send succeeded: ready again")

		hold := make(chan struct{})
		p.set(nil, hold)
		done := make(chan error, 1)
		go func() { done <- sendOne(l) }()
		require.Eventually(t, func() bool {
			clk.Advance(time.Second)
			return l.Ready(ctx) != nil
		}, 10*time.Second, 10*time.Millisecond, "a send stalled past StallAfter: not ready")
		close(hold)
		require.NoError(t, <-done)
		require.NoError(t, l.Ready(ctx))

		p.set(&kafka.Error{Op: "produce", Err: syscall.ECONNREFUSED}, nil)
		require.Error(t, sendOne(l))
		require.Error(t, l.Ready(ctx))
		return nil
	}))
	require.NoError(t, l.Ready(ctx), "the term ended: a standby again")
}

// Blocked dates a failure from the send that met it: a send the broken producer abandoned, the
// redial that finds no broker, the new term starting all keep that time and say why; the new
// term that can produce is not blocked, and an acknowledged send is the topic's last one.
func TestLinkBlockedSinceTheFirstFailure(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 12, 4, 8, 0, 0, 0, time.UTC)
	clk := clock.NewFake(t0)
	p := &fakeProducer{}
	l, err := dispatch.NewLink(kafkatest.Config([]string{"127.0.0.1:1"}), time.Millisecond, zerolog.Nop())
	require.NoError(t, err)
	l.Clock = clk
	var dials atomic.Int64
	var whileDialling []dispatch.Blocked
	l.Dial = func(kafka.Config) (dispatch.Producer, error) {
		clk.Advance(time.Second)
		if n := dials.Add(1); n == 2 || n == 3 {
			whileDialling = append(whileDialling, *l.Blocked("changes", clk.Now()))
			return nil, errors.New("connection refused")
		}
		return p, nil
	}
	var runs atomic.Int64
	require.NoError(t, l.Term(context.Background(), leads, func(context.Context) error {
		if runs.Add(1) == 1 {
			require.Nil(t, l.Blocked("", clk.Now()), "the term can produce")
			p.set(fmt.Errorf("send abandoned: %w", kafka.ErrBroken), nil)
			require.Error(t, sendOne(l))
			clk.Advance(time.Second)
			b := l.Blocked("changes", clk.Now())
			require.NotNil(t, b)
			require.Equal(t, sendclass.Broken, b.Class)
			require.Equal(t, t0.Add(time.Second), b.Since, "since the send started")
			return fmt.Errorf("step: %w", kafka.ErrBroken)
		}
		require.Nil(t, l.Blocked("changes", clk.Now()), "the new term can produce")
		p.set(nil, nil)
		require.NoError(t, sendOne(l))
		require.Equal(t, clk.Now(), l.LastSent("changes"))
		return nil
	}))
	require.Len(t, whileDialling, 2)
	require.Equal(t, sendclass.Starting, whileDialling[0].Class, "the new term starts")
	require.Equal(t, sendclass.Unreachable, whileDialling[1].Class, "its first dial failed")
	for _, b := range whileDialling {
		require.Equal(t, t0.Add(time.Second), b.Since, "%s: since the abandoned send", b.Class)
	}
}
