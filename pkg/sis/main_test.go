package sis

import (
	"github.com/msgx/msgx/pkg/dev/corpus"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// samplesDir is the sample corpus (testdata/sis-samples, or $MSGX_SIS_SAMPLES).
var samplesDir = corpus.Dir()

var shanghai = func() *time.Location {
	loc, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		panic(err)
	}
	return loc
}()

// sampleFiles lists every sample, relative to samplesDir (e.g. FLOP/01_ABTM.xml).
func sampleFiles(tb testing.TB) []string {
	tb.Helper()
	files, err := filepath.Glob(filepath.Join(samplesDir, "*", "*.xml"))
	require.NoError(tb, err)
	require.NotEmpty(tb, files, "no samples under %s", samplesDir)
	out := make([]string, len(files))
	for i, f := range files {
		rel, err := filepath.Rel(samplesDir, f)
		require.NoError(tb, err)
		out[i] = filepath.ToSlash(rel)
	}
	return out
}

func readSample(tb testing.TB, rel string) string {
	tb.Helper()
	raw, err := os.ReadFile(filepath.Join(samplesDir, rel))
	require.NoError(tb, err)
	return string(raw)
}

// requireErr asserts that err is a *Error of class c at path.
func requireErr(tb testing.TB, err error, c Class, path string) *Error {
	tb.Helper()
	require.Error(tb, err)
	var se *Error
	require.ErrorAs(tb, err, &se)
	require.Equal(tb, c, se.Class, "error: %v", err)
	if path != "" {
		require.Equal(tb, path, se.Path, "error: %v", err)
	}
	return se
}

// replaceOnce replaces exactly one occurrence of old in s.
func replaceOnce(tb testing.TB, s, old, new string) string {
	tb.Helper()
	require.Equal(tb, 1, strings.Count(s, old), "expected one %q", old)
	return strings.Replace(s, old, new, 1)
}
