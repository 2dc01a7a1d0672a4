package outbox_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/dev/testdb"
	"github.com/msgx/msgx/pkg/event"
	"github.com/msgx/msgx/pkg/outbox"
)

// BenchmarkEnqueue writes a batch's events per op, each batch in its own transaction: 600
// KAFKA:msg events and 400 KAFKA:schd states of 400 flights, bodies of about 620 bytes, on the
// real msgx_timeline (setup's constant one would change the COPY's plan). ns/op is mostly the
// server's COPY.
func BenchmarkEnqueue(b *testing.B) {
	db := testdb.New(b)
	ctx := context.Background()
	pad := strings.Repeat("x", 600)
	batch := func(n int) []event.Event {
		var es []event.Event
		for i := range 600 {
			flid, v := int64(i%400+1), int64(n*2+i/400+1)
			es = append(es, event.Event{Target: event.TargetMsg, FLID: flid, Type: event.Upsert, StateVersion: v, MsgID: int64(n*600 + i + 1),
				Payload: json.RawMessage(fmt.Sprintf(`{"flid":%d,"v":%d,"pad":%q}`, flid, v, pad))})
		}
		for f := range 400 {
			es = append(es, event.Event{Target: event.TargetSchd, FLID: int64(f + 1), Type: event.Upsert, StateVersion: int64(n*2 + 2),
				Payload: json.RawMessage(fmt.Sprintf(`{"flid":%d,"pad":%q}`, f+1, pad))})
		}
		return es
	}
	b.ResetTimer()
	for n := range b.N {
		b.StopTimer()
		events := batch(n)
		b.StartTimer()
		require.NoError(b, outbox.Enqueue(ctx, db.Pool, t0, events...))
	}
}
