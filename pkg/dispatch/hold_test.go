package dispatch_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/dev/kafkatest"
	"github.com/msgx/msgx/pkg/dispatch"
	"github.com/msgx/msgx/pkg/outbox"
)

// TestHoldFile: the MSGX_DEV_HOLD_SEND test hook holds a send after its batch was read while the
// file exists, and sends once it is removed; a cancelled context releases it too, and the held
// batch is still sent (a send already on its way). Without the file nothing is held.
func TestHoldFile(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	ctx := context.Background()
	hold := filepath.Join(t.TempDir(), "hold")
	logs := &syncBuffer{}
	disp := b.dispatcher(t, dispatch.Config{FlushPeriod: time.Second, HoldFile: hold}, prometheus.NewRegistry(), zerolog.New(logs))

	require.NoError(t, outbox.Enqueue(ctx, b.db.Pool, t0, msgEvent(1, 1)))
	res, err := disp.StepMsg(ctx, b.lease)
	require.NoError(t, err)
	require.Equal(t, 1, res.Sent, "no hold file: sent at once")
	require.NotContains(t, logs.String(), "dev hold")

	for i, release := range []func(context.CancelFunc){
		func(context.CancelFunc) { require.NoError(t, os.Remove(hold)) },
		func(cancel context.CancelFunc) { cancel() },
	} {
		require.NoError(t, os.WriteFile(hold, nil, 0o644))
		require.NoError(t, outbox.Enqueue(ctx, b.db.Pool, t0, msgEvent(1, int64(i+2))))
		sctx, cancel := context.WithCancel(ctx)
		done := make(chan dispatch.Result, 1)
		go func() {
			res, _ := disp.StepMsg(sctx, b.lease)
			done <- res
		}()
		require.Eventually(t, func() bool { return strings.Count(logs.String(), "dev hold: send held") == i+1 }, 10*time.Second, 5*time.Millisecond)
		select {
		case <-done:
			require.FailNow(t, "the send was not held")
		case <-time.After(100 * time.Millisecond):
		}
		release(cancel)
		r := <-done
		cancel()
		require.Equal(t, 1, r.Claimed, "release %d", i)
		require.Equal(t, i+1, strings.Count(logs.String(), "dev hold: the held send was answered"))
	}
	// Both held batches reached Kafka (the second one's SENT mark needed the cancelled context:
	// it stays PENDING and goes again, at least once).
	require.Len(t, kafkatest.ConsumeAll(t, b.broker.Addrs(), b.kcfg.TopicChanges, time.Minute), 3)
	require.NotContains(t, logs.String(), `"answer"`, "the broker accepted both")
}
