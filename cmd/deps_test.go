package cmd_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// What a binary must not link: development-only code, and test machinery.
const devPrefix = "github.com/msgx/msgx/pkg/dev/"

func testPackage(p string) bool {
	return p == "testing" || strings.HasPrefix(p, "testing/") || strings.HasPrefix(p, "github.com/stretchr/testify")
}

// deps lists the packages the command at ./<name> links.
func deps(t *testing.T, name string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", "./"+name).CombinedOutput()
	require.NoError(t, err, "go list -deps ./%s: %s", name, out)
	return strings.Fields(string(out))
}

// The four service binaries, the console and msgxctl link no development-only package (pkg/dev/…: the
// development broker, the stack, the simulator, test databases) and no test machinery.
func TestServiceBinariesLinkNoDevelopmentCode(t *testing.T) {
	t.Parallel()
	for _, bin := range append(append([]string{}, binaries...), "msgxctl", "console") {
		t.Run(bin, func(t *testing.T) {
			t.Parallel()
			var bad []string
			for _, p := range deps(t, bin) {
				if strings.HasPrefix(p, devPrefix) || testPackage(p) {
					bad = append(bad, p)
				}
			}
			require.Empty(t, bad, "%s links development or test packages", bin)
		})
	}
}

// The development tools may use pkg/dev, but no test machinery either.
func TestDevelopmentToolsLinkNoTestMachinery(t *testing.T) {
	t.Parallel()
	for _, tool := range []string{"devbroker", "devstack", "demo", "simulate", "chaos"} {
		t.Run(tool, func(t *testing.T) {
			t.Parallel()
			var bad []string
			for _, p := range deps(t, tool) {
				if testPackage(p) {
					bad = append(bad, p)
				}
			}
			require.Empty(t, bad, "%s links test packages", tool)
		})
	}
}
