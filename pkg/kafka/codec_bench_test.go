package kafka_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"

	"github.com/msgx/msgx/pkg/event"
	"github.com/msgx/msgx/pkg/event/change"
	"github.com/msgx/msgx/pkg/flight"
)

// airport is the zone whose instants the records carry beside their wall-clock times.
var airport = func() *time.Location {
	loc, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		panic(err)
	}
	return loc
}()

// realisticBatch is one produce batch of n records of the given kind, as the encoders of
// pkg/event write them for flights of a busy day: state records (the full state, most scalar
// fields null, a route, stands, gates, check-in rows) or change records (a few changed
// fields). The flights differ (FLID, flight number, times, stands), as in a batch.
func realisticBatch(kind string, n int) []byte {
	rng := rand.New(rand.NewPCG(1, 2))
	day := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	var out bytes.Buffer
	for i := range n {
		at := day.Add(time.Duration(rng.IntN(24*60)) * time.Minute)
		var s flight.State
		s.FLID, s.Status, s.Version, s.OperationDay = 20261202000000+int64(i), flight.Active, int64(1+rng.IntN(30)), "2026-12-02"
		s.F[flight.ALCD] = flight.Text([]string{"CA", "MU", "CZ", "HU", "3U"}[rng.IntN(5)])
		s.F[flight.FLNO] = flight.Text(fmt.Sprintf("%s%d", s.F[flight.ALCD].S, 1000+rng.IntN(8999)))
		s.F[flight.MVIN] = flight.Text([]string{"A", "D"}[rng.IntN(2)])
		s.F[flight.SODT] = flight.Time(at)
		s.F[flight.FLTY], s.F[flight.FLIN] = flight.Text("W"), flight.Text("D")
		s.F[flight.ACFT] = flight.Text([]string{"320", "321", "738", "333", "789"}[rng.IntN(5)])
		s.F[flight.RENO] = flight.Text(fmt.Sprintf("B%04d", rng.IntN(9999)))
		s.F[flight.TRML], s.F[flight.STND] = flight.Text("T2"), flight.Text(fmt.Sprint(100+rng.IntN(150)))
		s.F[flight.MAXP] = flight.Int(int64(150 + rng.IntN(200)))
		s.F[flight.ESTT] = flight.Time(at.Add(time.Duration(rng.IntN(40)) * time.Minute))
		s.C[flight.ROUT] = []flight.Row{{flight.Int(1), flight.Text("PEK")}, {flight.Int(2), flight.Text("PVG")}}
		s.C[flight.PSDT] = []flight.Row{{flight.Int(1), flight.Text(s.F[flight.STND].S), flight.Time(at.Add(-time.Hour)), flight.Time(at)}}
		s.C[flight.GTDT] = []flight.Row{{flight.Int(1), flight.Text(fmt.Sprintf("B%d", rng.IntN(60))), flight.Time(at.Add(-50 * time.Minute)), flight.Time(at.Add(-15 * time.Minute))}}
		s.C[flight.CKDT] = []flight.Row{{flight.Int(1), flight.Text(fmt.Sprintf("C%02d", rng.IntN(80))), flight.Text("Y"), flight.Time(at.Add(-3 * time.Hour)), flight.Time(at.Add(-45 * time.Minute))}}
		if kind == "state" {
			out.Write(s.AppendJSONIn(nil, airport))
			continue
		}
		old := s.Clone()
		old.F[flight.ESTT] = flight.Time(at)
		old.F[flight.STND] = flight.Text(fmt.Sprint(100 + rng.IntN(150)))
		evs := change.Append(nil, airport, event.Source{MsgID: int64(880000 + i), Type: "FLOP", Styp: "ESTT"}, &old, &s)
		out.Write(evs[0].Payload)
	}
	return out.Bytes()
}

// BenchmarkCodecs compares the codecs of MSGX_KAFKA_COMPRESSION on a batch of 500 realistic
// records, with the libraries and levels sarama uses (pierrec/lz4 v4 at its default level,
// klauspost zstd at SpeedDefault). It reports the compressed size as a share of the raw size
// (ratio) and the producer's CPU per batch (ns/op). The figures and the choice are in
// docs/benchmarks.md ("Compression codec").
func BenchmarkCodecs(b *testing.B) {
	for _, kind := range []string{"change", "state"} {
		raw := realisticBatch(kind, 500)
		for _, codec := range []string{"lz4", "zstd"} {
			b.Run(kind+"/"+codec, func(b *testing.B) {
				var buf bytes.Buffer
				enc, _ := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithEncoderConcurrency(1))
				b.SetBytes(int64(len(raw)))
				var size int
				for b.Loop() {
					buf.Reset()
					switch codec {
					case "lz4":
						w := lz4.NewWriter(&buf)
						_, _ = w.Write(raw)
						_ = w.Close()
						size = buf.Len()
					case "zstd":
						size = len(enc.EncodeAll(raw, buf.Bytes()[:0]))
					}
				}
				b.ReportMetric(float64(size)/float64(len(raw)), "ratio")
				b.ReportMetric(float64(len(raw))/500, "raw_B/record")
			})
		}
	}
}
