package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/msgx/msgx/pkg/dev/simulate"
	"github.com/msgx/msgx/pkg/settings"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestRunDryWritesExpected(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "expected.json")
	o, err := parseFlags([]string{"-dry-run", "-flights", "20", "-date", "2026-05-01", "-expected", path}, env{Process: settings.Process{AirportTZ: "Asia/Shanghai"}})
	require.NoError(t, err)
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), o, zerolog.Nop(), &out))
	require.Contains(t, out.String(), "applied=")
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var e simulate.Expected
	require.NoError(t, json.Unmarshal(b, &e))
	require.Len(t, e.Flights, 21)
}

func TestParseFlagsRejects(t *testing.T) {
	t.Parallel()
	_, err := parseFlags([]string{"-pace", "steady", "-rate", "0"}, env{Process: settings.Process{AirportTZ: "Asia/Shanghai"}})
	require.Error(t, err)
	_, err = parseFlags([]string{"-date", "tomorrow"}, env{Process: settings.Process{AirportTZ: "Asia/Shanghai"}})
	require.Error(t, err)
}
