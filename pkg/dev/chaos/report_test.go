package chaos_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/dev/chaos"
)

func TestWriteRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	started := time.Date(2026, 12, 6, 9, 5, 0, 0, time.FixedZone("CST", 8*3600))
	path, err := chaos.WriteRun(dir, started, "## Run of 2026-12-06 01:05 UTC\n\nMachine: …\n\n### Notes\n\ntext\n")
	require.NoError(t, err)
	require.Equal(t, filepath.Join(dir, "2026-12-06-0105.md"), path)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "# Fault suite: Run of 2026-12-06 01:05 UTC\n\nMachine: …\n\n## Notes\n\ntext\n", string(b))
}
