package stack

import (
	"bytes"
	"context"
	"os"
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
	require.NoError(t, build(ctx, root, dir, []string{"msgxctl"}))
	out, err := exec.CommandContext(ctx, filepath.Join(dir, "msgxctl"), "--version").CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "(revision "+strings.TrimSpace(string(head)), "--version names the commit")
	require.NotContains(t, string(out), "(devel)")
}

// TestBuildsLinkOnce: a second Build of the same tree links nothing again (the shared binaries
// stay the files they were) and hands out the same binaries.
func TestBuildsLinkOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root, err := Root()
	require.NoError(t, err)
	shared, unlock, err := sharedBinDir(root)
	require.NoError(t, err)
	unlock()

	first, second := t.TempDir(), filepath.Join(t.TempDir(), "usr", "local", "bin") // made as go build -o makes it
	require.NoError(t, Build(ctx, first))
	before, err := os.Stat(filepath.Join(shared, "processor"))
	require.NoError(t, err)
	require.NoError(t, Build(ctx, second))
	after, err := os.Stat(filepath.Join(shared, "processor"))
	require.NoError(t, err)
	require.True(t, os.SameFile(before, after), "linked again (go build only touches a binary that is up to date)")
	// Where the temporary directories can hard-link the shared one, each holds its very files.
	linkable := os.Link(filepath.Join(shared, "processor"), filepath.Join(t.TempDir(), "probe")) == nil
	for _, dir := range []string{first, second} {
		got, err := os.ReadFile(filepath.Join(dir, "processor"))
		require.NoError(t, err)
		want, err := os.ReadFile(filepath.Join(shared, "processor"))
		require.NoError(t, err)
		require.True(t, bytes.Equal(want, got), "%s holds the shared binary", dir)
		if linkable {
			fi, err := os.Stat(filepath.Join(dir, "processor"))
			require.NoError(t, err)
			require.True(t, os.SameFile(after, fi), "%s links the shared binary", dir)
		}
	}
}
