package buildinfo

import (
	"reflect"
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestFromBuildInfo(t *testing.T) {
	t.Parallel()
	bi := &debug.BuildInfo{GoVersion: "go1.99.1", Main: debug.Module{Version: "v1.2.3"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.modified", Value: "true"},
	}}
	in := fromBuildInfo(bi, true, "", "")
	require.Equal(t, Info{Version: "v1.2.3", Revision: "abc123", Modified: true, GoVersion: "go1.99.1"}, in)
	require.Equal(t, "v1.2.3 (revision abc123, modified, go1.99.1)", in.String())

	in = fromBuildInfo(bi, true, "v9.0.0", "def456")
	require.Equal(t, "v9.0.0", in.Version, "-ldflags wins")
	require.Equal(t, "def456", in.Revision)

	in = fromBuildInfo(nil, false, "", "")
	require.Equal(t, Info{Version: "(devel)", Revision: "unknown", GoVersion: runtime.Version()}, in, "no build info recorded")
	require.Equal(t, "(devel) (revision unknown, "+runtime.Version()+")", in.String())
}

func TestReadInATestBinary(t *testing.T) {
	t.Parallel()
	in := Read()
	require.NotEmpty(t, in.Version)
	require.Equal(t, runtime.Version(), in.GoVersion)
}

func TestLDFlagsNameThisPackage(t *testing.T) {
	t.Parallel()
	pkg := reflect.TypeOf(Info{}).PkgPath()
	require.Equal(t, "-X "+pkg+".Version=v1.2.3 -X "+pkg+".Revision=abc123", LDFlags("v1.2.3", "abc123"))
}
