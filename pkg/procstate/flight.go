package procstate

import (
	"errors"
	"fmt"
	"strings"

	"github.com/msgx/msgx/pkg/flight"
	"github.com/msgx/msgx/pkg/sis"
)

// FlightOutcome is how a flight message the flight rules applied as r ends: SKIPPED with its
// first skipped input's reason when nothing applied and something was skipped, else SUCCEEDED
// with FlightNotes. The processor's flight handler records it; a replay's dry run predicts it.
func FlightOutcome(r flight.Result) (Status, string) {
	if r.Applied == 0 && len(r.Skips) > 0 {
		return StatusSkipped, flightSkip(r.Skips[0]).String()
	}
	return StatusSucceeded, FlightNotes(r)
}

// flightSkip is the reason of a skipped input.
func flightSkip(s flight.Skip) Skip {
	switch {
	case errors.Is(s.Err, flight.ErrNoFlight):
		return NoMatch()
	case errors.Is(s.Err, flight.ErrDeleted):
		return NoMatchDeleted()
	}
	return StaleLate(s.Stale)
}

// FlightNotes are the applied inputs' remarks and, for a message applied in part, the units a
// later-created message had set (StaleNote, INV-24b).
func FlightNotes(r flight.Result) string {
	n := r.Notes
	if len(r.Stale) > 0 {
		n = append(n[:len(n):len(n)], StaleNote(r.Stale))
	}
	return strings.Join(n, "; ")
}

// NoProcessor is the reason of a message of a kind no handler serves (FAILED UNSUPPORTED).
func NoProcessor(kind sis.Kind, typ, styp string) string {
	return fmt.Sprintf("no processor for %s %s/%s", kind, typ, styp)
}
