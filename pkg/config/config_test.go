package config

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Tests here set process environment variables, so they do not run in parallel.

func TestDefaultsAreValid(t *testing.T) {
	cfg, err := Load(RoleProcessor)
	require.NoError(t, err)
	require.Equal(t, 5, cfg.MaxAttempts)
	require.Equal(t, 30*time.Second, cfg.MaxCommitDelay)
	require.Equal(t, []string{"LDM", "REGN", "RSTA", "EROR"}, cfg.IgnoreTypes)
	require.Equal(t, "127.0.0.1:8082", cfg.HTTPAddr)
	require.Equal(t, "Asia/Shanghai", cfg.Location().String())
}

func TestBadValuesNameTheVariable(t *testing.T) {
	cases := []struct {
		env, value, want string
	}{
		{"MSGX_MAX_ATTEMPTS", "0", "MSGX_MAX_ATTEMPTS: must be between 1 and 100, got 0"},
		{"MSGX_POLL_INTERVAL", "soon", `MSGX_POLL_INTERVAL: cannot parse "soon" as Duration`},
		{"MSGX_CLAIM_BATCH", "many", `MSGX_CLAIM_BATCH: cannot parse "many" as int`},
		{"MSGX_AIRPORT_TZ", "Mars/Olympus", `MSGX_AIRPORT_TZ: must be an IANA time zone, got "Mars/Olympus"`},
		{"MSGX_HISTORY_SWEEP_AT", "25:99", `MSGX_HISTORY_SWEEP_AT: must be HH:MM (airport time), got "25:99"`},
		{"MSGX_KAFKA_ACKS", "1", "MSGX_KAFKA_ACKS: producer rule D3"},
		{"MSGX_KAFKA_PRODUCE_TIMEOUT", "0s", "MSGX_KAFKA_PRODUCE_TIMEOUT: must be between 1ms and 5m"},
		{"MSGX_ENV", "staging", `MSGX_ENV: must be development or production, got "staging"`},
	}
	for _, c := range cases {
		t.Run(c.env, func(t *testing.T) {
			t.Setenv(c.env, c.value)
			_, err := Load(RoleIngest)
			require.Error(t, err)
			require.Contains(t, err.Error(), c.want)
			require.NotContains(t, err.Error(), "\n", "one bad value, one line")
		})
	}
}

func TestProductionRefusals(t *testing.T) {
	t.Setenv("MSGX_ENV", "production")
	t.Setenv("MSGX_SHADOW", "true")
	_, err := Load(RoleDispatcher)
	require.Error(t, err)
	lines := strings.Split(err.Error(), "\n")
	require.Len(t, lines, 1, "one line per refusal: %q", err)
	require.Contains(t, err.Error(), "MSGX_COMPAT_ENTRY: must be false in production shadow mode")

	t.Setenv("MSGX_COMPAT_ENTRY", "false")
	_, err = Load(RoleDispatcher)
	require.NoError(t, err, "production shadow mode without the compat entry is allowed")
}

// The dispatcher's in-process broker is gone: its variable is refused in every environment,
// with what to do instead.
func TestRemovedInProcessBrokerIsRefused(t *testing.T) {
	for _, env := range []string{"development", "production"} {
		t.Setenv("MSGX_ENV", env)
		t.Setenv("MSGX_KAFKA_INPROCESS", "true")
		_, err := Load(RoleDispatcher)
		require.EqualError(t, err, "MSGX_KAFKA_INPROCESS: removed; the development broker runs as its own process (cmd/devbroker): set MSGX_KAFKA_BROKERS to its address")
	}
}
