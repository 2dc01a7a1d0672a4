package dispatch_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/msgx/msgx/pkg/dispatch"
	"github.com/msgx/msgx/pkg/kafka"
	"github.com/msgx/msgx/pkg/outbox"
)

// blockedSender holds every Send until release is closed, as a broker that does not answer.
type blockedSender struct {
	entered chan struct{}
	release chan struct{}
}

func (s *blockedSender) Send(_ context.Context, recs []kafka.Record) []error {
	close(s.entered)
	<-s.release
	return make([]error, len(recs))
}

func (s *blockedSender) Ping(context.Context) error { return nil }

const blockedLine = "kafka send blocked"

// TestSendWarningEndsWithTheSend: while a send waits, a warning is logged each time SendWarn
// passes on the dispatcher's clock; once the send has returned no warning follows, however far
// the clock moves, and the warning loop is gone with it. Not parallel: it checks that no
// goroutine outlives the send.
func TestSendWarningEndsWithTheSend(t *testing.T) {
	b := setup(t, options{})
	const warn = time.Minute
	logs := &syncBuffer{}
	s := &blockedSender{entered: make(chan struct{}), release: make(chan struct{})}
	disp, err := dispatch.New(dispatch.Config{
		Batch: 10, FlushPeriod: time.Second, FlushLimit: 10, SendWarn: warn,
		TopicChanges: b.kcfg.TopicChanges, TopicState: b.kcfg.TopicState,
	}, b.store, s, b.clock, prometheus.NewRegistry(), zerolog.New(logs))
	require.NoError(t, err)
	require.NoError(t, outbox.Enqueue(context.Background(), b.db.Pool, t0, msgEvent(1, 1)))
	before := goleak.IgnoreCurrent()

	done := make(chan error, 1)
	go func() {
		_, err := disp.StepMsg(context.Background(), b.lease)
		done <- err
	}()
	<-s.entered
	require.Zero(t, strings.Count(logs.String(), blockedLine), "no warning before SendWarn passed")
	require.Eventually(t, func() bool {
		b.clock.Advance(warn)
		return strings.Count(logs.String(), blockedLine) >= 2
	}, 10*time.Second, time.Millisecond, "a warning each time SendWarn passes while the send waits")

	close(s.release)
	require.NoError(t, <-done)
	warned := strings.Count(logs.String(), blockedLine)
	goleak.VerifyNone(t, before) // the warning loop ended with the send
	for range 10 {
		b.clock.Advance(warn)
	}
	require.Equal(t, warned, strings.Count(logs.String(), blockedLine), "no warning after the send returned")
}
