package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The jobs get the process's and the mailbox's settings; the jobs binary reads no Kafka setting.
func TestJobsConfigDerivesTheSharedSettings(t *testing.T) {
	t.Setenv("MSGX_KAFKA_PRODUCE_TIMEOUT", "0s") // the dispatcher's: not read here
	cfg, err := load()
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:8084", cfg.HTTPAddr)
	jc := cfg.jobsConfig()
	require.Equal(t, "Asia/Shanghai", jc.Location.String())
	require.Equal(t, 2500*time.Millisecond, jc.MarkTimeout, "half the leader session timeout, under MSGX_DB_TIMEOUT")
	require.Equal(t, 100, jc.HistoryBatch)
	require.Equal(t, "Asia/Shanghai", cfg.requestConfig().Location.String())

	t.Setenv("MSGX_HISTORY_SWEEP_AT", "25:99")
	_, err = load()
	require.EqualError(t, err, `MSGX_HISTORY_SWEEP_AT: must be HH:MM (airport time), got "25:99"`)
}
