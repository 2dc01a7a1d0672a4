package main

import (
	"runtime/debug"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/daemon"
)

// The pump gets the process's shared settings it uses; the processor reads no Kafka setting.
func TestPumpConfigDerivesTheSharedSettings(t *testing.T) {
	t.Setenv("MSGX_KAFKA_PRODUCE_TIMEOUT", "0s") // the dispatcher's: not read here
	cfg, err := load()
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:8082", cfg.HTTPAddr)
	pc := cfg.pumpConfig()
	require.Equal(t, 2000, pc.Batch)
	require.Equal(t, 4000, pc.FlightCache)
	require.Equal(t, 50*time.Millisecond, pc.IdlePoll, "min(MSGX_POLL_INTERVAL, 100ms)")
	require.Equal(t, 5, pc.MaxAttempts)
	require.Equal(t, 10*time.Second, pc.MarkerTimeout)
	require.Equal(t, "Asia/Shanghai", pc.Location.String())

	prev := debug.SetMemoryLimit(daemon.DefaultMemoryLimit)
	t.Cleanup(func() { debug.SetMemoryLimit(prev) })
	require.False(t, cfg.pumpConfig().ReadAhead, "the default memory limit leaves no room for a second batch")
	debug.SetMemoryLimit(512 << 20) // deploy/k8s: GOMEMLIMIT is the container's limit
	require.True(t, cfg.pumpConfig().ReadAhead)

	t.Setenv("MSGX_PUMP_BATCH", "0")
	_, err = load()
	require.EqualError(t, err, "MSGX_PUMP_BATCH: must be between 1 and 10000, got 0")
}
