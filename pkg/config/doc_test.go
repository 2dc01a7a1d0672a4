package config

import (
	"flag"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite docs/configuration.md from the Config struct")

const docPath = "../../docs/configuration.md"

const docHead = `# Configuration

Every binary (and msgxctl) reads its settings from the environment, prefix ` + "`MSGX_`" + `
(envconfig). Durations use Go syntax (` + "`500ms`, `30s`, `15m`, `24h`" + `); lists are comma-separated.
A bad value stops the binary at start-up with exit code 2 and one line per bad value naming the
variable. ` + "`MSGX_ENV=production`" + ` additionally refuses shadow mode with the compat entry on.
` + "`MSGX_KAFKA_INPROCESS`" + ` is gone (the development broker is its own process, cmd/devbroker): setting it
is refused. Producer rule D3 (idempotent, acks=all, one request in flight) has no
variable: setting ` + "`MSGX_KAFKA_ACKS`, `MSGX_KAFKA_IDEMPOTENT`, `MSGX_KAFKA_MAX_OPEN_REQUESTS`, `MSGX_KAFKA_MAX_IN_FLIGHT` or `MSGX_KAFKA_RETRIES`" + ` is refused.
Secrets (passwords inside ` + "`MSGX_PG_URL`, `MSGX_MYSQL_DSN`, `MSGX_KAFKA_SASL_PASSWORD`" + `) come from Kubernetes Secrets.

This file is generated from pkg/config/config.go (` + "`go test ./pkg/config -update`" + `); a test fails when they disagree.

| variable | default | meaning |
|---|---|---|
`

// renderDoc renders the configuration table from the struct tags.
func renderDoc() string {
	var b strings.Builder
	b.WriteString(docHead)
	t := reflect.TypeOf(Config{})
	for i := range t.NumField() {
		f := t.Field(i)
		name := f.Tag.Get("envconfig")
		def := f.Tag.Get("default")
		if name == "HTTP_ADDR" {
			def = "per binary"
		}
		fmt.Fprintf(&b, "| `MSGX_%s` | `%s` | %s |\n", name, def, f.Tag.Get("desc"))
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

func TestEveryFieldIsDocumented(t *testing.T) {
	t.Parallel()
	typ := reflect.TypeOf(Config{})
	for i := range typ.NumField() {
		f := typ.Field(i)
		require.NotEmpty(t, f.Tag.Get("envconfig"), "field %s has no variable", f.Name)
		require.NotEmpty(t, f.Tag.Get("desc"), "field %s has no description", f.Name)
	}
}
