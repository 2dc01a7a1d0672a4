package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/stretchr/testify/require"
)

// setup lays out the host inputs: a binary, a CA bundle and a zoneinfo tree with a relative
// and an absolute symlink.
func setup(t *testing.T) options {
	t.Helper()
	dir := t.TempDir()
	write := func(name, data string, mode os.FileMode) {
		p := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(data), mode))
	}
	write("bin/msgxctl", "#!/bin/sh\necho msgxctl\n", 0o700)
	write("ca.crt", "-----BEGIN CERTIFICATE-----\n", 0o600)
	write("zoneinfo/Asia/Shanghai", "TZif", 0o600)
	require.NoError(t, os.Symlink("Asia/Shanghai", filepath.Join(dir, "zoneinfo", "PRC")))
	require.NoError(t, os.Symlink("/etc/localtime", filepath.Join(dir, "zoneinfo", "localtime")))
	return options{bin: filepath.Join(dir, "bin"), ca: filepath.Join(dir, "ca.crt"), zoneinfo: filepath.Join(dir, "zoneinfo"),
		ref: "localhost/msgx:dev", out: filepath.Join(dir, "layout"), tar: filepath.Join(dir, "msgx.tar"),
		version: "v1.2.3", revision: "abc123", title: "msgx", arch: "amd64"}
}

func TestBuildThenUnpack(t *testing.T) {
	t.Parallel()
	o := setup(t)
	var out bytes.Buffer
	require.NoError(t, run([]string{"build", "-bin", o.bin, "-ca", o.ca, "-zoneinfo", o.zoneinfo, "-ref", o.ref,
		"-out", o.out, "-tar", o.tar, "-revision", o.revision}, &out))
	require.Regexp(t, `^\S+/layout localhost/msgx:dev@sha256:[0-9a-f]{64}\n$`, out.String())
	require.FileExists(t, o.tar)

	idx, err := layout.ImageIndexFromPath(o.out)
	require.NoError(t, err)
	m, err := idx.IndexManifest()
	require.NoError(t, err)
	require.Len(t, m.Manifests, 1)
	require.Equal(t, "dev", m.Manifests[0].Annotations["org.opencontainers.image.ref.name"])
	img, err := idx.Image(m.Manifests[0].Digest)
	require.NoError(t, err)
	cf, err := img.ConfigFile()
	require.NoError(t, err)
	require.Equal(t, "65532:65532", cf.Config.User)
	require.Equal(t, "abc123", cf.Config.Labels["org.opencontainers.image.revision"])

	rootDir := filepath.Join(t.TempDir(), "rootfs")
	require.NoError(t, run([]string{"unpack", "-layout", o.out, "-to", rootDir}, &out))
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(rootDir, name))
		require.NoError(t, err)
		return string(b)
	}
	require.Contains(t, read("etc/passwd"), "nonroot:x:65532:65532:")
	require.Contains(t, read("etc/group"), "nonroot:x:65532:")
	require.Equal(t, "-----BEGIN CERTIFICATE-----\n", read("etc/ssl/certs/ca-certificates.crt"))
	require.Equal(t, "TZif", read("usr/share/zoneinfo/PRC"), "relative symlinks kept")
	_, err = os.Lstat(filepath.Join(rootDir, "usr/share/zoneinfo/localtime"))
	require.ErrorIs(t, err, os.ErrNotExist, "a symlink to the host's /etc is left out")
	st, err := os.Stat(filepath.Join(rootDir, "usr/local/bin/msgxctl"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o755), st.Mode().Perm(), "binaries are executable by the image's user")
}

func TestSameInputsSameDigest(t *testing.T) {
	t.Parallel()
	o := setup(t)
	first, err := build(o)
	require.NoError(t, err)
	require.NoError(t, os.Chtimes(filepath.Join(o.bin, "msgxctl"), epoch.AddDate(30, 0, 0), epoch.AddDate(30, 0, 0)))
	o.out = filepath.Join(t.TempDir(), "again")
	again, err := build(o)
	require.NoError(t, err)
	require.Equal(t, first, again, "file times and the build time do not change the digest")
}
