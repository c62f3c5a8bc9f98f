package conformance

import (
	"os"
	"testing"

	"github.com/cbprobe/cbprobe/internal/testref"
)

// TestReplayAllVectors replays every vector file and requires every step to
// match. The shared folder must hold its 338 files and 33,570 steps; a folder
// given with CBPROBE_CONFORMANCE_DIR (another seed's set) must hold at least one.
func TestReplayAllVectors(t *testing.T) {
	dir := testref.ConformanceDir(t)
	files, err := Expand([]string{dir})
	if err != nil {
		t.Fatalf("the 338 public conformance vectors are required: %v (they ship in shared/conformance beside the repository; set %s to that folder)", err, testref.ConformanceEnv)
	}
	wantFiles, wantSteps := 338, 33570
	if os.Getenv(testref.ConformanceEnv) != "" {
		wantFiles, wantSteps = len(files), -1
	}
	if len(files) != wantFiles {
		t.Fatalf("%s holds %d vector files, want %d", dir, len(files), wantFiles)
	}
	steps, matched := 0, 0
	for _, f := range files {
		v, err := LoadFile(f)
		if err != nil {
			t.Fatalf("load: %v", err)
		}
		r, err := Run(v)
		if err != nil {
			t.Fatalf("run: %v", err)
		}
		steps += len(r.Steps)
		if r.OK() {
			matched++
			continue
		}
		for i, m := range r.Mismatches {
			if i == 5 {
				t.Errorf("%s: ... %d mismatches in all", f, len(r.Mismatches))
				break
			}
			t.Error(m.String())
		}
	}
	if wantSteps >= 0 && steps != wantSteps {
		t.Errorf("replayed %d steps, want %d", steps, wantSteps)
	}
	if matched != wantFiles {
		t.Errorf("%d/%d vectors match", matched, wantFiles)
	}
	t.Logf("%d/%d vectors match (%d steps)", matched, len(files), steps)
}

// BenchmarkReplayAll replays every vector of the conformance folder (loaded once).
func BenchmarkReplayAll(b *testing.B) {
	files, err := Expand([]string{testref.ConformanceDir(b)})
	if err != nil {
		b.Fatal(err)
	}
	var vs []*Vector
	steps := 0
	for _, f := range files {
		v, err := LoadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		vs = append(vs, v)
		steps += len(v.Steps)
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, v := range vs {
			r, err := Run(v)
			if err != nil || !r.OK() {
				b.Fatalf("%s: %v", v.File, err)
			}
		}
	}
	b.ReportMetric(float64(steps), "steps/op")
}
