package ingest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const benchBacklog = 100_000

// BenchmarkIngest measures rows/s enqueued from a 100k-row mailbox backlog (real samples of at
// most 2 KB, cycled) at claim-batch 50 and 500, both databases local. Each iteration drains the
// whole backlog from W=0 into an emptied proc_state.
func BenchmarkIngest(b *testing.B) {
	var texts []string
	for _, text := range samples(b) {
		if len(text) <= 2048 {
			texts = append(texts, text)
		}
	}
	slices.Sort(texts)
	for _, batch := range []int{50, 500} {
		b.Run(fmt.Sprintf("claim-batch=%d", batch), func(b *testing.B) {
			cfg := testConfig
			cfg.ClaimBatch = batch
			w := setup(b, cfg)
			ctx := context.Background()
			var bytes int64
			for start := 0; start < benchBacklog; start += 1000 {
				var (
					sb   strings.Builder
					args []any
				)
				sb.WriteString(`INSERT INTO cminmsgs (CMINMSGS_CLOB_MSG, CMINMSGS_DATE_RECEIVED, CMINMSGS_STATUS) VALUES `)
				for i := start; i < start+1000; i++ {
					if i > start {
						sb.WriteString(",")
					}
					sb.WriteString("(?, '2026-12-02 09:00:00', 'VALID')")
					args = append(args, texts[i%len(texts)])
					bytes += int64(len(texts[i%len(texts)]))
				}
				_, err := w.mb.SQL.ExecContext(ctx, sb.String(), args...)
				require.NoError(b, err)
			}
			b.SetBytes(bytes) // one op is the whole backlog
			b.ResetTimer()
			var elapsed time.Duration
			for b.Loop() {
				b.StopTimer()
				_, err := w.pg.Pool.Exec(ctx, `TRUNCATE proc_state`)
				require.NoError(b, err)
				_, err = w.pg.Pool.Exec(ctx, `UPDATE inbox_cursor SET watermark = 0, gap_start = NULL, gap_first_seen_at = NULL`)
				require.NoError(b, err)
				ing := w.newIngester(b)
				b.StartTimer()
				start := time.Now()
				for {
					progressed, err := ing.Step(ctx)
					require.NoError(b, err)
					if !progressed {
						break
					}
				}
				elapsed += time.Since(start)
				b.StopTimer()
				require.Equal(b, int64(benchBacklog), ing.cur.W)
				b.StartTimer()
			}
			b.ReportMetric(float64(benchBacklog)*float64(b.N)/elapsed.Seconds(), "rows/s")
		})
	}
}
