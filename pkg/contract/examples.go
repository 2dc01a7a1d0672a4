package contract

import (
	"bytes"
	"encoding/json"
	"time"

	"github.com/msgx/msgx/pkg/event"
	"github.com/msgx/msgx/pkg/event/change"
	"github.com/msgx/msgx/pkg/flight"
)

// The example values of docs/contract/examples, each a complete record value as msgx writes it.
const (
	ExampleState       = "examples/msgx.flight.state.value.json"
	ExampleChange      = "examples/msgx.flight.changes.value.json"
	ExamplePurged      = "examples/msgx.flight.changes.purged.value.json"
	ExampleChildPurged = "examples/msgx.flight.changes.child-purged.value.json"
	ExampleHeartbeat   = "examples/msgx.heartbeat.value.json"
)

// exampleZone is the example airport's zone: Asia/Shanghai, which has no daylight saving time.
var exampleZone = time.FixedZone("CST", 8*3600)

func at(h, m int) flight.Value { return flight.Time(time.Date(2026, 12, 2, h, m, 0, 0, time.UTC)) }

// examples writes the example values through the encoders msgx publishes with.
func examples() map[string][]byte {
	old := &flight.State{FLID: 20261202001234, Status: flight.Active, Version: 6, OperationDay: "2026-12-02", LastMsgID: 884100}
	old.F[flight.ALCD], old.F[flight.FLNO], old.F[flight.MVIN] = flight.Text("CA"), flight.Text("CA1234"), flight.Text("D")
	old.F[flight.SODT], old.F[flight.ESTT] = at(10, 30), at(10, 40)
	old.F[flight.FLTY], old.F[flight.FLIN], old.F[flight.ACFT] = flight.Text("W"), flight.Text("D"), flight.Text("333")
	old.F[flight.STND], old.F[flight.TRML] = flight.Text("215"), flight.Text("T2")
	old.C[flight.ROUT] = []flight.Row{{flight.Int(1), flight.Text("CTU"), flight.Null, at(10, 30)}, {flight.Int(2), flight.Text("PEK"), at(13, 5)}}
	old.C[flight.PSDT] = []flight.Row{{flight.Int(1), flight.Text("215"), at(8, 50), at(10, 45)}}
	old.C[flight.GTDT] = []flight.Row{{flight.Int(1), flight.Text("B12"), at(9, 40), at(10, 15)}}
	old.MAFL = []flight.Child{{FLID: 20261202001240, FLNO: "MU4321"}}
	next := old.Clone()
	next.Version, next.LastMsgID = 7, 884211
	next.F[flight.ESTT] = at(10, 55)
	next.C[flight.GTDT] = []flight.Row{{flight.Int(1), flight.Text("B14"), at(9, 40), at(10, 15)}}
	evs := change.Append(nil, exampleZone, event.Source{MsgID: 884211, Type: "FLOP", Styp: "GTDT"}, old, &next)

	master := &flight.State{FLID: 20261202001200, Status: flight.Active, Version: 4, OperationDay: "2026-12-02"}
	master.MAFL = []flight.Child{{FLID: 20261202001234, FLNO: "CA1234"}}
	orphaned := master.Clone()
	orphaned.Version, orphaned.MAFL = 5, nil
	evs = change.Append(evs, exampleZone, event.Source{Reason: event.ReasonChildPurged}, master, &orphaned)
	evs = event.Purged(evs, 20261202001234, 9)
	out := map[string][]byte{
		ExampleChange:      evs[0].Payload,
		ExampleState:       evs[1].AppendBody(nil),
		ExampleChildPurged: evs[2].Payload,
		ExamplePurged:      evs[4].Payload,
		ExampleHeartbeat: event.HeartbeatRecord("msgx-dispatcher", event.Beat{
			Time: time.Date(2026, 12, 2, 2, 41, 10, 0, time.UTC), Period: 10 * time.Second, Epoch: 3, Watermark: 884230,
			Changes: event.BeatTopic{Topic: TopicChanges, LastSent: 1099511715783},
			State:   event.BeatTopic{Topic: TopicState, LastSent: 1099511715775, OldestUnsent: 1099511715790},
		}).Value,
	}
	for name, b := range out {
		var buf bytes.Buffer
		if err := json.Indent(&buf, b, "", "  "); err != nil {
			panic(err) // the encoders write JSON
		}
		out[name] = append(buf.Bytes(), '\n')
	}
	return out
}
