package processor_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/processor"
	"github.com/msgx/msgx/pkg/sis"
)

// TestBatchLinesCarryTheBatchID: the lines about a batch and its messages carry the batch id, its
// first and last msg_id ("1..3").
func TestBatchLinesCarryTheBatchID(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.procs[sis.KindFlightUpdate] = &recorder{fail: func(m processor.Message) error {
		if m.ID == 2 {
			return errors.New("connection reset by peer")
		}
		return nil
	}}
	b.enqueueSeq(t, 1, 3, func(id int64) string { return flop(int(id), 15, "S1") })
	var buf bytes.Buffer
	p := processor.New(b.cfg, b.db.Pool, b.procs, nil, b.clock, nil, zerolog.New(&buf).Level(zerolog.DebugLevel))

	res, err := p.Step(context.Background(), b.lease)
	require.NoError(t, err)
	require.True(t, res.Failed)

	lines := map[string]map[string]any{}
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &m), l)
		lines[m["message"].(string)] = m
	}
	failed := lines["pump: message FAILED; it holds the head until due"]
	require.NotNil(t, failed, buf.String())
	require.Equal(t, "1..3", failed["batch"])
	require.Equal(t, 2.0, failed["msg_id"])
	committed := lines["pump: batch committed"]
	require.NotNil(t, committed, buf.String())
	require.Equal(t, "1..3", committed["batch"])

	// The next batch is the FAILED head, alone.
	b.clock.Advance(b.cfg.BackoffMax)
	buf.Reset()
	_, err = p.Step(context.Background(), b.lease)
	require.NoError(t, err)
	require.Contains(t, buf.String(), `"batch":"2..2"`)
}
