package main

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
)

// unpack replaces the directory to with the filesystem of the one image in the layout
// layoutDir, its layers applied in order, so the files can be checked or run as they are.
func unpack(layoutDir, to string) error {
	idx, err := layout.ImageIndexFromPath(layoutDir)
	if err != nil {
		return fmt.Errorf("read layout %s: %w", layoutDir, err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		return fmt.Errorf("read layout %s: %w", layoutDir, err)
	}
	if len(m.Manifests) != 1 {
		return fmt.Errorf("layout %s holds %d images, want 1", layoutDir, len(m.Manifests))
	}
	img, err := idx.Image(m.Manifests[0].Digest)
	if err != nil {
		return fmt.Errorf("read image: %w", err)
	}
	if err := os.RemoveAll(to); err != nil {
		return err
	}
	if err := os.MkdirAll(to, 0o755); err != nil {
		return err
	}
	root, err := os.OpenRoot(to)
	if err != nil {
		return err
	}
	defer root.Close()
	rc := mutate.Extract(img)
	defer rc.Close()
	return extract(tar.NewReader(rc), root)
}

// extract writes a tar's directories, regular files and symlinks under root, which keeps every
// path inside it.
func extract(tr *tar.Reader, root *os.Root) error {
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read layer: %w", err)
		}
		mode := fs.FileMode(h.Mode).Perm()
		switch h.Typeflag {
		case tar.TypeDir:
			err = root.MkdirAll(h.Name, mode)
		case tar.TypeSymlink:
			err = root.Symlink(h.Linkname, h.Name)
		case tar.TypeReg:
			err = writeFile(root, h.Name, mode, tr)
		default:
			err = fmt.Errorf("unexpected entry type %q", h.Typeflag)
		}
		if err != nil {
			return fmt.Errorf("unpack %s: %w", h.Name, err)
		}
	}
}

func writeFile(root *os.Root, name string, mode fs.FileMode, r io.Reader) error {
	f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
