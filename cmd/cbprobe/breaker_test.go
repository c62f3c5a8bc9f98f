package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cbprobe/cbprobe/internal/testref"
)

// runBreakerCLI runs cbprobe with args and returns stdout and the exit code.
func runBreakerCLI(t *testing.T, args ...string) (string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	root := newRootCommand(&out, &errOut)
	root.SetArgs(args)
	ctx := context.Background()
	err := root.ExecuteContext(ctx)
	if err != nil && !isSilent(err) {
		out.WriteString("error: " + err.Error() + "\n")
	}
	return out.String(), exitCode(ctx, err)
}

func TestBreakerReplayCommand(t *testing.T) {
	dir := testref.ConformanceDir(t)
	data, err := os.ReadFile(filepath.Join(dir, "reset.json"))
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	broken := filepath.Join(tmp, "broken.json")
	if err := os.WriteFile(broken, bytes.Replace(data, []byte(`"op": "reset"`), []byte(`"op": "restart"`), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	// Change the first expected state CLOSED into OPEN: the model must disagree.
	wrong := filepath.Join(tmp, "wrong.json")
	if err := os.WriteFile(wrong, bytes.Replace(data, []byte(`"state": "CLOSED"`), []byte(`"state": "OPEN"`), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		args     []string
		wantCode int
		want     []string
	}{
		{"all vectors match", []string{"breaker", "replay", dir}, 0, []string{"338/338 vectors match (33570 steps)\n"}},
		{"one file", []string{"breaker", "replay", filepath.Join(dir, "reset.json")}, 0, []string{"1/1 vectors match"}},
		{"mismatch exits 1", []string{"breaker", "replay", wrong, filepath.Join(dir, "reset.json")}, 1, []string{"wrong.json:", "state: want OPEN, got CLOSED", "1/2 vectors match"}},
		{"malformed exits 2", []string{"breaker", "replay", broken}, 2, []string{"broken.json:", `unknown op "restart"`}},
		{"missing path exits 2", []string{"breaker", "replay", filepath.Join(tmp, "nope")}, 2, []string{"nope"}},
		{"no path exits 2", []string{"breaker", "replay"}, 2, []string{"at least one"}},
		{"explain", []string{"breaker", "replay", "--explain", filepath.Join(dir, "reset.json")}, 0, []string{"STEP", "AT_MS", "STATE_TRANSITION", "RESET", "steps, matches"}},
		{"explain mismatch exits 1", []string{"breaker", "replay", "--explain", wrong}, 1, []string{"want OPEN, got CLOSED"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, code := runBreakerCLI(t, tc.args...)
			if code != tc.wantCode {
				t.Errorf("exit %d, want %d; output:\n%s", code, tc.wantCode, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
}
