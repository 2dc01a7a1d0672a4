package ingest

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/mailbox"
)

// switchedTrx reads the transaction list through a MySQL server nobody listens on while down is
// set, else through the ingest user's mailbox.
type switchedTrx struct {
	live, unreachable *mailbox.Mailbox
	down              atomic.Bool
}

func (s *switchedTrx) Transactions(ctx context.Context) (mailbox.TrxList, error) {
	if s.down.Load() {
		return s.unreachable.Transactions(ctx)
	}
	return s.live.Transactions(ctx)
}

// logCount is how often substr stands in the log.
func logCount(logs *lockedBuffer, substr string) int { return strings.Count(logs.String(), substr) }

// TestTransactionListFailuresLoggedOnChange: failed reads of the transaction list are each
// counted, but logged once when they start and once when a read answers again.
func TestTransactionListFailuresLoggedOnChange(t *testing.T) {
	unreachable, err := mailbox.Open("msgx:x@tcp(127.0.0.1:1)/msgx_mailbox")
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, unreachable.Close()) })
	src := &switchedTrx{unreachable: unreachable}
	src.down.Store(true)
	var logs lockedBuffer
	b := proofBundleWith(t, true, zerolog.New(&logs), func(box *mailbox.Mailbox) TrxSource {
		src.live = box
		return src
	})
	_, _, _, rollback, _ := b.heldGap(t)
	rollback()

	b.stepUntil(t, "three reads fail", func() bool { return b.proofReads(t, proofError) >= 3 })
	require.Equal(t, 1, logCount(&logs, "InnoDB transaction list not read"), "the first failure is logged, the others counted")
	require.Zero(t, logCount(&logs, "InnoDB transaction list read again"))

	src.down.Store(false)
	failed := b.proofReads(t, proofError)
	b.stepUntil(t, "a read answers again", func() bool {
		return b.proofReads(t, proofSettling)+b.proofReads(t, proofProved)+b.proofReads(t, proofBlocked) >= 1
	})
	require.Equal(t, failed, b.proofReads(t, proofError))
	require.Equal(t, 1, logCount(&logs, "InnoDB transaction list read again"))
	require.Equal(t, 1, logCount(&logs, "InnoDB transaction list not read"))
}
