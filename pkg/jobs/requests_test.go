package jobs_test

import (
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/mailbox"
	"github.com/msgx/msgx/pkg/request"
)

// TestJobsExpireAndSendRequests: the jobs stage's scheduler runs the request sweep every
// interval: a registered request is sent on the next tick, and expires at its timeout.
func TestJobsExpireAndSendRequests(t *testing.T) {
	t.Parallel()
	b := setup(t)
	box, err := mailbox.Open(b.mb.DSN)
	require.NoError(t, err)
	t.Cleanup(func() { _ = box.Close() })
	store, err := request.NewStore(b.db.Pool, request.Config{SweepInterval: time.Second, Sender: "MSGX", RoutingID: "AODB", Timeout: 10 * time.Minute, Location: time.UTC})
	require.NoError(t, err)
	sender, err := request.NewSender(store, box, b.clock, false)
	require.NoError(t, err)
	j := b.jobs(t).WithRequests(request.NewSweeper(store, sender, box, b.clock, nil, zerolog.Nop()), 5*time.Second)

	reg, err := store.Register(ctx, request.Spec{Kind: request.List, ListCode: "GLST", Origin: request.Bootstrap}, b.clock.Now())
	require.NoError(t, err)
	require.NoError(t, j.Tick(ctx, b.lease))
	got, err := store.Get(ctx, reg.Request.ID)
	require.NoError(t, err)
	require.Equal(t, request.Sent, got.Status, "the jobs stage sends registered requests")

	b.clock.Advance(10 * time.Minute)
	require.NoError(t, j.Tick(ctx, b.lease))
	got, err = store.Get(ctx, reg.Request.ID)
	require.NoError(t, err)
	require.Equal(t, request.Expired, got.Status, "and expires them at the timeout")
}
