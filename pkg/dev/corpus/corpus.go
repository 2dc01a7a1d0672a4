// Package corpus locates the real SIS sample messages the tests run (testdata/sis-samples at the
// repository root, listed in its INDEX.tsv). MSGX_SIS_SAMPLES points the same tests at another
// corpus of the same layout (for example a held-back set) without changing code.
package corpus

import (
	"os"
	"path/filepath"
	"runtime"
)

// Dir returns the sample directory: $MSGX_SIS_SAMPLES if set, else the repository's copy.
func Dir() string {
	if d := os.Getenv("MSGX_SIS_SAMPLES"); d != "" {
		return d
	}
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "testdata", "sis-samples")
}

// File returns the path of one sample, relative to Dir (e.g. "FLOP/01_FDIV.xml").
func File(rel string) string { return filepath.Join(Dir(), filepath.FromSlash(rel)) }
