package conformance

import (
	"path/filepath"
	"testing"
)

// projectVectorsDir holds the vectors cbprobe recorded itself with the Java
// recorder (java/) against the released Resilience4j 2.4.0: the settings the
// public set does not cover, Retry and TimeLimiter.
const projectVectorsDir = "testdata/vectors"

// TestReplayProjectVectors replays every project vector of every kind through the
// model and requires every step to match what the released library did.
func TestReplayProjectVectors(t *testing.T) {
	files, err := Expand([]string{projectVectorsDir})
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, f := range files {
		a, err := LoadAny(f)
		if err != nil {
			t.Fatalf("load: %v", err)
		}
		kinds[a.Kind()]++
		r, err := RunAny(a)
		if err != nil {
			t.Fatalf("run: %v", err)
		}
		for _, m := range r.Mismatches {
			t.Error(m.String())
		}
	}
	// Every kind must be present, so that a lost folder cannot pass this test.
	for _, k := range []string{KindCircuitBreaker, KindRetry, KindTimeLimiter} {
		if kinds[k] == 0 {
			t.Errorf("no %s vector in %s", k, filepath.Clean(projectVectorsDir))
		}
	}
	t.Logf("%d project vectors: %v", len(files), kinds)
}
