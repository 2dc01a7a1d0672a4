package stack

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBuildStampsTheCommit: a binary built the stack's way reports the checkout's commit in
// --version, also where the toolchain records none (a git worktree, -buildvcs=false).
func TestBuildStampsTheCommit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root, err := Root()
	require.NoError(t, err)
	head, err := exec.CommandContext(ctx, "git", "-C", root, "rev-parse", "HEAD").Output()
	require.NoError(t, err, "the test runs in a git checkout")

	dir := t.TempDir()
	require.NoError(t, build(ctx, root, dir, []string{"./cmd/msgxctl"}))
	out, err := exec.CommandContext(ctx, filepath.Join(dir, "msgxctl"), "--version").CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "(revision "+strings.TrimSpace(string(head)), "--version names the commit")
	require.NotContains(t, string(out), "(devel)")
}
