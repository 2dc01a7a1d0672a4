package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The dispatcher gets its topics from the Kafka settings and its error wait from the retry
// policy; it reads no mailbox or ingest setting.
func TestDispatchConfigDerivesTheSharedSettings(t *testing.T) {
	t.Setenv("MSGX_CLAIM_BATCH", "0") // ingest's: not read here
	cfg, err := load()
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:8083", cfg.HTTPAddr)
	dc := cfg.dispatchConfig()
	require.Equal(t, "msgx.flight.state", dc.TopicState)
	require.Equal(t, "msgx.flight.changes", dc.TopicChanges)
	require.Equal(t, time.Minute, dc.ErrorWait)
	require.Equal(t, 5, cfg.outboxPolicy().MaxAttempts)

	t.Setenv("MSGX_KAFKA_PRODUCE_TIMEOUT", "0s")
	_, err = load()
	require.ErrorContains(t, err, "MSGX_KAFKA_PRODUCE_TIMEOUT: must be between 1ms and 5m")
}

func TestProductionRefusesPlaintextKafkaAndTheHoldHook(t *testing.T) {
	t.Setenv("MSGX_ENV", "production")
	t.Setenv("MSGX_PG_URL", "postgres://u@db:5432/msgx?sslmode=verify-full")
	t.Setenv("MSGX_DEV_HOLD_SEND", "/tmp/hold")
	_, err := load()
	require.EqualError(t, err, "MSGX_KAFKA_TLS: production requires TLS to the Kafka brokers (MSGX_KAFKA_TLS=true)\n"+
		"MSGX_DEV_HOLD_SEND: a test hook; production refuses it")
}
