package dispatch_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/dev/broker"
	"github.com/msgx/msgx/pkg/kafka"
	"github.com/msgx/msgx/pkg/outbox"
)

// BenchmarkDispatch measures KAFKA:msg events/s from the outbox to the in-process broker (claim,
// produce a batch, mark SENT), one op = one event spread over 2,000 FLIDs, for the production
// producer (transactional, one Kafka transaction per batch) with each compression codec, and for
// an idempotent producer without transactions (broker.DialPlain), at the default batch
// (MSGX_DISPATCH_BATCH, 2000) and at a batch of 500; each variant also measures, in the same
// run and against the same broker, the raw produce rate of sarama without transactions (batches
// of the same size, no database). It reports the rates and their ratios.
//
//	go test -run '^$' -bench BenchmarkDispatch -benchtime 100000x ./pkg/dispatch/
func BenchmarkDispatch(b *testing.B) {
	for _, v := range []struct {
		name        string
		nonTxn      bool
		compression string
		batch       int
	}{
		{"txn-lz4", false, "lz4", 2000},
		{"no-txn-lz4", true, "lz4", 2000},
		{"txn-lz4-batch500", false, "lz4", 500},
		{"no-txn-lz4-batch500", true, "lz4", 500},
		{"txn-none", false, "none", 2000},
		{"txn-zstd", false, "zstd", 2000},
	} {
		b.Run(v.name, func(b *testing.B) {
			bd := setup(b, options{batch: v.batch, nonTxn: v.nonTxn, compression: v.compression})
			ctx := context.Background()
			flids := min(2000, b.N)
			per := (b.N + flids - 1) / flids
			n := enqueueSpread(b, bd, flids, per)

			b.ResetTimer()
			start := time.Now()
			sent := 0
			for sent < n {
				res, err := bd.disp.StepMsg(ctx, bd.lease)
				require.NoError(b, err)
				require.Positive(b, res.Claimed)
				sent += res.Sent
			}
			elapsed := time.Since(start)
			b.StopTimer()

			raw, err := broker.DialPlain(bd.kcfg)
			require.NoError(b, err)
			defer raw.Close()
			recs := make([]kafka.Record, 0, v.batch)
			rawStart := time.Now()
			for i := 0; i < n; {
				recs = recs[:0]
				for j := 0; j < v.batch && i < n; j, i = j+1, i+1 {
					payload := fmt.Appendf(nil, `{"flid":%d,"state_version":%d}`, i%flids+1, i/flids+1)
					recs = append(recs, kafka.Record{Topic: bd.kcfg.TopicChanges, Key: fmt.Sprint(i%flids + 1), Value: payload,
						Headers: []kafka.Header{{Key: "event_id", Value: fmt.Sprint(i)}, {Key: "flid", Value: fmt.Sprint(i%flids + 1)}}})
				}
				for _, err := range raw.Send(ctx, recs) {
					require.NoError(b, err)
				}
			}
			rawElapsed := time.Since(rawStart)

			rate := float64(n) / elapsed.Seconds()
			rawRate := float64(n) / rawElapsed.Seconds()
			b.ReportMetric(rate, "events/s")
			b.ReportMetric(rawRate, "raw-sarama-events/s")
			b.ReportMetric(rate/rawRate, "ratio")
			var pending int
			require.NoError(b, bd.db.Pool.QueryRow(ctx, `SELECT count(*) FROM msg_event_delivery WHERE status <> $1`, outbox.StatusSent).Scan(&pending))
			require.Zero(b, pending)
		})
	}
}
