package config

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/envconf"
)

var update = flag.Bool("update", false, "rewrite docs/configuration.md from the Config struct")

const docPath = "../../docs/configuration.md"

const docHead = `# Configuration

Every binary reads its settings from the environment, prefix ` + "`MSGX_`" + `
(envconfig). Durations use Go syntax (` + "`500ms`, `30s`, `15m`, `24h`" + `); lists are comma-separated.
Each binary reads and validates the settings of what it runs (the table's first word names the
stage; settings without one are every binary's): a bad Kafka value stops the dispatcher, not
ingest. msgxctl reads them all.
A bad value stops the binary at start-up with exit code 2 and one line per bad value naming the
variable. ` + "`MSGX_ENV=production`" + ` additionally refuses, one line each: shadow mode with the compat
entry on; ` + "`MSGX_PG_URL`" + ` without ` + "`sslmode=verify-full`" + `; ` + "`MSGX_MYSQL_DSN`" + ` without ` + "`tls=true`" + ` or
` + "`tls=msgx-ca`" + ` (with ` + "`MSGX_MYSQL_TLS_CA_FILE`" + `), in every binary that connects to the mailbox
(msgxctl: ` + "`roles apply --mysql`" + ` only); ` + "`MSGX_KAFKA_TLS=false`" + ` (and SASL PLAIN without TLS);
ingest without ` + "`MSGX_API_TOKENS`" + `; the console without ` + "`MSGX_CONSOLE_SESSION_KEY`" + ` or with
` + "`MSGX_CONSOLE_TLS=false`" + ` (docs/security.md).
` + "`MSGX_KAFKA_INPROCESS`" + ` is gone (the development broker is its own process, cmd/devbroker): setting it
is refused, and so is ` + "`MSGX_REQUEST_CLOCK_SKEW`" + ` (an answer made before its request was sent is refused:
docs/requests.md). Producer rule D3b (idempotent, transactional, acks=all, one request in flight) has no
variable: setting ` + "`MSGX_KAFKA_ACKS`, `MSGX_KAFKA_IDEMPOTENT`, `MSGX_KAFKA_MAX_OPEN_REQUESTS`, `MSGX_KAFKA_MAX_IN_FLIGHT` or `MSGX_KAFKA_RETRIES`" + ` is refused.
Secrets (passwords inside ` + "`MSGX_PG_URL`, `MSGX_MYSQL_DSN`, `MSGX_KAFKA_SASL_PASSWORD`" + `) come from Kubernetes Secrets;
` + "`MSGX_API_TOKENS`" + ` holds only SHA-256 hashes of the API tokens.
Memory: the Go runtime's ` + "`GOMEMLIMIT`" + ` (not an msgx setting) is the soft limit the garbage collector
keeps the heap under; a service binary started without it takes 44 MiB, which keeps its resident
memory under 64 MB (docs/benchmarks.md). deploy/k8s sets it to each container's memory limit.
The processor reads its next batch while one commits only with a limit of 128 MiB or more
(docs/decisions.md).
` + "`GOGC`" + ` (not an msgx setting either): ingest and the dispatcher, whose live heap is a few MB, take
400 when it is not set (the others the runtime's 100); the first log line shows both
(` + "`memory_limit`" + `, ` + "`gc_percent`" + `).

Each stage declares its own settings where it uses them (the tagged fields of ingest.Config,
ingest.CompatConfig, ingest.APIConfig, processor.Config, kafka.Config, dispatch.Config,
jobs.Config, request.Config, consoleconf.Config, leader.Config, mailbox.Config,
replication.Config); pkg/settings
declares the ones every process shares; each binary composes its parts (cmd/<binary>/config.go)
and pkg/config composes them all for msgxctl and this file. This file
is generated from those declarations (` + "`go test ./pkg/config -update`" + `); a test fails when they disagree.

| variable | default | meaning |
|---|---|---|
`

// renderDoc renders the configuration table from the struct tags.
func renderDoc() string {
	var b strings.Builder
	b.WriteString(docHead)
	for _, f := range envconf.Fields(Config{}) {
		fmt.Fprintf(&b, "| `%s` | `%s` | %s |\n", f.Name, f.Doc, f.Desc)
	}
	return b.String()
}

func TestDocMatchesStruct(t *testing.T) {
	want := renderDoc()
	if *update {
		require.NoError(t, os.WriteFile(docPath, []byte(want), 0o644))
	}
	got, err := os.ReadFile(docPath)
	require.NoError(t, err)
	require.Equal(t, want, string(got), "docs/configuration.md is stale: run go test ./pkg/config -update")
}

// Every variable is declared once, with a description and a default the documentation shows.
func TestEveryVariableIsDeclaredOnceAndDescribed(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for _, f := range envconf.Fields(Config{}) {
		require.True(t, strings.HasPrefix(f.Name, "MSGX_"), f.Name)
		require.False(t, seen[f.Name], "%s is declared twice", f.Name)
		seen[f.Name] = true
		require.NotEmpty(t, f.Desc, "%s has no description", f.Name)
	}
}
