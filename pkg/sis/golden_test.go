package sis

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite testdata/golden from the current decoder")

// TestGolden decodes every sample and compares the JSON of the result with
// testdata/golden/<TYPE>/<name>.json (regenerate with `go test ./pkg/sis -update`).
func TestGolden(t *testing.T) {
	t.Parallel()
	files := sampleFiles(t)
	want := map[string]bool{}
	for _, rel := range files {
		want[strings.TrimSuffix(rel, ".xml")+".json"] = true
		t.Run(rel, func(t *testing.T) {
			t.Parallel()
			m, err := Decode([]byte(readSample(t, rel)), Options{Location: shanghai})
			require.NoError(t, err)
			got, err := json.MarshalIndent(m, "", "  ")
			require.NoError(t, err)
			got = append(got, '\n')
			golden := filepath.Join("testdata", "golden", strings.TrimSuffix(rel, ".xml")+".json")
			if *update {
				require.NoError(t, os.MkdirAll(filepath.Dir(golden), 0o755))
				require.NoError(t, os.WriteFile(golden, got, 0o644))
				return
			}
			exp, err := os.ReadFile(golden)
			require.NoError(t, err, "missing golden file; run go test ./pkg/sis -update")
			require.Equal(t, string(exp), string(got))
		})
	}
	if *update {
		return
	}
	// every golden file belongs to a sample
	golden, err := filepath.Glob(filepath.Join("testdata", "golden", "*", "*.json"))
	require.NoError(t, err)
	for _, g := range golden {
		rel, err := filepath.Rel(filepath.Join("testdata", "golden"), g)
		require.NoError(t, err)
		require.True(t, want[filepath.ToSlash(rel)], "stale golden file %s", g)
	}
}

// TestSampleKinds checks the kind and body of every sample against INDEX.tsv.
func TestSampleKinds(t *testing.T) {
	t.Parallel()
	index := readSample(t, "INDEX.tsv")
	n := 0
	for i, line := range strings.Split(strings.TrimSpace(index), "\n") {
		if i == 0 {
			continue
		}
		cols := strings.Split(line, "\t")
		require.Len(t, cols, 4, line)
		rel, typ, styp := cols[0], cols[1], cols[2]
		if _, err := os.Stat(filepath.Join(samplesDir, rel)); err != nil {
			continue // kept back for acceptance
		}
		n++
		m, err := Decode([]byte(readSample(t, rel)), Options{})
		require.NoError(t, err, rel)
		require.Equal(t, typ, m.Meta.TYPE, rel)
		require.Equal(t, styp, m.Meta.STYP, rel)
		switch {
		case typ == "FLOP" && styp == "FDEL":
			require.Equal(t, KindFlightDelete, m.Kind, rel)
			require.NotNil(t, m.Flop)
		case typ == "FLOP":
			require.Equal(t, KindFlightUpdate, m.Kind, rel)
			require.NotNil(t, m.Flop)
			require.NotZero(t, m.Flop.FLID)
		case typ == "SCHD":
			require.Equal(t, KindScheduleSnapshot, m.Kind, rel)
			require.Len(t, m.Schedule.Records, m.Schedule.DeclaredRecs)
		case typ == "SCHS":
			require.Equal(t, KindSeason, m.Kind, rel)
			require.Len(t, m.Season.Records, m.Season.DeclaredRecs)
		default:
			require.Equal(t, KindRefList, m.Kind, rel)
			require.NotEmpty(t, m.RefList.Records, rel)
			key, _ := RefListKey(typ)
			for _, r := range m.RefList.Records {
				v, ok := r.Get(key)
				require.True(t, ok)
				require.Equal(t, v, r.Key)
			}
		}
	}
	require.Equal(t, len(sampleFiles(t)), n, "INDEX.tsv and the sample folder disagree")
}
