package request_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/mailbox"
	"github.com/msgx/msgx/pkg/request"
	"github.com/msgx/msgx/pkg/sis"
)

// The MySQL adapter is the sender's outbound mailbox, with the look-up of recent rows that the
// sender finds by a type assertion (a drifted signature would silently skip it).
var (
	_ request.Outbox       = (*mailbox.Mailbox)(nil)
	_ request.RecentOutbox = (*mailbox.Mailbox)(nil)
)

// loseTail makes PostgreSQL forget every request registered after keep and the counter's
// advances since, as a standby promoted without the old primary's last transactions does;
// coutmsgs (MySQL) keeps its rows.
func (b *bundle) loseTail(t *testing.T, keep int64, seqn int) {
	t.Helper()
	_, err := b.pg.Pool.Exec(ctx, `DELETE FROM req_open_day WHERE req_id > $1`, keep)
	require.NoError(t, err)
	_, err = b.pg.Pool.Exec(ctx, `DELETE FROM req_track WHERE req_id > $1`, keep)
	require.NoError(t, err)
	_, err = b.pg.Pool.Exec(ctx, `UPDATE req_seqn SET last = $1`, seqn)
	require.NoError(t, err)
}

func seqnOf(t *testing.T, text string) string {
	t.Helper()
	m, err := sis.Decode([]byte(text), sis.Options{Location: shanghai})
	require.NoError(t, err)
	return m.Meta.SEQN
}

// A request sent to coutmsgs whose req_track row the failover lost is not sent again when the
// same request is registered anew: the new request adopts the row (its SEQN and DTTM, so the
// AODB's answer matches). A different request does not reuse the lost request's SEQN.
func TestRequestsAfterALostTail(t *testing.T) {
	t.Parallel()
	b := setup(t)
	lost, err := b.store.Register(ctx, days(2, 3), b.clock.Now())
	require.NoError(t, err)
	_, err = b.sender.Send(ctx, lost.Request.ID)
	require.NoError(t, err)
	b.loseTail(t, 0, 0)

	b.clock.Advance(time.Minute)
	again, err := b.store.Register(ctx, days(2, 3), b.clock.Now())
	require.NoError(t, err)
	out, err := b.sender.Send(ctx, again.Request.ID)
	require.NoError(t, err)
	require.True(t, out.Found, "the lost request's coutmsgs row is adopted")
	require.Len(t, b.outRows(t), 1, "the request is not sent again")
	got, err := b.store.Get(ctx, again.Request.ID)
	require.NoError(t, err)
	require.Equal(t, request.Sent, got.Status)
	require.Equal(t, lost.Request.XML, got.XML, "the request carries the sent row's META (SEQN and DTTM)")

	// Another request registered on the regressed counter gets a SEQN the mailbox shows in use.
	b.loseTail(t, 0, 0)
	other, err := b.store.Register(ctx, days(5, 6), b.clock.Now())
	require.NoError(t, err)
	require.Equal(t, 1, other.Request.SEQN, "the regressed counter")
	_, err = b.sender.Send(ctx, other.Request.ID)
	require.NoError(t, err)
	rows := b.outRows(t)
	require.Len(t, rows, 2)
	require.NotEqual(t, seqnOf(t, rows[0].text), seqnOf(t, rows[1].text), "no SEQN reused for another request")
	got, err = b.store.Get(ctx, other.Request.ID)
	require.NoError(t, err)
	require.Equal(t, rows[1].text, got.XML)
	require.Equal(t, 2, got.SEQN)
}
