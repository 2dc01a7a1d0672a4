package plugins_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/flightstore"
	"github.com/msgx/msgx/pkg/processor/flights"
	"github.com/msgx/msgx/pkg/processor/plugins"
	"github.com/msgx/msgx/pkg/refdata"
	"github.com/msgx/msgx/pkg/request"
	"github.com/msgx/msgx/pkg/sis"
)

// Every handler the binary registers gets the request rules: without them a SCHD RESP or a list
// RESP would be applied unsolicited (docs/requests.md). The flight handler gets the cache.
func TestHandlersGetTheRequestRules(t *testing.T) {
	t.Parallel()
	hooks, cache := &request.Hooks{}, flightstore.NewCache(1)
	hs := plugins.Handlers(hooks, cache)
	require.Contains(t, hs, sis.KindScheduleSnapshot)
	require.Contains(t, hs, sis.KindRefList)
	for kind, h := range hs {
		switch h := h.(type) {
		case flights.Handler:
			require.Same(t, hooks, h.Requests, "%s", kind)
			require.Same(t, cache, h.Cache, "%s", kind)
		case refdata.Handler:
			require.Same(t, hooks, h.Requests, "%s", kind)
		default:
			t.Fatalf("%s: handler %T not checked", kind, h)
		}
	}
}
