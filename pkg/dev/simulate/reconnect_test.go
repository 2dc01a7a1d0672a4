package simulate

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/dev/mailboxtest"
	"github.com/msgx/msgx/pkg/dev/privdb"
)

// The writer survives its MariaDB being restarted (gracefully, then killed) in the middle of a
// steady write: every message lands exactly once under the id Written reports, none is lost,
// and with one connection and no held transactions the ids still follow send order.
func TestWriterResumesAfterMariaDBRestart(t *testing.T) {
	t.Parallel()
	m, err := privdb.StartMariaDB()
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, m.Close()) })
	d := Generate(Config{Seed: 33, Flights: 30, Additions: 2, BadShare: 0.05})
	require.Greater(t, len(d.Messages), 150)
	msgs := d.Messages[:150]

	for _, tc := range []struct {
		name  string
		cfg   WriterConfig
		kill  bool
		order bool
	}{
		{"one connection, restart", WriterConfig{Conns: 1, Pace: PaceSteady, Rate: 100, Seed: 1}, false, true},
		{"four connections with held transactions, kill", WriterConfig{Conns: 4, Pace: PaceSteady, Rate: 100, HoldShare: 0.5, Seed: 2}, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) { // one after the other: they restart the same server
			mb := mailboxtest.NewAt(t, m.ServerDSN())
			db, err := OpenMailbox(mb.DSN)
			require.NoError(t, err)
			defer db.Close()
			restart := make(chan struct{})
			var once sync.Once
			cfg := tc.cfg
			cfg.Progress = func(n int) {
				if n >= len(msgs)/3 {
					once.Do(func() { close(restart) })
				}
			}
			w, err := NewWriter(db, cfg)
			require.NoError(t, err)
			restarted := make(chan error, 1)
			go func() {
				<-restart
				if tc.kill {
					if err := m.Stop(true); err != nil {
						restarted <- err
						return
					}
					restarted <- m.Start()
					return
				}
				restarted <- m.Restart()
			}()
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			res, err := w.Write(ctx, msgs)
			require.NoError(t, err)
			require.NoError(t, <-restarted)
			require.Positive(t, res.Reconnects, "the restart happened during the write")

			rows := readMailbox(t, mb)
			require.Len(t, rows, len(msgs), "every message lands exactly once")
			seen := map[int64]bool{}
			for i, msg := range msgs {
				id := res.IDs[i]
				require.False(t, seen[id], "message %d: id %d reported twice", i, id)
				seen[id] = true
				r, ok := rows[id]
				require.True(t, ok, "message %d (id %d) is in the mailbox", i, id)
				require.Equal(t, string(msg.Raw), r.raw, "message %d", i)
				require.Equal(t, msg.SEQN, r.seqn, "message %d", i)
				if tc.order && i > 0 {
					require.Greater(t, id, res.IDs[i-1], "ids follow send order with one connection")
				}
			}
			if cfg.HoldShare > 0 {
				require.Positive(t, res.Resent, "held transactions were open at the kill: their messages were sent again")
			}
			t.Logf("%d reconnects, %d messages sent again", res.Reconnects, res.Resent)
		})
	}
}
