package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

func TestReadBuildInfo(t *testing.T) {
	mod := func(settings ...debug.BuildSetting) *debug.BuildInfo {
		return &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/cbprobe/cbprobe", Version: "(devel)"}, Settings: settings}
	}
	tests := []struct {
		name    string
		release string
		bi      *debug.BuildInfo
		ok      bool
		want    string
		dirty   bool
	}{
		{name: "clone build, clean", bi: mod(debug.BuildSetting{Key: "vcs.revision", Value: "0123456789abcdef0123"}, debug.BuildSetting{Key: "vcs.modified", Value: "false"},
			debug.BuildSetting{Key: "GOOS", Value: "linux"}, debug.BuildSetting{Key: "GOARCH", Value: "amd64"}), ok: true,
			want: "(devel) (commit 0123456789ab) go1.26.8 linux/amd64"},
		{name: "clone build, dirty", bi: mod(debug.BuildSetting{Key: "vcs.revision", Value: "abc"}, debug.BuildSetting{Key: "vcs.modified", Value: "true"}), ok: true,
			want: "(devel) (commit abc, dirty) go1.26.8", dirty: true},
		{name: "release stamps the version", release: "1.2.3", bi: mod(debug.BuildSetting{Key: "vcs.revision", Value: "abc"}), ok: true,
			want: "1.2.3 (commit abc) go1.26.8"},
		{name: "no VCS information", bi: mod(), ok: true, want: "(devel) (commit unknown) go1.26.8"},
		{name: "no build information", ok: false, want: "unknown (commit unknown)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := readBuildInfo(tc.release, tc.bi, tc.ok)
			if got.String() != tc.want || got.Dirty != tc.dirty {
				t.Errorf("got %q dirty %v, want %q dirty %v", got.String(), got.Dirty, tc.want, tc.dirty)
			}
		})
	}
}

// TestVersionOfBuiltBinary builds cbprobe from this work tree, the way a user
// does from a clone, and checks that `version --json` names the checked-out commit.
func TestVersionOfBuiltBinary(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Fatal("git is needed to know the expected commit: install git")
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	head, err := exec.Command(git, "-C", root, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatalf("git rev-parse HEAD in %s: %v (the test needs the repository's .git)", root, err)
	}
	bin := filepath.Join(t.TempDir(), "cbprobe")
	build := exec.Command("go", "build", "-o", bin, "./cmd/cbprobe")
	build.Dir = root
	build.Env = append(os.Environ(), "GOFLAGS=-buildvcs=true")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version", "--json").Output()
	if err != nil {
		t.Fatalf("cbprobe version --json: %v", err)
	}
	var info buildInfo
	if err := json.Unmarshal(out, &info); err != nil {
		t.Fatalf("version --json is not JSON: %v\n%s", err, out)
	}
	if info.Commit != strings.TrimSpace(string(head)) {
		t.Errorf("commit %q, want HEAD %s", info.Commit, head)
	}
	if info.GoVersion == "" || info.Module != "github.com/cbprobe/cbprobe" {
		t.Errorf("build information incomplete: %+v", info)
	}
	line, err := exec.Command(bin, "--version").Output()
	if err != nil || !strings.Contains(string(line), info.Commit[:12]) {
		t.Errorf("--version printed %q (err %v), want the commit %s", line, err, info.Commit[:12])
	}
}
