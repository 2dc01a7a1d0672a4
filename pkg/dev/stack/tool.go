package stack

import (
	"context"
	"os/exec"
	"path/filepath"
)

// RunTool runs one of Tools (msgxctl, simulate) from the stack's binaries with the environment
// every binary of the stack gets (Env, then its RoleEnv entry if any) and returns what it printed
// (stdout and stderr).
func (s *Stack) RunTool(ctx context.Context, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(s.opts.BinDir, name), args...)
	cmd.Env = append(append(CleanEnv(), s.Env()...), s.opts.RoleEnv[name]...)
	return cmd.CombinedOutput()
}
