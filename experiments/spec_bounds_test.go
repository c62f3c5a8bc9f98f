package experiments

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/cbprobe/cbprobe/sim"
)

// TestSpecBadInput: an empty spec, a negative think and traffic planning more
// than sim.MaxRequestsPerRun requests are *SpecErrors (exit 2) naming the file
// and the key; planning never allocates the planned size.
func TestSpecBadInput(t *testing.T) {
	limit := strconv.Itoa(sim.MaxRequestsPerRun)
	cases := []struct {
		name, yaml string
		want       []string
	}{
		{"empty file", "", []string{"empty spec"}},
		{"only comments", "# nothing\n\n", []string{"empty spec"}},
		{"negative think", "name: x\ntraffic: {sequential: {users: 1, requests: 1, think: -1s}}\narms: [{name: a}]\n", []string{"traffic.sequential.think", "-1s", "negative"}},
		{"sequential too large", "name: x\ntraffic: {sequential: {users: 100000, requests: 1000000000}}\narms: [{name: a}]\n", []string{"traffic.sequential", limit}},
		{"users too many", "name: x\ntraffic: {sequential: {users: 1000000000, requests: 1}}\narms: [{name: a}]\n", []string{"traffic.sequential", limit}},
		{"phases too long", "name: x\ntraffic: {phases: '1/s:10000h'}\narms: [{name: a}]\n", []string{"traffic.phases", "36000000", limit}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "spec.yaml")
			if err := os.WriteFile(path, []byte(tc.yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			spec, err := LoadSpec(path)
			if err == nil {
				_, err = planArms(spec, "", "")
			}
			var se *SpecError
			if !errors.As(err, &se) {
				t.Fatalf("error = %v, want a *SpecError", err)
			}
			if !strings.HasPrefix(err.Error(), path) {
				t.Errorf("error %q does not start with the file %s", err, path)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// TestSpecAbsolutePaths: absolute flow: and config: paths are used as they
// are; relative ones are relative to the spec's folder.
func TestSpecAbsolutePaths(t *testing.T) {
	flowSrc, err := os.ReadFile(filepath.Join("..", "attack", "testdata", "order-and-pay.yaml"))
	if err != nil {
		t.Fatalf("the test reads attack/testdata/order-and-pay.yaml: %v", err)
	}
	elsewhere := t.TempDir()
	flow := filepath.Join(elsewhere, "flow.yaml")
	config := filepath.Join(elsewhere, "application.yml")
	if err := os.WriteFile(flow, flowSrc, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(config, []byte("resilience4j.circuitbreaker.configs.default.sliding-window-size: 7\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct{ name, flow, config string }{
		{"absolute", flow, config},
		{"relative", "../" + filepath.Base(elsewhere) + "/flow.yaml", "../" + filepath.Base(elsewhere) + "/application.yml"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			specDir := filepath.Join(filepath.Dir(elsewhere), "specs-"+tc.name)
			if err := os.MkdirAll(specDir, 0o755); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(specDir) })
			path := filepath.Join(specDir, "spec.yaml")
			src := "name: x\ntraffic: {phases: '1/s:1s', flow: '" + tc.flow + "'}\nconfig: '" + tc.config + "'\narms: [{name: a}]\n"
			if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
			spec, err := LoadSpec(path)
			if err != nil {
				t.Fatal(err)
			}
			plans, err := planArms(spec, "", "")
			if err != nil {
				t.Fatalf("planArms: %v", err)
			}
			if plans[0].flow == nil || plans[0].settings.Breaker.SlidingWindowSize != 7 {
				t.Fatalf("flow %v, window size %d: want the flow loaded and the config's window size 7", plans[0].flow, plans[0].settings.Breaker.SlidingWindowSize)
			}
		})
	}
}
