package obs_test

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/buildinfo"
	"github.com/msgx/msgx/pkg/obs"
)

// Every binary's registry carries msgx_build_info{version,revision,go_version} 1.
func TestRegistryHasBuildInfo(t *testing.T) {
	t.Parallel()
	mfs, err := obs.NewRegistry().Gather()
	require.NoError(t, err)
	in := buildinfo.Read()
	for _, mf := range mfs {
		if mf.GetName() != "msgx_build_info" {
			continue
		}
		require.Len(t, mf.GetMetric(), 1)
		m := mf.GetMetric()[0]
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		require.Equal(t, map[string]string{"version": in.Version, "revision": in.Revision, "go_version": runtime.Version()}, labels)
		require.Equal(t, 1.0, m.GetGauge().GetValue())
		return
	}
	t.Fatal("no msgx_build_info")
}
