package main

import (
	"archive/tar"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// TestArchive builds an image around a small file and reads the archive back
// as an OCI layout: one image, run as the non-root user, the binary at the
// entrypoint with its mode.
func TestArchive(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "cbprobe")
	if err := os.WriteFile(bin, []byte("#!/bin/true\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "image.tar")
	if err := run([]string{"-binary", bin, "-arch", "arm64", "-out", out, "-revision", "abc123"}, io.Discard); err != nil {
		t.Fatal(err)
	}
	untar(t, out, filepath.Join(dir, "layout"))
	p, err := layout.FromPath(filepath.Join(dir, "layout"))
	if err != nil {
		t.Fatal(err)
	}
	idx, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Manifests) != 1 {
		t.Fatalf("index has %d manifests, want 1", len(m.Manifests))
	}
	img, err := idx.Image(m.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.Config.User != "65532:65532" || cf.Architecture != "arm64" || cf.OS != "linux" {
		t.Errorf("config user %q arch %q os %q, want 65532:65532 arm64 linux", cf.Config.User, cf.Architecture, cf.OS)
	}
	if len(cf.Config.Entrypoint) != 1 || cf.Config.Entrypoint[0] != "/usr/local/bin/cbprobe" {
		t.Errorf("entrypoint %q", cf.Config.Entrypoint)
	}
	if cf.Config.Labels["org.opencontainers.image.revision"] != "abc123" {
		t.Errorf("labels %v lack the revision", cf.Config.Labels)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers %d, err %v; want 1", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	found := map[string]*tar.Header{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		found[h.Name] = h
	}
	if h := found["usr/local/bin/cbprobe"]; h == nil || h.Mode&0o111 == 0 {
		t.Errorf("binary missing or not executable: %+v", h)
	}
	if h := found["work/"]; h == nil || h.Uid != nonRoot {
		t.Errorf("/work not owned by the non-root user: %+v", h)
	}
}

func TestMissingFlags(t *testing.T) {
	if err := run([]string{"-binary", "x"}, io.Discard); err == nil {
		t.Fatal("no error without -out")
	}
	if err := run([]string{"-binary", filepath.Join(t.TempDir(), "absent"), "-out", "x.tar"}, io.Discard); err == nil {
		t.Fatal("no error for a missing binary")
	}
}

func untar(t *testing.T, archive, dst string) {
	t.Helper()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dst, filepath.FromSlash(h.Name))
		if h.Typeflag == tar.TypeDir {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
