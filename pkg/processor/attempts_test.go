package processor_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/dev/corpus"
	"github.com/msgx/msgx/pkg/processor"
	"github.com/msgx/msgx/pkg/sis"
)

// outcomes lists a message's attempts as "OUTCOME CLASS" strings.
func outcomes(t *testing.T, b *bundle, id int64) []string {
	t.Helper()
	as, err := processor.Attempts(context.Background(), b.db.Pool, id)
	require.NoError(t, err)
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = strings.TrimSpace(a.Outcome + " " + a.Class)
	}
	return out
}

// Every attempt of a message is kept with its time, epoch, outcome, class and reason, written
// with the outcome; a message that failed to decode keeps the META it carried.
func TestAttemptHistory(t *testing.T) {
	t.Parallel()
	b := setup(t)
	fails := 0
	b.procs[sis.KindFlightUpdate] = &recorder{fail: func(m processor.Message) error {
		if m.ID == 2 && fails < 2 {
			fails++
			return fmt.Errorf("database hiccup %d", fails)
		}
		return nil
	}}
	sample, err := os.ReadFile(corpus.File("FLOP/01_FDIV.xml"))
	require.NoError(t, err)
	protocolS := strings.Replace(string(sample), `DDIR="TO"`, `DDIR="TOO"`, 1)
	dupSeqn := strings.Replace(flop(3, 15, "S"), "<SEQN>3</SEQN>", "<SEQN>3</SEQN><SEQN>4</SEQN>", 1)
	good := flop(2, 15, "S")
	b.enqueue(t, map[int64]*string{1: &protocolS, 2: &good, 3: &dupSeqn})
	p := b.pump(t)
	for range 3 {
		b.drain(t, p)
		b.clock.Advance(time.Minute)
	}

	// The DEAD PROTOCOL row keeps the META read: TYPE/STYP on the row, all of it on the attempt.
	var typ, styp *string
	require.NoError(t, b.db.Pool.QueryRow(context.Background(), `SELECT msg_type, msg_styp FROM proc_state WHERE msg_id = 1`).Scan(&typ, &styp))
	require.Equal(t, "FLOP", *typ)
	require.Equal(t, "FDIV", *styp)
	as, err := processor.Attempts(context.Background(), b.db.Pool, 1)
	require.NoError(t, err)
	require.Len(t, as, 1)
	require.Equal(t, "DEAD", as[0].Outcome)
	require.Equal(t, "PROTOCOL", as[0].Class)
	require.Contains(t, as[0].Reason, "DDIR")
	require.Equal(t, "FLOP", as[0].Meta["TYPE"])
	require.NotEmpty(t, as[0].Meta["SEQN"])
	require.Equal(t, as[0].Meta["SNDR"]+"|FLOP|FDIV|"+as[0].Meta["SEQN"], as[0].Meta["identity"], "the identity it would have, shown (never bound)")
	var bound int
	require.NoError(t, b.db.Pool.QueryRow(context.Background(), `SELECT count(*) FROM msg_identity WHERE msg_id = 1`).Scan(&bound))
	require.Zero(t, bound)

	// A META-level rejection keeps what was read before it.
	as, err = processor.Attempts(context.Background(), b.db.Pool, 3)
	require.NoError(t, err)
	require.Len(t, as, 1)
	require.Equal(t, "DEAD PROTOCOL", as[0].Outcome+" "+as[0].Class)
	require.Equal(t, "AODB", as[0].Meta["SNDR"])
	require.Equal(t, "3", as[0].Meta["SEQN"])

	// Two failures then a success: three attempts, each with its own reason, time and epoch.
	as, err = processor.Attempts(context.Background(), b.db.Pool, 2)
	require.NoError(t, err)
	require.Equal(t, []string{"FAILED INFRA", "FAILED INFRA", "SUCCEEDED"}, outcomes(t, b, 2))
	require.Equal(t, "database hiccup 1", as[0].Reason)
	require.Equal(t, "database hiccup 2", as[1].Reason)
	require.Equal(t, []int{1, 2, 3}, []int{as[0].Attempt, as[1].Attempt, as[2].Attempt})
	require.True(t, as[0].At.Before(as[1].At) && as[1].At.Before(as[2].At), "each attempt has its own time")
	for _, a := range as {
		require.Equal(t, int64(1), a.Epoch)
	}
	require.Equal(t, "SUCCEEDED", b.row(t, 2).Status)
}
