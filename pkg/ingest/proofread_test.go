package ingest

import (
	"bytes"
	"context"
	"strings"
	"sync"
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

// syncBuffer is a log sink safe for the Ingester's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) count(substr string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Count(s.b.String(), substr)
}

// TestTransactionListFailuresLoggedOnChange: failed reads of the transaction list are each
// counted, but logged once when they start and once when a read answers again.
func TestTransactionListFailuresLoggedOnChange(t *testing.T) {
	unreachable, err := mailbox.Open("msgx:x@tcp(127.0.0.1:1)/msgx_mailbox")
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, unreachable.Close()) })
	src := &switchedTrx{unreachable: unreachable}
	src.down.Store(true)
	var logs syncBuffer
	b := proofBundleWith(t, true, zerolog.New(&logs), func(box *mailbox.Mailbox) TrxSource {
		src.live = box
		return src
	})
	_, _, _, rollback, _ := b.heldGap(t)
	rollback()

	b.stepUntil(t, "three reads fail", func() bool { return b.proofReads(t, proofError) >= 3 })
	require.Equal(t, 1, logs.count("InnoDB transaction list not read"), "the first failure is logged, the others counted")
	require.Zero(t, logs.count("InnoDB transaction list read again"))

	src.down.Store(false)
	failed := b.proofReads(t, proofError)
	b.stepUntil(t, "a read answers again", func() bool {
		return b.proofReads(t, proofSettling)+b.proofReads(t, proofProved)+b.proofReads(t, proofBlocked) >= 1
	})
	require.Equal(t, failed, b.proofReads(t, proofError))
	require.Equal(t, 1, logs.count("InnoDB transaction list read again"))
	require.Equal(t, 1, logs.count("InnoDB transaction list not read"))
}
