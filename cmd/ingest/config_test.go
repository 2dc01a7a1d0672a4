package main

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The poll loop and the compat entry get the process's and the mailbox's settings; ingest reads
// no Kafka or jobs setting.
func TestIngestConfigDerivesTheSharedSettings(t *testing.T) {
	t.Setenv("MSGX_KAFKA_PRODUCE_TIMEOUT", "0s") // the dispatcher's: not read here
	t.Setenv("MSGX_POLL_INTERVAL", "20ms")
	cfg, err := load()
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:8081", cfg.HTTPAddr)
	ic := cfg.pollConfig()
	require.Equal(t, 10*time.Second, ic.DBTimeout)
	require.Equal(t, 20*time.Millisecond, ic.PollInterval)
	cc := cfg.compatConfig()
	require.True(t, cc.Enabled)
	require.Equal(t, "Asia/Shanghai", cc.Location.String())
}

func TestProductionIngestNeedsTokensAndNoCompatInShadow(t *testing.T) {
	t.Setenv("MSGX_ENV", "production")
	t.Setenv("MSGX_PG_URL", "postgres://u@db:5432/msgx?sslmode=verify-full")
	t.Setenv("MSGX_MYSQL_DSN", "u@tcp(aodb:3306)/msgx_mailbox?tls=true")
	t.Setenv("MSGX_SHADOW", "true")
	_, err := load()
	require.Error(t, err)
	require.Equal(t, []string{
		"MSGX_COMPAT_ENTRY: must be false in production shadow mode (MSGX_SHADOW=true writes nothing to MySQL)",
		"MSGX_API_TOKENS: production ingest requires API tokens (msgxctl token new); without them every API request is refused",
	}, strings.Split(err.Error(), "\n"))
}
