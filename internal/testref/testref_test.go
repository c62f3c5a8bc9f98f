package testref

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// fakeT records the message of Fatalf and stops its goroutine, as testing.T does.
type fakeT struct {
	testing.TB
	msg string
}

func (f *fakeT) Helper() {}

func (f *fakeT) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// call runs fn with a fakeT and returns its result and the Fatalf message.
func call(fn func(testing.TB) string) (got, msg string) {
	f := &fakeT{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		got = fn(f)
	}()
	<-done
	return got, f.msg
}

func TestConformanceDir(t *testing.T) {
	existing := t.TempDir()
	missing := filepath.Join(existing, "nope")
	cases := []struct {
		name     string
		env      string
		want     string
		wantMsgs []string // all in the failure message; none means no failure
	}{
		{"from the variable", existing, existing, nil},
		{"the variable names a missing folder", missing, "", []string{"missing the public conformance vectors", ConformanceEnv + "=" + missing}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(ConformanceEnv, tc.env)
			got, msg := call(ConformanceDir)
			if len(tc.wantMsgs) == 0 {
				if msg != "" || got != tc.want {
					t.Errorf("ConformanceDir = %q (failure %q), want %q", got, msg, tc.want)
				}
				return
			}
			for _, w := range tc.wantMsgs {
				if !strings.Contains(msg, w) {
					t.Errorf("failure %q does not say %q", msg, w)
				}
			}
		})
	}
}

// TestBesideTheRepository checks the default: shared/... beside the
// repository root, found from the module's go.mod whatever the package depth.
func TestBesideTheRepository(t *testing.T) {
	t.Setenv(ConformanceEnv, "")
	t.Setenv(SharedEnv, "")
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil || filepath.Base(filepath.Dir(mustGetwd(t))) != "internal" {
		t.Fatalf("moduleRoot = %q from %q, want the repository root two levels up", root, mustGetwd(t))
	}
	want := filepath.Join(filepath.Dir(root), "shared", "conformance")
	got, msg := call(ConformanceDir)
	if _, statErr := os.Stat(want); statErr != nil {
		// The folder is absent here: the failure must name it and both ways to provide it.
		for _, w := range []string{want, ConformanceEnv, "beside the repository"} {
			if !strings.Contains(msg, w) {
				t.Errorf("failure %q does not say %q", msg, w)
			}
		}
		return
	}
	if got != want || msg != "" {
		t.Errorf("ConformanceDir = %q (failure %q), want %q", got, msg, want)
	}
}

func mustGetwd(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return wd
}
