package experiments

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cbprobe/cbprobe/results"
)

// TestRunRetryThroughFault runs the retry experiment with --gateway fault on the embedded
// reference service: cbprobe fault injects the spec's errors and latency in front of a pgsim
// that accepts every payment, and counts attempts by the X-Request-Id the service sends. Real
// time (fault's latency is not scaled), about 15 s, in parallel with the other experiments.
// Sequential traffic: the seeded decisions come in the same order every run, so retry-1's
// exact single attempt and retry-3's attempts inside the band hold at any load that does not
// stall the process for 100 ms (the same argument as TestRunRetry).
func TestRunRetryThroughFault(t *testing.T) {
	t.Parallel()
	spec, err := Named("retry")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "retry")
	if _, _, err := Run(context.Background(), Options{Spec: spec, Speed: 1, Seed: 1, Out: dir, PredictRuns: predictRuns, Gateway: GatewayFault}); err != nil {
		t.Fatalf("Run: %v", err)
	}
	rec, err := results.Load(dir)
	if err != nil {
		t.Fatalf("results.Load: %v", err)
	}
	r3, r1 := rec.Run.Arm("retry-3"), rec.Run.Arm("retry-1")
	if r1.AttemptsPerRequest != 1 {
		t.Errorf("retry-1: %.3f attempts per request counted by fault, want exactly 1", r1.AttemptsPerRequest)
	}
	if c := comparison(t, r3, "gateway attempts per request"); c.OutsideBand || c.Measured <= 1 {
		t.Errorf("retry-3: %.3f attempts per request counted by fault, predicted %.3f [%.3f, %.3f]; want > 1 and inside the band",
			c.Measured, c.PredictedP50, c.PredictedP5, c.PredictedP95)
	}
	for _, a := range rec.Run.Arms {
		if tr := firstOpen(t, &a); tr.Cause == "" || tr.Cause == "unknown" {
			t.Errorf("arm %s: first OPEN cause %q", a.Name, tr.Cause)
		}
	}
}

func TestGatewayOption(t *testing.T) {
	spec, err := Named("retry")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, gateway string
		speed         float64
		want          string
	}{
		{"unknown gateway", "toxiproxy", 1, `"toxiproxy" is not pgsim or fault`},
		{"fault is real time", GatewayFault, 5, "drop --speed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := Run(context.Background(), Options{Spec: spec, Speed: tc.speed, Gateway: tc.gateway, Out: filepath.Join(t.TempDir(), "run")})
			var se *SpecError
			if !errors.As(err, &se) || se.Source != "--gateway" || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Run: %v, want a --gateway error saying %q", err, tc.want)
			}
		})
	}
}
