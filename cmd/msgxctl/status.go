package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/msgx/msgx/pkg/config"
	"github.com/msgx/msgx/pkg/status"
)

func init() {
	register("status", command{summary: "verdict, watermark, gaps, head, backlog, dead letters, markers, leaders, dispatcher lag, Kafka sends", run: statusCmd})
}

// statusDoc is status's --json: the snapshot, each leader with whether it is stale (not renewed
// within MSGX_LEADER_SESSION_TIMEOUT), as the text marks it, and the verdict the console shows.
type statusDoc struct {
	status.Snapshot
	Leaders []statusLeader `json:"leaders"`
	Verdict status.Verdict `json:"verdict"`
}

type statusLeader struct {
	status.Leader
	Stale bool `json:"stale"`
}

func statusCmd(ctx context.Context, cfg config.Config, args []string, out io.Writer) error {
	fs, asJSON := flags("status", "[--json]", `Shows the pipeline at a glance: the verdict the console shows (healthy, degraded or stopped,
with its reasons), watermark, gaps, head, backlog, dead letters, markers, leaders (STALE,
"stale": true, when not renewed within MSGX_LEADER_SESSION_TIMEOUT), the dispatcher lag of each
target (none when the outbox holds no pending or dead event) and the dispatcher's report of its
sends to Kafka per target (BLOCKED since when, why and the brokers; UNKNOWN when the report is
stale).`, out)
	if err := fs.NoArgs(args); err != nil {
		return err
	}
	pool, err := openPool(ctx, cfg)
	if err != nil {
		return err
	}
	defer pool.Close()
	s, err := status.Read(ctx, pool, time.Now())
	if err != nil {
		return err
	}
	doc := statusDoc{Snapshot: s, Verdict: s.Verdict(cfg.Leader.SessionTimeout)}
	for _, l := range s.Leaders {
		doc.Leaders = append(doc.Leaders, statusLeader{Leader: l, Stale: l.Stale(cfg.Leader.SessionTimeout)})
	}
	if *asJSON {
		return writeJSON(out, cfg.Location(), doc)
	}
	return statusText(out, cfg, doc)
}

// statusText is status's human form: one line per subject.
func statusText(out io.Writer, cfg config.Config, s statusDoc) error {
	loc := cfg.Location()
	w := tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
	fmt.Fprintf(w, "verdict\t%s\n", s.Verdict.State)
	for _, r := range s.Verdict.Reasons {
		fmt.Fprintf(w, "  because\t%s\n", r)
	}
	fmt.Fprintf(w, "watermark\t%d\n", s.Watermark)
	if s.GapStart != nil {
		fmt.Fprintf(w, "open gap\tat %d, %.0fs old%s\n", *s.GapStart, *s.GapAge, gapJudgement(s))
	} else {
		fmt.Fprintf(w, "open gap\tnone\n")
	}
	fmt.Fprintf(w, "skipped ids\t%d (late rows found later: %d)\n", s.SkippedIDs, s.LateFound)
	if s.Head != nil {
		fmt.Fprintf(w, "head\t%d %s, attempts %d, %.1fs old %s\n", s.Head.MsgID, s.Head.Status, s.Head.Attempts, s.Head.Age, s.Head.Reason)
	} else {
		fmt.Fprintf(w, "head\tnone (idle)\n")
	}
	fmt.Fprintf(w, "messages\t%s\n", status.Counts(s.ByStatus))
	fmt.Fprintf(w, "dead by class\t%s\n", status.Counts(s.DeadByClass))
	fmt.Fprintf(w, "markers owed\t%d (abandoned %d)\n", s.MarkersOwed, s.MarkersAbandoned)
	fmt.Fprintf(w, "flights\t%s\n", status.Counts(s.Flights))
	if len(s.Outbox) == 0 {
		fmt.Fprintf(w, "dispatcher lag\tnone (the outbox holds no pending or dead event)\n")
	}
	for _, t := range s.Outbox {
		age := "-"
		if t.Oldest != nil {
			age = fmt.Sprintf("%.1fs", *t.Oldest)
		}
		fmt.Fprintf(w, "dispatcher lag %s\tpending %d, dead %d, oldest pending %s\n", t.Target, t.Pending, t.Dead, age)
	}
	for _, x := range s.Sends {
		fmt.Fprintf(w, "kafka sends %s\t%s\n", x.Target, sendText(loc, x))
	}
	for _, l := range s.Leaders {
		stale := ""
		if l.Stale {
			stale = fmt.Sprintf(" STALE (not renewed within the session timeout %s: holder gone or paused)", cfg.Leader.SessionTimeout)
		}
		fmt.Fprintf(w, "leader %s\tepoch %d, %s since %s, renewed %.1fs ago%s\n", l.Role, l.Epoch, l.Holder, stamp(loc, l.AcquiredAt), l.RenewalAge, stale)
	}
	return w.Flush()
}

// gapJudgement says how an open gap stands against ingest's limit (status.Snapshot.GapOverdue).
func gapJudgement(s statusDoc) string {
	switch {
	case s.GapLimit == nil:
		return ""
	case s.GapOverdue():
		return fmt.Sprintf(" (OVERDUE: ingest skips a gap at %.0fs)", *s.GapLimit)
	default:
		return fmt.Sprintf(" (ingest skips it at %.0fs)", *s.GapLimit)
	}
}

// sendText is one target's line of the dispatcher's report of its sends.
func sendText(loc *time.Location, x status.Send) string {
	last := "none since the dispatcher started"
	if x.LastSentAt != nil {
		last = stamp(loc, *x.LastSentAt)
	}
	switch {
	case x.Stale():
		return fmt.Sprintf("UNKNOWN (%s): the last report is %.0fs old, the dispatcher reports every %.0fs", x.Topic, x.ReportAge, x.ReportEvery)
	case x.BlockedFor != nil:
		return fmt.Sprintf("BLOCKED (%s) for %.0fs, %s, brokers %s: %s; last sent %s", x.Topic, *x.BlockedFor, x.Class, strings.Join(x.Brokers, ", "), x.Error, last)
	}
	return fmt.Sprintf("sending (%s); last sent %s", x.Topic, last)
}
