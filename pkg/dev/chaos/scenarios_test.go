package chaos

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/dev/simulate"
)

// TestLateRowPick: on the days the suite generates (any seed), the late-row scenario finds a
// message whose unit a later message of the same subtype sets again, far enough after it for
// the late row's insert to fall in between and nothing else setting it in between, so the
// scenario proves INV-24b instead of passing by luck.
func TestLateRowPick(t *testing.T) {
	t.Parallel()
	for seed := uint64(1); seed <= 20; seed++ {
		cfg := simulate.DefaultConfig()
		cfg.Seed, cfg.Flights, cfg.Additions, cfg.Date = seed, 60, 2, time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
		day := simulate.Generate(cfg)
		i, j := lateRowPick(day)
		require.GreaterOrEqual(t, i, 0, "seed %d", seed)
		n := len(day.Messages)
		m, o := day.Messages[i], day.Messages[j]
		require.Equal(t, m.FLID, o.FLID)
		require.Equal(t, m.Subtype, o.Subtype)
		require.GreaterOrEqual(t, j-i, n*8/100, "the late row's insert (3 %% after the original) comes before the later message")
		require.False(t, o.At.Before(m.At), "the later message is created no earlier")
		for k := i + 1; k < j; k++ {
			d := day.Messages[k]
			require.False(t, d.FLID == m.FLID && d.Subtype == m.Subtype, "seed %d: message %d sets the unit in between", seed, k)
		}
	}
}

// TestSectionNamesTheConfiguration: every row of a run's section says how its binaries ran.
func TestSectionNamesTheConfiguration(t *testing.T) {
	t.Parallel()
	results := []Result{
		{Scenario: Scenario{Name: "kill-ingest", Did: "SIGKILL ingest"}, Passed: true, Configuration: Production(onDevBroker)},
		{Scenario: Scenario{Name: "zombie-dispatcher", Did: "hold"}, Passed: true, Configuration: "dispatcher role, MSGX_ENV=development"},
	}
	section := Section(results, time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC), time.Minute, "2 CPUs", "")
	require.Contains(t, section, "| Scenario | Configuration | What was done |")
	require.Contains(t, section, "| kill-ingest | roles + TLS (PG verify-full, MySQL tls=msgx-ca) + Kafka TLS/SCRAM-SHA-512 on the dev broker, MSGX_ENV=production | SIGKILL ingest |")
	require.Contains(t, section, "| zombie-dispatcher | dispatcher role, MSGX_ENV=development | hold |")
}

// The configuration column names a scenario's own settings and the run's, the run's replacing
// the scenario's value of the same variable.
func TestSettingsText(t *testing.T) {
	t.Parallel()
	require.Equal(t, "MSGX_MARKER_STANDBYS=0 MSGX_HEAD_DEADLINE=10s",
		settingsText([]string{"MSGX_MARKER_STANDBYS=1", "MSGX_HEAD_DEADLINE=10s"}, []string{"MSGX_MARKER_STANDBYS=0"}))
	require.Empty(t, settingsText(nil, nil))
}
