package main

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// options are what build puts into the image and where it writes it.
type options struct {
	bin, ca, zoneinfo  string // inputs on the host
	ref, out, tar      string
	version, revision  string
	title, description string
	arch               string
}

// The user the image runs as; the Kubernetes manifests set the same runAsUser and runAsGroup.
const (
	uid    = 65532
	passwd = "root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/nonexistent:/sbin/nologin\n"
	group  = "root:x:0:\nnonroot:x:65532:\n"
)

// epoch is every file's and the image's time: a fixed one keeps the digest a function of the
// contents.
var epoch = time.Unix(0, 0).UTC()

// build writes the image to the layout o.out (and the tarball o.tar) and returns its manifest
// digest, the one a registry serves it under.
func build(o options) (string, error) {
	fsys, err := rootfs(o)
	if err != nil {
		return "", err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(fsys)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return "", fmt.Errorf("layer: %w", err)
	}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{Layer: layer, MediaType: types.OCILayer,
		History: v1.History{Created: v1.Time{Time: epoch}, CreatedBy: "ociimage build"}})
	if err != nil {
		return "", fmt.Errorf("append layer: %w", err)
	}
	if img, err = mutate.ConfigFile(img, configFile(o, img)); err != nil {
		return "", fmt.Errorf("config: %w", err)
	}
	digest, err := img.Digest()
	if err != nil {
		return "", fmt.Errorf("digest: %w", err)
	}
	if err := writeLayout(o, img); err != nil {
		return "", err
	}
	if o.tar != "" {
		ref, err := name.ParseReference(o.ref)
		if err != nil {
			return "", fmt.Errorf("parse -ref: %w", err)
		}
		if err := tarball.WriteToFile(o.tar, ref, img); err != nil {
			return "", fmt.Errorf("write %s: %w", o.tar, err)
		}
	}
	return digest.String(), nil
}

// configFile is the image's configuration: the user, PATH (kubectl exec … msgxctl), the ops
// port the manifests probe, and the labels.
func configFile(o options, img v1.Image) *v1.ConfigFile {
	labels := map[string]string{
		"org.opencontainers.image.title":       o.title,
		"org.opencontainers.image.description": o.description,
		"org.opencontainers.image.source":      "https://github.com/msgx/msgx",
	}
	if o.version != "" {
		labels["org.opencontainers.image.version"] = o.version
	}
	if o.revision != "" {
		labels["org.opencontainers.image.revision"] = o.revision
	}
	cf, _ := img.ConfigFile() // an appended image's config is in memory: no error
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", o.arch
	cf.Created = v1.Time{Time: epoch}
	cf.Config = v1.Config{
		User:         fmt.Sprintf("%d:%d", uid, uid),
		Env:          []string{"PATH=/usr/local/bin"},
		WorkingDir:   "/",
		ExposedPorts: map[string]struct{}{"8080/tcp": {}},
		Labels:       labels,
	}
	return cf
}

// writeLayout replaces o.out with a layout holding the image, named by the reference's tag
// (org.opencontainers.image.ref.name: `skopeo copy oci:<out>:<tag> …` finds it).
func writeLayout(o options, img v1.Image) error {
	ref, err := name.ParseReference(o.ref)
	if err != nil {
		return fmt.Errorf("parse -ref: %w", err)
	}
	tag := ref.Identifier()
	if err := os.RemoveAll(o.out); err != nil {
		return err
	}
	p, err := layout.Write(o.out, empty.Index)
	if err != nil {
		return fmt.Errorf("layout %s: %w", o.out, err)
	}
	if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": tag,
		"io.containerd.image.name":          ref.Name(),
	})); err != nil {
		return fmt.Errorf("layout %s: %w", o.out, err)
	}
	return nil
}

// rootfs is the layer's tar: the image's whole filesystem.
func rootfs(o options) ([]byte, error) {
	var buf bytes.Buffer
	w := &treeWriter{tw: tar.NewWriter(&buf), dirs: map[string]bool{}}
	w.file("etc/passwd", 0o644, []byte(passwd))
	w.file("etc/group", 0o644, []byte(group))
	if ca, err := os.ReadFile(o.ca); err != nil {
		w.err = fmt.Errorf("CA bundle: %w", err)
	} else {
		w.file("etc/ssl/certs/ca-certificates.crt", 0o644, ca)
	}
	if o.zoneinfo != "" {
		w.tree("usr/share/zoneinfo", o.zoneinfo, 0o644)
	}
	w.tree("usr/local/bin", o.bin, 0o755)
	if w.err != nil {
		return nil, w.err
	}
	if err := w.tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// treeWriter writes a tar of root-owned files with the fixed time; a file's parent
// directories come before it. The first error sticks.
type treeWriter struct {
	tw   *tar.Writer
	dirs map[string]bool
	err  error
}

func (w *treeWriter) header(h *tar.Header) {
	if w.err != nil {
		return
	}
	name := strings.TrimSuffix(h.Name, "/")
	w.mkdirAll(path.Dir(name))
	h.ModTime, h.Uid, h.Gid, h.Format = epoch, 0, 0, tar.FormatPAX
	if h.Typeflag == tar.TypeDir {
		w.dirs[name] = true
	}
	if w.err == nil {
		w.err = w.tw.WriteHeader(h)
	}
}

func (w *treeWriter) mkdirAll(dir string) {
	if dir == "." || dir == "" || w.dirs[dir] {
		return
	}
	w.mkdirAll(path.Dir(dir))
	w.header(&tar.Header{Typeflag: tar.TypeDir, Name: dir + "/", Mode: 0o755})
}

func (w *treeWriter) file(name string, mode int64, data []byte) {
	w.header(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(data))})
	if w.err == nil {
		_, w.err = w.tw.Write(data)
	}
}

// tree copies the host directory src to dst: regular files with mode, relative symlinks as
// they are (zoneinfo's aliases); absolute symlinks point at the host and are left out.
func (w *treeWriter) tree(dst, src string, mode int64) {
	if w.err != nil {
		return
	}
	w.mkdirAll(dst)
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || w.err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil || rel == "." {
			return err
		}
		name := path.Join(dst, filepath.ToSlash(rel))
		switch {
		case d.IsDir():
			w.mkdirAll(name)
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			if !filepath.IsAbs(target) {
				w.header(&tar.Header{Typeflag: tar.TypeSymlink, Name: name, Linkname: target, Mode: 0o777})
			}
		case d.Type().IsRegular():
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			w.file(name, mode, data)
		}
		return w.err
	})
	if err != nil && w.err == nil {
		w.err = fmt.Errorf("copy %s: %w", src, err)
	}
}
