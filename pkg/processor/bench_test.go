package processor_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/clock"
	"github.com/msgx/msgx/pkg/dev/stack"
	"github.com/msgx/msgx/pkg/processor"
	"github.com/msgx/msgx/pkg/sis"
)

// durable turns the test URL back to the server's default commit durability, so benchmark
// figures are those of a production configuration.
func durable(url string) string {
	return strings.Replace(url, "synchronous_commit=off", "synchronous_commit=on", 1)
}

// BenchmarkPump measures messages/s through the pump (decode, identity, savepoint, terminal
// write, commit) with a trivial processor, and reports it next to the ceiling of the naive
// shape — one message per transaction — measured by pgbench on the same server in the same run.
func BenchmarkPump(b *testing.B) {
	for _, batch := range []int{1, 100} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			bb := setup(b)
			bb.cfg.Batch = batch
			bb.procs[sis.KindFlightUpdate] = processor.HandlerFunc(func(context.Context, pgx.Tx, processor.Message) (processor.Outcome, error) {
				return processor.Outcome{}, nil
			})
			n := max(b.N, 1)
			enqueueBench(b, bb, n)
			pool, err := pgxpool.New(context.Background(), durable(bb.db.URL))
			require.NoError(b, err)
			defer pool.Close()
			p := processor.New(bb.cfg, pool, bb.procs, nil, clock.NewFake(t0), nil, zerolog.Nop())
			b.ResetTimer()
			start := time.Now()
			for {
				res, err := p.Step(context.Background(), bb.lease)
				require.NoError(b, err)
				if res.Idle {
					break
				}
			}
			elapsed := time.Since(start)
			b.StopTimer()
			b.ReportMetric(float64(n)/elapsed.Seconds(), "msgs/s")
			if batch == 100 && n >= 1000 {
				if tps, err := stack.PGBenchCeiling(context.Background(), bb.db.URL, 5*time.Second); err == nil {
					b.ReportMetric(tps, "pgbench_1msg_tx/s")
					b.ReportMetric(float64(n)/elapsed.Seconds()/tps, "x_ceiling")
				} else {
					b.Logf("pgbench ceiling not measured: %v", err)
				}
			}
		})
	}
}

func enqueueBench(b *testing.B, bb *bundle, n int) {
	ctx := context.Background()
	raws := make([]string, n)
	ids := make([]int64, n)
	for i := range n {
		ids[i] = int64(i + 1)
		raws[i] = flop(i+1, int64(i%1200), "S"+strconv.Itoa(i%40))
	}
	_, err := bb.db.Pool.Exec(ctx, `INSERT INTO proc_state (msg_id, raw, raw_sha256, enqueued_at)
		SELECT id, r, sha256(convert_to(r, 'UTF8')), $3 FROM unnest($1::bigint[], $2::text[]) AS u(id, r)`, ids, raws, t0)
	require.NoError(b, err)
	_, err = bb.db.Pool.Exec(ctx, `UPDATE inbox_cursor SET watermark = $1`, n)
	require.NoError(b, err)
}
