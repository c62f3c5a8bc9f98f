package main

import (
	"strconv"
	"strings"
	"testing"

	"github.com/cbprobe/cbprobe/sim"
)

// TestPredictRefusesHugeTraffic: traffic planning more than sim.MaxRequestsPerRun
// requests a run is a usage error naming the flags and the limit, never a panic
// or an allocation of the planned size.
func TestPredictRefusesHugeTraffic(t *testing.T) {
	limit := strconv.Itoa(sim.MaxRequestsPerRun)
	cases := []struct {
		name string
		args []string
		want []string
	}{
		{"users x sequential", []string{"--users", "100000", "--sequential", "1000000000"}, []string{"--users", "--sequential", limit}},
		{"users", []string{"--users", "1000000000", "--sequential", "1"}, []string{"--users", limit}},
		{"phases", []string{"--phases", "1/s:10000h"}, []string{"--phases", "36000000", limit}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, stderr, code := runPredictCLI(t, append(tc.args, "--runs", "10")...)
			if code != 2 {
				t.Fatalf("exit %d, want 2: %s", code, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q: %s", w, stderr)
				}
			}
		})
	}
}
