package e2e_test

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/dev/chaos"
	"github.com/msgx/msgx/pkg/dev/testdb"
)

// TestZombieDispatcherRealProcesses is the deterministic zombie test with real
// processes (chaos.Zombie): the development broker as its own process and two dispatcher
// binaries; each round the leader reads a batch of both targets and is held before sending
// (MSGX_DEV_HOLD_SEND), is SIGSTOPped past its 2 s lease, the other takes over and sends the
// batch and two newer versions, and the held leader is SIGCONTed and sends its batch (the hook
// sends it even after the lease loss was noticed: a send already on its way), which the broker
// answers "producer fenced" (the standby's producer initialisation fenced its transactional ids). A
// read_committed consumer of msgx.flight.changes and msgx.flight.state sees no record of the
// deposed epoch, and per FLID epochs and versions never decrease. make test runs 3 rounds;
// make chaos runs 20 (its zombie-dispatcher scenario; MSGX_ZOMBIE_ROUNDS sets them here).
func TestZombieDispatcherRealProcesses(t *testing.T) {
	t.Parallel()
	rounds := 3
	if v := os.Getenv("MSGX_ZOMBIE_ROUNDS"); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(t, err, "MSGX_ZOMBIE_ROUNDS")
		rounds = n
	}
	db := testdb.New(t)
	logDir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(rounds+2)*time.Minute)
	defer cancel()
	res, err := chaos.Zombie(ctx, chaos.ZombieConfig{BinDir: binDir, LogDir: logDir, PGURL: db.URL, Rounds: rounds, Log: t.Logf})
	if err != nil || len(res.Problems) > 0 {
		keep, _ := os.MkdirTemp("", "msgx-zombie-logs-")
		_ = os.CopyFS(keep, os.DirFS(logDir))
		t.Logf("dispatchers' logs kept in %s", keep)
	}
	require.NoError(t, err)
	require.Equal(t, rounds, res.Rounds)
	noProblems(t, res.Problems, "records of a deposed leader or out of order")
	require.Equal(t, rounds, res.Fenced, "the broker fenced the deposed leader's sends in every round")
	require.Positive(t, res.Records)
	t.Logf("%d rounds; the broker answered the deposed leader's send \"fenced\" in %d; slowest takeover %s; %d records read",
		res.Rounds, res.Fenced, res.Takeover.Round(100*time.Millisecond), res.Records)
}
