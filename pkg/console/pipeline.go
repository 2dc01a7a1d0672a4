package console

import (
	"net/http"
	"sort"

	"github.com/msgx/msgx/pkg/request"
	"github.com/msgx/msgx/pkg/status"
)

// pipelinePage is the pipeline at a glance: the status snapshot (leaders included), its counts
// sorted by name, and the open requests.
type pipelinePage struct {
	Verdict       status.Verdict
	UnknownAfter  int // seconds without an answer after which the page's verdict is unknown
	Rate          Rate
	PendingEvents int64 // unsent events, every target
	Status        status.Snapshot
	Open          []request.Request
	Statuses      []kv
	Dead          []kv
}

// unknownAfter is how many refresh periods without an answer turn the live verdict unknown: one
// update may fail (a fetch is given a period before it is aborted), a second is a pattern.
const unknownAfter = 3

type kv struct {
	K string
	V int64
}

func sortedKV(m map[string]int64) []kv {
	out := make([]kv, 0, len(m))
	for k, v := range m {
		out = append(out, kv{k, v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].K < out[j].K })
	return out
}

func (s *Server) pipeline(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	snap, err := status.ReadWith(ctx, s.d.Pool, s.d.Now(), status.Options{OpenOnly: true})
	if err != nil {
		return err
	}
	open, err := s.d.Requests.ListOpen(ctx)
	if err != nil {
		return err
	}
	rate, err := s.rates(ctx, snap.At, rateWindow(r.URL.Query()))
	if err != nil {
		return err
	}
	s.render(w, r, http.StatusOK, "pipeline", "Pipeline", pipelinePage{
		Verdict: snap.Verdict(s.d.LeaseTimeout), UnknownAfter: unknownAfter * max(1, int(s.d.Config.Refresh.Seconds())), Rate: rate,
		PendingEvents: pendingEvents(snap), Status: snap, Open: open, Statuses: sortedKV(snap.ByStatus), Dead: sortedKV(snap.DeadByClass),
	})
	return nil
}

// pendingEvents are the unsent events of every target.
func pendingEvents(s status.Snapshot) int64 {
	var n int64
	for _, t := range s.Outbox {
		n += t.Pending
	}
	return n
}
