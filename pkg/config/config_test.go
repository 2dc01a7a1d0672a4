package config

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/jobs"
)

// Tests here set process environment variables, so they do not run in parallel.

func TestDefaultsAreValid(t *testing.T) {
	cfg, err := Load(RoleProcessor)
	require.NoError(t, err)
	require.Equal(t, 5, cfg.MaxAttempts)
	require.Equal(t, 30*time.Second, cfg.Ingest.MaxCommitDelay)
	require.Equal(t, []string{"LDM", "REGN", "RSTA", "EROR"}, cfg.Processor.IgnoreTypes)
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

// A component's own defaults (what its tests start from) are the documented ones.
func TestComponentDefaultsAreTheDocumentedOnes(t *testing.T) {
	cfg, err := Load(RoleJobs)
	require.NoError(t, err)
	want := jobs.Defaults()
	want.Location = nil // the process's, set by JobsConfig
	require.Equal(t, want, cfg.Jobs)

	jc := cfg.JobsConfig()
	require.Equal(t, "Asia/Shanghai", jc.Location.String())
	require.Equal(t, 2500*time.Millisecond, jc.MarkTimeout, "half the leader session timeout, under MSGX_DB_TIMEOUT")
	require.Equal(t, 100, jc.HistoryBatch)
	require.Equal(t, "03:30", jc.HistorySweepAt.String())

	pc := cfg.ProcessorConfig()
	require.Equal(t, 500, pc.Batch)
	require.Equal(t, 100*time.Millisecond, pc.IdlePoll)
	require.Equal(t, 5, pc.MaxAttempts)
	dc := cfg.DispatchConfig()
	require.Equal(t, "msgx.flight.state", dc.TopicState)
	require.Equal(t, time.Minute, dc.ErrorWait)
	require.True(t, cfg.CompatConfig().Enabled)
	require.Equal(t, 10*time.Second, cfg.IngestConfig().DBTimeout)
}

// Every bad value is reported, one line each, whichever component declares it.
func TestEveryBadValueOneLineEach(t *testing.T) {
	for k, v := range map[string]string{
		"MSGX_CLAIM_BATCH": "0", "MSGX_PUMP_BATCH": "0", "MSGX_DISPATCH_BATCH": "0", "MSGX_JOB_BATCH": "0",
		"MSGX_LEADER_SESSION_TIMEOUT": "500ms", "MSGX_HTTP_MAX_BODY": "1", "MSGX_KAFKA_SASL_MECHANISM": "GSSAPI",
		"MSGX_REQUEST_SNDR": "TOOLONG", "MSGX_BACKOFF_BASE": "2m",
	} {
		t.Setenv(k, v)
	}
	_, err := Load(RoleIngest)
	require.Error(t, err)
	lines := strings.Split(err.Error(), "\n")
	require.Len(t, lines, 9, "%q", err)
	for _, name := range []string{"MSGX_CLAIM_BATCH", "MSGX_PUMP_BATCH", "MSGX_DISPATCH_BATCH", "MSGX_JOB_BATCH",
		"MSGX_LEADER_SESSION_TIMEOUT", "MSGX_HTTP_MAX_BODY", "MSGX_KAFKA_SASL_MECHANISM", "MSGX_REQUEST_SNDR", "MSGX_BACKOFF_BASE"} {
		require.Contains(t, err.Error(), name+": ")
	}
}
