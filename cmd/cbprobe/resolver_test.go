package main

import (
	"context"
	"encoding/json"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cbprobe/cbprobe/results"
	"github.com/cbprobe/cbprobe/sim"
)

// TestPredictEqualsExperimentPrediction runs `cbprobe experiment run` and `cbprobe
// predict --config` on the same application.yml (one without the reference
// service's pg.* keys, whose retry and database latency the two commands used to
// read differently) and requires the prediction printed beside each measurement to
// be the one predict prints: same seed, same runs, so equal to the last digit.
func TestPredictEqualsExperimentPrediction(t *testing.T) {
	const runs, seed = "300", "4"
	cfg := filepath.Join("testdata", "resolver", "application.yml")
	dir := filepath.Join(t.TempDir(), "run")
	stdout, stderr, code := runCLI(context.Background(), "experiment", "run", filepath.Join("testdata", "resolver", "spec.yaml"),
		"--speed", "20", "--predict-runs", runs, "--seed", seed, "--out", dir, "--color", "never", "-q")
	// The measured run may hold or break the spec's (absent) expectations; only an
	// infrastructure or usage error stops the comparison.
	if code == 2 || code > 3 {
		t.Fatalf("experiment exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	rec, err := results.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	arm := rec.Run.Arm("own")
	if arm == nil {
		t.Fatalf("run.json has no arm \"own\": %+v", rec.Run.Arms)
	}
	out, errOut, code := runPredictCLI(t, "--config", cfg, "--sequential", "30", "--error-rate", "0.5",
		"--latency", "100ms-500ms", "--runs", runs, "--seed", seed, "--json")
	if code != 0 {
		t.Fatalf("predict exit %d: %s", code, errOut)
	}
	// The fields compared below (sim.Prediction's JSON names).
	var p struct {
		FirstOpenRequest        sim.Band         `json:"firstOpenRequest"`
		FirstRejectedRequest    sim.Band         `json:"firstRejectedRequest"`
		RejectedBand            sim.Band         `json:"rejectedBand"`
		AttemptsPerRequest      sim.AttemptsStat `json:"attemptsPerRequest"`
		HalfOpenPassProbability float64          `json:"halfOpenPassProbability"`
	}
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatalf("predict --json: %v", err)
	}
	if p.AttemptsPerRequest.MaxAttempts != 2 {
		t.Errorf("predict resolved %d retry attempts, want the file's max-attempts 2", p.AttemptsPerRequest.MaxAttempts)
	}
	compared := 0
	for _, c := range arm.Comparisons {
		var want sim.Band
		scale := 1.0
		switch {
		case c.Metric == "first OPEN request":
			want = p.FirstOpenRequest
		case c.Metric == "first rejected request":
			want = p.FirstRejectedRequest
		case c.Metric == "rejected share":
			want, scale = p.RejectedBand, 100
		case strings.HasPrefix(c.Metric, "gateway attempts per request"):
			want = p.AttemptsPerRequest.UnobstructedBand
		default:
			continue
		}
		compared++
		for _, v := range []struct {
			name      string
			got, want float64
		}{{"P5", c.PredictedP5, scale * want.P5}, {"P50", c.PredictedP50, scale * want.P50}, {"P95", c.PredictedP95, scale * want.P95}} {
			if math.Abs(v.got-v.want) > 1e-9*math.Max(1, math.Abs(v.want)) {
				t.Errorf("%s %s: experiment predicted %v, predict %v", c.Metric, v.name, v.got, v.want)
			}
		}
	}
	if compared != 4 {
		t.Errorf("compared %d predictions, want 4 (first OPEN, first rejected, rejected share, attempts): %+v", compared, arm.Comparisons)
	}
	if got, ok := arm.Parameters["halfOpenPassProbability"].(float64); !ok || got != p.HalfOpenPassProbability {
		t.Errorf("half-open pass probability: experiment %v, predict %v", arm.Parameters["halfOpenPassProbability"], p.HalfOpenPassProbability)
	}
}
