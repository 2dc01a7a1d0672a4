package status

import (
	"fmt"
	"slices"
	"time"
)

// Verdict is the pipeline's health in one word and the reasons for it, worst first (the
// console's live verdict).
type Verdict struct {
	State   string   `json:"state"` // healthy, degraded or stopped
	Reasons []string `json:"reasons"`
}

// Thresholds of the verdict: beyond them the pipeline is degraded (a stale lease stops it).
const (
	headAgeLimit   = time.Minute // the head message waits longer
	outboxAgeLimit = time.Minute // the oldest unsent event waits longer
	markerAgeLimit = 10 * time.Minute
)

// stoppingRoles are the roles without whose leader nothing moves; jobs only degrades.
var stoppingRoles = []string{"ingest", "processor", "dispatcher"}

// Verdict judges the snapshot; lease is MSGX_LEADER_SESSION_TIMEOUT. A stale or missing leader
// of a pipeline role stops the pipeline; an aging head, a gap holding the watermark, a
// dispatcher stuck behind a dead event, sends to Kafka blocked while events wait, the
// dispatcher's send state unknown, markers owed too long or abandoned degrade it. Dead letters
// alone do not: they wait for triage.
func (s Snapshot) Verdict(lease time.Duration) Verdict {
	var stop, degr []string
	seen := map[string]bool{}
	for _, l := range s.Leaders {
		seen[l.Role] = true
		if l.Stale(lease) {
			msg := fmt.Sprintf("%s lease not renewed for %s (holder %s, timeout %s)", l.Role, secs(l.RenewalAge), l.Holder, lease)
			if slices.Contains(stoppingRoles, l.Role) {
				stop = append(stop, msg)
			} else {
				degr = append(degr, msg)
			}
		}
	}
	for _, role := range stoppingRoles {
		if !seen[role] {
			stop = append(stop, "no "+role+" leader elected")
		}
	}
	if h := s.Head; h != nil && h.Age > headAgeLimit.Seconds() {
		degr = append(degr, fmt.Sprintf("head message %d %s for %s (attempt %d)%s", h.MsgID, h.Status, secs(h.Age), h.Attempts, prefixed(": ", h.Reason)))
	}
	if s.GapStart != nil && s.GapOverdue() {
		degr = append(degr, fmt.Sprintf("watermark %d held by a gap at %d for %s, past ingest's limit of %s", s.Watermark, *s.GapStart, secs(*s.GapAge), secs(*s.GapLimit)))
	}
	for _, t := range s.Outbox {
		switch {
		case t.Dead > 0 && t.Pending > 0 && t.Oldest != nil && *t.Oldest > outboxAgeLimit.Seconds():
			degr = append(degr, fmt.Sprintf("dispatcher stuck: %s has %d pending for %s behind %d dead event(s) (replay or skip them)", t.Target, t.Pending, secs(*t.Oldest), t.Dead))
		case t.Oldest != nil && *t.Oldest > outboxAgeLimit.Seconds():
			degr = append(degr, fmt.Sprintf("%s: oldest unsent event waits %s", t.Target, secs(*t.Oldest)))
		}
	}
	degr = append(degr, s.SendProblems()...)
	if s.MarkersAbandoned > 0 {
		degr = append(degr, fmt.Sprintf("%d mailbox marker(s) abandoned", s.MarkersAbandoned))
	}
	if s.OldestOwed != nil && *s.OldestOwed > markerAgeLimit.Seconds() {
		degr = append(degr, fmt.Sprintf("%d marker(s) owed, oldest %s", s.MarkersOwed, secs(*s.OldestOwed)))
	}
	switch {
	case len(stop) > 0:
		return Verdict{"stopped", append(stop, degr...)}
	case len(degr) > 0:
		return Verdict{"degraded", degr}
	}
	return Verdict{"healthy", nil}
}

func secs(s float64) string { return (time.Duration(s) * time.Second).String() }

func prefixed(p, s string) string {
	if s == "" {
		return ""
	}
	return p + s
}
