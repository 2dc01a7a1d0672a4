// Package buildinfo tells which build a binary is: its module version, VCS revision and state,
// and Go version, read from the binary itself (runtime/debug.ReadBuildInfo). Version and Revision
// can be set at link time, which wins over what the toolchain recorded:
//
//	go build -ldflags "-X github.com/msgx/msgx/pkg/buildinfo.Version=v1.2.3 -X github.com/msgx/msgx/pkg/buildinfo.Revision=abc123"
//
// Every way the repository builds its binaries links them so (the Makefile's VERSION_LDFLAGS,
// pkg/dev/stack's Build with LDFlags): the toolchain's own vcs.revision is only a fallback, as
// `go build` records none in a git worktree (.git is a file there) or with -buildvcs=false.
package buildinfo

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Set by -ldflags -X (empty: what the toolchain recorded).
var (
	Version  string
	Revision string
)

// LDFlags are the linker flags that set Version and Revision, as the Makefile's VERSION_LDFLAGS.
func LDFlags(version, revision string) string {
	const pkg = "github.com/msgx/msgx/pkg/buildinfo"
	return "-X " + pkg + ".Version=" + version + " -X " + pkg + ".Revision=" + revision
}

// Info is one binary's build.
type Info struct {
	Version   string `json:"version"`    // module version, "(devel)" for a local build
	Revision  string `json:"revision"`   // vcs.revision, "unknown" when not recorded
	Modified  bool   `json:"modified"`   // vcs.modified: built from a work tree with changes
	GoVersion string `json:"go_version"` // toolchain
}

// Read returns this binary's build.
func Read() Info {
	bi, ok := debug.ReadBuildInfo()
	return fromBuildInfo(bi, ok, Version, Revision)
}

func fromBuildInfo(bi *debug.BuildInfo, ok bool, version, revision string) Info {
	in := Info{Version: "(devel)", Revision: "unknown", GoVersion: runtime.Version()}
	if ok {
		if v := bi.Main.Version; v != "" {
			in.Version = v
		}
		if bi.GoVersion != "" {
			in.GoVersion = bi.GoVersion
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				in.Revision = s.Value
			case "vcs.modified":
				in.Modified = s.Value == "true"
			}
		}
	}
	if version != "" {
		in.Version = version
	}
	if revision != "" {
		in.Revision = revision
	}
	return in
}

// String is the --version line: "<name> <version> (revision <rev>[, modified], <go version>)".
func (in Info) String() string {
	mod := ""
	if in.Modified {
		mod = ", modified"
	}
	return fmt.Sprintf("%s (revision %s%s, %s)", in.Version, in.Revision, mod, in.GoVersion)
}
