package status

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/msgx/msgx/pkg/sendclass"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Send is the dispatcher leader's report of one target's sends to Kafka (dispatch_send, written
// by pkg/dispatch's Reporter), ages as of the snapshot.
type Send struct {
	Target string `json:"target"`
	Topic  string `json:"topic"`
	Epoch  int64  `json:"epoch"`
	// BlockedFor is how long the sends have been blocked or failing (nil: they are not), Class
	// and Error why (pkg/dispatch's Blocked).
	BlockedFor *float64 `json:"blocked_seconds,omitempty"`
	Class      string   `json:"class,omitempty"`
	Error      string   `json:"error,omitempty"`
	// Brokers are the brokers concerned: those that did not answer the dispatcher's metadata
	// request (BrokersSilent), else its bootstrap list.
	Brokers       []string   `json:"brokers"`
	BrokersSilent bool       `json:"brokers_silent"`
	LastSentAt    *time.Time `json:"last_sent_at,omitempty"`
	// StallAfter is the dispatcher's own bound on a blocked send (its readiness fails beyond it),
	// ReportEvery how often it refreshes the report, ReportAge the report's age.
	StallAfter  float64 `json:"stall_after_seconds"`
	ReportEvery float64 `json:"report_every_seconds"`
	ReportAge   float64 `json:"report_age_seconds"`
}

// reportsMissed is how many of the dispatcher's report periods may pass without a report before
// its send state is unknown: one write may fail or wait, a third missed one is a pattern.
const reportsMissed = 3

// Blocked reports whether the sends have been blocked for longer than the dispatcher's own
// bound (StallAfter, as the dispatcher recorded it: the one threshold).
func (x Send) Blocked() bool { return x.BlockedFor != nil && *x.BlockedFor > x.StallAfter }

// Stale reports whether the report is older than reportsMissed report periods: the dispatcher
// is gone, paused or cannot write, and its send state is unknown.
func (x Send) Stale() bool { return x.ReportAge > reportsMissed*x.ReportEvery }

// readSends reads the dispatcher's reports into s.
func (s *Snapshot) readSends(ctx context.Context, pool *pgxpool.Pool, now time.Time) error {
	rows, err := pool.Query(ctx, sendsSQL)
	if err != nil {
		return fmt.Errorf("read dispatcher sends: %w", err)
	}
	var (
		x                 Send
		since, reported   *time.Time
		stallAfter, every time.Duration
		class, errText    *string
	)
	if _, err := pgx.ForEachRow(rows, []any{&x.Target, &x.Topic, &x.Epoch, &since, &class, &errText, &x.Brokers,
		&x.BrokersSilent, &x.LastSentAt, &stallAfter, &every, &reported}, func() error {
		y := x
		y.Class, y.Error = deref(class), deref(errText)
		if since != nil {
			b := max(0, now.Sub(*since).Seconds())
			y.BlockedFor = &b
		}
		y.StallAfter, y.ReportEvery = stallAfter.Seconds(), every.Seconds()
		y.ReportAge = max(0, now.Sub(*reported).Seconds())
		s.Sends = append(s.Sends, y)
		return nil
	}); err != nil {
		return fmt.Errorf("read dispatcher sends: %w", err)
	}
	return nil
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// SendProblems are the verdict's reasons from the dispatcher's reports of its sends: a target
// with events waiting whose sends have been blocked longer than the dispatcher's bound names the
// brokers, the topic and the events waiting; a report older than reportsMissed periods says the
// dispatcher's send state is unknown instead of calling the sends healthy.
func (s Snapshot) SendProblems() []string {
	pending := map[string]int64{}
	for _, t := range s.Outbox {
		pending[t.Target] = t.Pending
	}
	var out []string
	for _, x := range s.Sends {
		switch {
		case x.Stale():
			out = append(out, fmt.Sprintf("dispatcher's send state unknown for %s: its last report is %s old (it reports every %s)",
				x.Topic, secs(x.ReportAge), secs(x.ReportEvery)))
		case x.Blocked() && pending[x.Target] > 0:
			out = append(out, fmt.Sprintf("%s for %s: %d events waiting (%s)%s", x.what(), secs(*x.BlockedFor), pending[x.Target], x.Topic, prefixed(": ", x.Error)))
		}
	}
	return out
}

// what says what blocks the sends, naming the brokers.
func (x Send) what() string {
	brokers := strings.Join(x.Brokers, ", ")
	noun := "Kafka broker"
	if len(x.Brokers) > 1 {
		noun = "Kafka brokers"
	}
	switch {
	case x.BrokersSilent:
		return fmt.Sprintf("%s %s not answering", noun, brokers)
	case x.Class == sendclass.Refused:
		return fmt.Sprintf("%s %s refusing the records", noun, brokers)
	case x.Class == sendclass.Topic:
		return fmt.Sprintf("Kafka topic %s unusable (%s %s)", x.Topic, strings.ToLower(noun), brokers)
	case x.Class == sendclass.Tail:
		return fmt.Sprintf("Kafka topics' tail not read, nothing sent (%s %s)", strings.ToLower(noun), brokers)
	}
	return fmt.Sprintf("Kafka sends blocked (%s, %s %s answer metadata requests)", x.Class, strings.ToLower(noun), brokers)
}
