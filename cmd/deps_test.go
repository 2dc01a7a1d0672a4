package cmd_test

import (
	"os/exec"
	"slices"
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

// Each binary links only its own stage (cmd → stage → domain): the settings of every stage are
// composed per binary (cmd/<binary>/config.go), never in a package every binary imports.
func TestBinariesLinkOnlyTheirStage(t *testing.T) {
	t.Parallel()
	const pkg, sarama = "github.com/msgx/msgx/pkg/", "github.com/IBM/sarama"
	forbidden := map[string][]string{
		"ingest":    {sarama, pkg + "dispatch", pkg + "kafka", pkg + "jobs", pkg + "console", pkg + "processor", pkg + "config"},
		"processor": {sarama, pkg + "dispatch", pkg + "kafka", pkg + "jobs", pkg + "console", pkg + "ingest", pkg + "config"},
		// The dispatcher sends events as bytes: no flight model, no SIS codec (and its charsets).
		"dispatcher": {pkg + "ingest", pkg + "jobs", pkg + "console", pkg + "processor", pkg + "mailbox", pkg + "config", pkg + "flight", pkg + "sis"},
		"jobs":       {sarama, pkg + "dispatch", pkg + "kafka", pkg + "console", pkg + "ingest", pkg + "config"},
		// The console: TestConsoleLinksNoStage.
	}
	for bin, bad := range forbidden {
		t.Run(bin, func(t *testing.T) {
			t.Parallel()
			linked := map[string]bool{}
			for _, p := range deps(t, bin) {
				linked[p] = true
			}
			require.True(t, linked[pkg+"daemon"], "%s: the list is real (it links pkg/daemon)", bin)
			var found []string
			for _, p := range bad {
				if linked[p] {
					found = append(found, p)
				}
			}
			require.Empty(t, found, "%s links another stage", bin)
		})
	}
}

// The console is no stage (docs/architecture.md): cmd/console and pkg/console link no stage (a
// package of one, or below it: the processor's handlers), not the MySQL adapter nor its driver
// (pkg/mailbox/outbound, the coutmsgs rows as values, is not the adapter), not Kafka, and not
// msgxctl's composition of every stage's settings. They act through the shared packages only:
// procstate (replay), outbox, request.
func TestConsoleLinksNoStage(t *testing.T) {
	t.Parallel()
	const pkg = "github.com/msgx/msgx/pkg/"
	stages := []string{pkg + "ingest", pkg + "processor", pkg + "refdata", pkg + "dispatch", pkg + "jobs"} // with what is below them
	adapters := []string{pkg + "mailbox", "github.com/go-sql-driver/mysql", pkg + "kafka", "github.com/IBM/sarama", pkg + "config"}
	for _, dir := range []string{"console", "../pkg/console"} {
		t.Run(dir, func(t *testing.T) {
			t.Parallel()
			var found []string
			linked := deps(t, dir)
			require.Contains(t, linked, pkg+"procstate", "%s: the list is real (it links pkg/procstate)", dir)
			for _, p := range linked {
				for _, s := range stages {
					if p == s || strings.HasPrefix(p, s+"/") {
						found = append(found, p)
					}
				}
				if slices.Contains(adapters, p) {
					found = append(found, p)
				}
			}
			require.Empty(t, found, "%s links a stage, the mailbox adapter, Kafka or pkg/config", dir)
		})
	}
}

// msgxctl reads every setting (pkg/config), the console's too, but links none of the console's
// pages: its settings are a package of their own (pkg/console/consoleconf).
func TestMsgxctlLinksNoConsolePages(t *testing.T) {
	t.Parallel()
	const pkg = "github.com/msgx/msgx/pkg/"
	linked := deps(t, "msgxctl")
	require.Contains(t, linked, pkg+"console/consoleconf", "the list is real (it links the console's settings)")
	require.NotContains(t, linked, pkg+"console")
}
