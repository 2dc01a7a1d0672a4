// Command ociimage builds msgx's container image as an OCI image layout with no container
// daemon, buildah or registry, and unpacks an image's filesystem to check what it holds.
// `make image` and `make image-devbroker` run it (docs/deploy.md):
//
//	ociimage build -bin bin/image/bin -ref localhost/msgx:dev -out bin/image/msgx [-tar bin/image/msgx.tar]
//	ociimage unpack -layout bin/image/msgx -to bin/image/rootfs
//
// The image is one layer on scratch: the binaries in /usr/local/bin, the CA bundle, zoneinfo,
// and /etc/passwd and /etc/group naming the non-root user 65532 it runs as. Every file has a
// fixed time and owner, so the same inputs give the same digest.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "ociimage:", err)
		os.Exit(1)
	}
}

const usage = "usage: ociimage build|unpack [flags] (ociimage <command> -h lists them)"

func run(args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return errors.New(usage)
	}
	switch args[0] {
	case "build":
		return runBuild(args[1:], stdout)
	case "unpack":
		return runUnpack(args[1:])
	default:
		return fmt.Errorf("unknown command %q; %s", args[0], usage)
	}
}

func runBuild(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("build", flag.ContinueOnError)
	var o options
	fs.StringVar(&o.bin, "bin", "", "directory of the static binaries, installed in /usr/local/bin (required)")
	fs.StringVar(&o.ca, "ca", "/etc/ssl/certs/ca-certificates.crt", "CA bundle, installed as /etc/ssl/certs/ca-certificates.crt")
	fs.StringVar(&o.zoneinfo, "zoneinfo", "/usr/share/zoneinfo", "time zone database, installed in /usr/share/zoneinfo (empty: none)")
	fs.StringVar(&o.ref, "ref", "", "image reference, e.g. localhost/msgx:dev; its tag names the image in the layout (required)")
	fs.StringVar(&o.out, "out", "", "OCI image layout directory to write, replaced if it exists (required)")
	fs.StringVar(&o.tar, "tar", "", "also write a docker-archive tarball (docker load, podman load, kind load image-archive)")
	fs.StringVar(&o.version, "version", "", "label org.opencontainers.image.version")
	fs.StringVar(&o.revision, "revision", "", "label org.opencontainers.image.revision")
	fs.StringVar(&o.title, "title", "msgx", "label org.opencontainers.image.title")
	fs.StringVar(&o.description, "description", "airport operations message exchange: ingest, processor, dispatcher, jobs, console, msgxctl", "label org.opencontainers.image.description")
	fs.StringVar(&o.arch, "arch", runtime.GOARCH, "architecture the binaries were built for")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if o.bin == "" || o.ref == "" || o.out == "" {
		return errors.New("build: -bin, -ref and -out are required")
	}
	digest, err := build(o)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "%s %s@%s\n", o.out, o.ref, digest)
	return err
}

func runUnpack(args []string) error {
	fs := flag.NewFlagSet("unpack", flag.ContinueOnError)
	layoutDir := fs.String("layout", "", "OCI image layout directory holding one image (required)")
	to := fs.String("to", "", "directory to unpack the image's filesystem into, replaced if it exists (required)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *layoutDir == "" || *to == "" {
		return errors.New("unpack: -layout and -to are required")
	}
	return unpack(*layoutDir, *to)
}
