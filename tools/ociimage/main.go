// Command ociimage writes cbprobe's container image as an OCI image-layout
// tarball, without a Docker engine or a registry: one layer holding the binary, a
// non-root user and a writable working directory on an empty base. Load it with
// `docker load`, `podman load` or `skopeo copy oci-archive:...`.
//
//	go run . -binary ../../dist/cbprobe_linux_amd64_v1/cbprobe -arch amd64 -out ../../dist/cbprobe-image.tar
package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// nonRoot is the user and group the image runs as (the distroless "nonroot" id).
const nonRoot = 65532

func main() {
	if err := run(os.Args[1:], os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "ociimage:", err)
		os.Exit(1)
	}
}

type options struct {
	binary, arch, out, tag, version, revision string
}

func run(args []string, stderr io.Writer) error {
	var o options
	fs := flag.NewFlagSet("ociimage", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.binary, "binary", "", "the linux cbprobe binary to put in the image (required)")
	fs.StringVar(&o.arch, "arch", "amd64", "the binary's GOARCH")
	fs.StringVar(&o.out, "out", "", "the OCI archive to write (required)")
	fs.StringVar(&o.tag, "tag", "cbprobe:dev", "the image reference recorded in the archive's index")
	fs.StringVar(&o.version, "version", "dev", "org.opencontainers.image.version label")
	fs.StringVar(&o.revision, "revision", "", "org.opencontainers.image.revision label (the commit)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if o.binary == "" || o.out == "" {
		return errors.New("-binary and -out are required")
	}
	bin, err := os.ReadFile(o.binary)
	if err != nil {
		return fmt.Errorf("read the binary: %w", err)
	}
	img, err := build(bin, o)
	if err != nil {
		return err
	}
	return writeArchive(img, o.out, o.tag)
}

// build assembles the image: empty base, one layer, a config that runs the
// binary as a non-root user in /work.
func build(bin []byte, o options) (v1.Image, error) {
	layerTar, err := rootfs(bin)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("make the layer: %w", err)
	}
	base := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	base = mutate.ConfigMediaType(base, types.OCIConfigJSON)
	img, err := mutate.AppendLayers(base, layer)
	if err != nil {
		return nil, fmt.Errorf("add the layer: %w", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("read the config: %w", err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", o.arch
	cf.Created = v1.Time{Time: time.Unix(0, 0).UTC()}
	cf.Config.Entrypoint = []string{"/usr/local/bin/cbprobe"}
	cf.Config.User = fmt.Sprintf("%d:%d", nonRoot, nonRoot)
	cf.Config.WorkingDir = "/work"
	cf.Config.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/work", "NO_COLOR=1"}
	cf.Config.Labels = map[string]string{
		"org.opencontainers.image.title":   "cbprobe",
		"org.opencontainers.image.version": o.version,
	}
	if o.revision != "" {
		cf.Config.Labels["org.opencontainers.image.revision"] = o.revision
	}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, fmt.Errorf("set the config: %w", err)
	}
	return img, nil
}

// rootfs is the layer's tar: the binary, /etc/passwd and /etc/group naming the
// non-root user, and writable /work and /tmp.
func rootfs(bin []byte) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	epoch := time.Unix(0, 0)
	dirs := []struct {
		name string
		mode int64
		uid  int
	}{{"etc/", 0o755, 0}, {"usr/", 0o755, 0}, {"usr/local/", 0o755, 0}, {"usr/local/bin/", 0o755, 0},
		{"tmp/", 0o1777, 0}, {"work/", 0o755, nonRoot}}
	for _, d := range dirs {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d.name, Mode: d.mode, Uid: d.uid, Gid: d.uid, ModTime: epoch}); err != nil {
			return nil, fmt.Errorf("layer: %w", err)
		}
	}
	files := []struct {
		name string
		mode int64
		data []byte
	}{
		{"etc/passwd", 0o644, []byte(fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:/work:/sbin/nologin\n", nonRoot, nonRoot))},
		{"etc/group", 0o644, []byte(fmt.Sprintf("root:x:0:\nnonroot:x:%d:\n", nonRoot))},
		{"usr/local/bin/cbprobe", 0o755, bin},
	}
	for _, f := range files {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: f.name, Mode: f.mode, Size: int64(len(f.data)), ModTime: epoch}); err != nil {
			return nil, fmt.Errorf("layer: %w", err)
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, fmt.Errorf("layer: %w", err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("layer: %w", err)
	}
	return buf.Bytes(), nil
}

// writeArchive writes img as an OCI image layout and tars the layout into out.
func writeArchive(img v1.Image, out, tag string) error {
	dir, err := os.MkdirTemp("", "ociimage-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return fmt.Errorf("write the layout: %w", err)
	}
	ann := map[string]string{"org.opencontainers.image.ref.name": tag}
	if _, short, ok := strings.Cut(tag, ":"); ok {
		ann["org.opencontainers.image.ref.name"] = short
		ann["io.containerd.image.name"] = tag
	}
	if err := p.AppendImage(img, layout.WithAnnotations(ann)); err != nil {
		return fmt.Errorf("write the image: %w", err)
	}
	return tarDir(dir, out)
}

func tarDir(dir, out string) (err error) {
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	f, err := os.Create(out)
	if err != nil {
		return fmt.Errorf("create %s: %w", out, err)
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	tw := tar.NewWriter(f)
	err = filepath.WalkDir(dir, func(path string, d os.DirEntry, werr error) error {
		if werr != nil {
			return werr
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil || rel == "." {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		hdr, err := tar.FileInfoHeader(info, "")
		if err != nil {
			return err
		}
		hdr.Name = filepath.ToSlash(rel)
		if d.IsDir() {
			hdr.Name += "/"
		}
		hdr.ModTime = time.Unix(0, 0)
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		src, err := os.Open(path)
		if err != nil {
			return err
		}
		defer src.Close()
		_, err = io.Copy(tw, src)
		return err
	})
	if err != nil {
		return fmt.Errorf("tar the layout into %s: %w", out, err)
	}
	return tw.Close()
}
