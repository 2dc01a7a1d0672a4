package outbox

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/msgx/msgx/pkg/leader"
)

// SendState is the dispatcher leader's report of one target's sends (dispatch_send): what the
// operators' status reads to tell a frozen or unreachable broker from an idle outbox.
type SendState struct {
	Target string
	Topic  string
	// BlockedSince is when the sends to the topic started to be blocked or failing (zero: they
	// are not); Class and Error say why (Class is empty when BlockedSince is zero).
	BlockedSince time.Time
	Class, Error string
	// Brokers are the brokers concerned: those that did not answer a metadata request
	// (BrokersSilent), else the bootstrap list.
	Brokers       []string
	BrokersSilent bool
	LastSentAt    time.Time // the last send the broker acknowledged (zero: none yet)
	// StallAfter is how long a blocked send may last before readiness fails, and ReportEvery
	// how often the report is refreshed: the status judges the report by them.
	StallAfter, ReportEvery time.Duration
}

// ReportSends writes states at now under lease, in one transaction (leader.ErrFenced when lease
// is no longer the dispatcher role's current term: a deposed dispatcher reports nothing).
func (s *Store) ReportSends(ctx context.Context, lease leader.Lease, states []SendState, now time.Time) error {
	err := leader.Fenced(ctx, s.pool, lease, func(tx pgx.Tx) error {
		b := &pgx.Batch{}
		for _, st := range states {
			b.Queue(reportSendSQL, st.Target, st.Topic, lease.Epoch, nullTime(st.BlockedSince), nullText(st.Class),
				nullText(st.Error), st.Brokers, st.BrokersSilent, nullTime(st.LastSentAt), st.StallAfter, st.ReportEvery, now)
		}
		return tx.SendBatch(ctx, b).Close()
	})
	if err != nil {
		return fmt.Errorf("report sends: %w", err)
	}
	return nil
}

func nullTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

func nullText(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
