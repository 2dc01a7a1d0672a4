package daemon

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/clock"
)

// TestLiveness: a standby is alive; in a term, each running loop must tick within the
// threshold; a loop that stopped (a dispatcher between Kafka terms) is not expected to.
func TestLiveness(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 12, 3, 8, 0, 0, 0, time.UTC))
	l := NewLiveness(clk, time.Minute)
	clk.Advance(time.Hour)
	require.NoError(t, l.Check(), "standby")
	l.Beat("ignored") // outside a term

	l.begin()
	clk.Advance(time.Minute)
	require.NoError(t, l.Check(), "at the threshold")
	clk.Advance(time.Hour)
	require.NoError(t, l.Check(), "no loop running yet (the dispatcher dialling a broker)")

	l.Beat("KAFKA:msg")
	l.Beat("KAFKA:schd")
	require.NoError(t, l.Check())
	clk.Advance(50 * time.Second)
	l.Beat("KAFKA:msg")
	clk.Advance(20 * time.Second)
	require.EqualError(t, l.Check(), "stage loop KAFKA:schd has not ticked for 1m10s (MSGX_LIVENESS_STALL 1m0s)", "one hung loop of two")
	l.Beat("KAFKA:schd")
	require.NoError(t, l.Check())

	clk.Advance(2 * time.Minute)
	require.Error(t, l.Check())
	l.Quit("KAFKA:msg")
	l.Quit("KAFKA:schd")
	require.NoError(t, l.Check(), "the loops ended (a broken producer); the next Kafka term is being dialled")
	l.Beat("KAFKA:msg")
	require.NoError(t, l.Check())

	l.end()
	clk.Advance(time.Hour)
	require.NoError(t, l.Check(), "standby again")
}
