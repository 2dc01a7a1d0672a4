package console

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/msgx/msgx/pkg/status"
)

// Verdict is the pipeline's health in one word and the reasons for it, worst first.
type Verdict struct {
	State   string // healthy, degraded or stopped
	Reasons []string
}

// Thresholds of the verdict: beyond them the pipeline is degraded (a stale lease stops it).
const (
	headAgeLimit    = time.Minute // the head message waits longer
	outboxAgeLimit  = time.Minute // the oldest unsent event waits longer
	markerAgeLimit  = 10 * time.Minute
	stoppingRoles   = "ingest processor dispatcher" // without them nothing moves; jobs only degrades
	rateWindow      = 5 * time.Minute
	rateSampleEvery = 5 * time.Second
)

// verdict judges a snapshot: a stale or missing leader of a pipeline role stops it; an aging
// head, a gap holding the watermark, a dispatcher stuck behind a dead event, markers owed too
// long or abandoned degrade it. Dead letters alone do not: they wait for triage.
func verdict(s status.Snapshot, lease time.Duration) Verdict {
	var stop, degr []string
	seen := map[string]bool{}
	for _, l := range s.Leaders {
		seen[l.Role] = true
		if l.Stale(lease) {
			msg := fmt.Sprintf("%s lease not renewed for %s (holder %s, timeout %s)", l.Role, secs(l.RenewalAge), l.Holder, lease)
			if containsWord(stoppingRoles, l.Role) {
				stop = append(stop, msg)
			} else {
				degr = append(degr, msg)
			}
		}
	}
	for _, role := range []string{"ingest", "processor", "dispatcher"} {
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

func containsWord(list, w string) bool { return slices.Contains(strings.Fields(list), w) }

// rates keeps samples of the snapshot (this console process's, taken as pages are read) to
// show rates over the last minutes.
type rates struct {
	mu      sync.Mutex
	samples []sample
}

type sample struct {
	at        time.Time
	watermark int64
	finished  int64 // SUCCEEDED + SKIPPED + DEAD
	pending   int64 // unsent events
}

// Rate is what moved between the oldest sample in the window and now.
type Rate struct {
	Over               time.Duration // 0: not enough samples yet
	Ingested, Finished float64       // per minute
	PendingEvents      int64
	PendingDelta       int64 // change of the unsent events over the window
}

func (r *rates) observe(s status.Snapshot) Rate {
	cur := sample{at: s.At, watermark: s.Watermark}
	for _, k := range []string{"SUCCEEDED", "SKIPPED", "DEAD"} {
		cur.finished += s.ByStatus[k]
	}
	for _, t := range s.Outbox {
		cur.pending += t.Pending
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for len(r.samples) > 0 && cur.at.Sub(r.samples[0].at) > rateWindow {
		r.samples = r.samples[1:]
	}
	if n := len(r.samples); n == 0 || cur.at.Sub(r.samples[n-1].at) >= rateSampleEvery {
		r.samples = append(r.samples, cur)
	}
	out := Rate{PendingEvents: cur.pending}
	first := r.samples[0]
	if d := cur.at.Sub(first.at); d >= rateSampleEvery {
		m := d.Minutes()
		out.Over = d.Round(time.Second)
		out.Ingested = float64(cur.watermark-first.watermark) / m
		out.Finished = float64(cur.finished-first.finished) / m
		out.PendingDelta = cur.pending - first.pending
	}
	return out
}
