// Package plugins is the processor's handler table: which handler serves which message kind
// (sis.Kind, decided by TYPE and STYP). cmd/processor runs it and the end-to-end tests run the
// same table, so a kind registered here is the kind tested.
package plugins

import (
	"github.com/msgx/msgx/pkg/flightstore"
	"github.com/msgx/msgx/pkg/processor"
	"github.com/msgx/msgx/pkg/processor/flights"
	"github.com/msgx/msgx/pkg/refdata"
	"github.com/msgx/msgx/pkg/request"
	"github.com/msgx/msgx/pkg/sis"
)

// Handlers maps each message kind to its handler. A kind missing here is FAILED UNSUPPORTED
// (retried, then DEAD EXHAUSTED, replayable once a handler exists). Both plug-ins get the
// request rules (RESP guard, self-healing trigger; docs/requests.md; nil: none, for tests of the
// business rules alone) and the flight handler the flight cache (nil: none).
func Handlers(requests *request.Hooks, cache *flightstore.Cache) map[sis.Kind]processor.Handler {
	// One flight handler for every flight kind: a batch's flight messages share one session.
	fl, ref := flights.Handler{Requests: requests, Cache: cache}, refdata.Handler{Requests: requests}
	return map[sis.Kind]processor.Handler{
		sis.KindFlightUpdate:     fl,
		sis.KindFlightDelete:     fl,
		sis.KindScheduleSnapshot: fl,
		sis.KindScheduleAdd:      fl,
		sis.KindScheduleDelete:   fl,
		sis.KindRefList:          ref,
		sis.KindSeason:           ref,
	}
}
