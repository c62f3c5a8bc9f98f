// Package testref finds the read-only reference data some tests read and
// that the repository does not hold: the public conformance vectors
// (shared/conformance, 338 files recorded from the real Resilience4j) and
// the captured actuator and Prometheus outputs (shared/reference/fixtures).
//
// Each is found, in order, in the folder an environment variable names
// (CBPROBE_CONFORMANCE_DIR, CBPROBE_SHARED_DIR), then in the folder "shared"
// beside the repository's root (the root is found by walking up to go.mod,
// so the answer does not depend on the test package's depth). When neither
// exists the test fails, naming what is missing and how to provide it: a
// test whose input is missing never skips.
package testref

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// ConformanceEnv names the folder of the public conformance vectors.
const ConformanceEnv = "CBPROBE_CONFORMANCE_DIR"

// SharedEnv names the shared reference folder (with reference/fixtures).
const SharedEnv = "CBPROBE_SHARED_DIR"

const module = "module github.com/cbprobe/cbprobe\n"

// ConformanceDir returns the folder of the public conformance vectors, or
// fails t saying what is missing and how to provide it.
func ConformanceDir(t testing.TB) string {
	t.Helper()
	return find(t, ConformanceEnv, filepath.Join("shared", "conformance"),
		"the public conformance vectors (the 338 *.json files of shared/conformance)")
}

// FixturesDir returns the folder of the captured actuator and Prometheus
// outputs (shared/reference/fixtures), or fails t saying what is missing.
func FixturesDir(t testing.TB) string {
	t.Helper()
	if d := os.Getenv(SharedEnv); d != "" {
		return check(t, SharedEnv, filepath.Join(d, "reference", "fixtures"),
			"the captured actuator and Prometheus outputs (shared/reference/fixtures)")
	}
	return find(t, "", filepath.Join("shared", "reference", "fixtures"),
		"the captured actuator and Prometheus outputs (shared/reference/fixtures; set "+SharedEnv+" to the shared folder)")
}

// find returns $env when set, else rel beside the repository's root.
func find(t testing.TB, env, rel, what string) string {
	t.Helper()
	if env != "" {
		if d := os.Getenv(env); d != "" {
			return check(t, env, d, what)
		}
	}
	root, err := moduleRoot()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	dir := filepath.Join(filepath.Dir(root), rel)
	if _, err := os.Stat(dir); err != nil {
		hint := "place the shared folder beside the repository"
		if env != "" {
			hint = "set " + env + " to the folder holding them, or " + hint
		}
		t.Fatalf("missing %s: %s does not exist; they are not part of this repository: %s", what, dir, hint)
	}
	return dir
}

// check returns dir when it exists, else fails naming the variable that gave it.
func check(t testing.TB, env, dir, what string) string {
	t.Helper()
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("missing %s: %s=%s, but %v", what, env, os.Getenv(env), err)
	}
	return dir
}

// moduleRoot walks up from the working directory to cbprobe's go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("find the repository root: %w", err)
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.HasPrefix(data, []byte(module)) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("find the repository root: no go.mod of github.com/cbprobe/cbprobe above the working directory")
		}
		dir = parent
	}
}
