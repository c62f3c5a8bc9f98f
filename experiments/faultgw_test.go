package experiments

import (
	"context"
	"errors"
	"os"
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

// TestStubFileErrorsNameTheLine: a spec whose stub route file is wrong is refused before
// anything starts, naming the spec's key, the route file and its line (exit 2).
func TestStubFileErrorsNameTheLine(t *testing.T) {
	dir := t.TempDir()
	specPath := filepath.Join(dir, "spec.yaml")
	y := "name: s\ntraffic: {sequential: {users: 1, requests: 1}}\ngateway: {kind: fault, stub: routes.yaml}\narms: [{name: a}]\n"
	if err := os.WriteFile(filepath.Join(dir, "routes.yaml"), []byte("routes:\n  - path: /x\n    status: 999\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	spec, err := ParseSpec(specPath, []byte(y))
	if err != nil {
		t.Fatal(err)
	}
	spec.Dir = dir
	_, _, err = Run(context.Background(), Options{Spec: spec, Speed: 1, Out: filepath.Join(dir, "run")})
	var se *SpecError
	if !errors.As(err, &se) || !strings.Contains(err.Error(), "gateway.stub") || !strings.Contains(err.Error(), "routes.yaml:3") {
		t.Fatalf("Run: %v, want a spec error naming gateway.stub and routes.yaml:3", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "run")); err == nil {
		t.Errorf("a run directory was created for a refused spec")
	}
}

// TestRunFaultRules: a spec's gateway.rules scope a behaviour to the payment call. The
// default behaviour answers fast and never fails; the rule makes every POST /api/v1/payments
// fail at once, so the breaker (window 20, one attempt a request) opens by failure rate at
// request 20. Without the rule it would never open (every call 10-20 ms, no errors).
func TestRunFaultRules(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "rules.yaml"), []byte("rules:\n  - name: payments\n    method: POST\n    path: /api/v1/payments\n    behavior: {errorRate: 1}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	y := `name: rules
traffic: {sequential: {users: 1, requests: 25}}
gateway: {kind: fault, rules: rules.yaml, error-rate: 0, latency: 10ms-20ms}
service: {retry-max-attempts: 1}
arms: [{name: a}]
`
	spec, err := ParseSpec(filepath.Join(dir, "spec.yaml"), []byte(y))
	if err != nil {
		t.Fatal(err)
	}
	spec.Dir = dir
	out := filepath.Join(dir, "run")
	if _, _, err := Run(context.Background(), Options{Spec: spec, Speed: 1, Seed: 1, Out: out, PredictRuns: predictRuns}); err != nil {
		t.Fatalf("Run: %v", err)
	}
	rec, err := results.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	a := rec.Run.Arm("a")
	if tr := firstOpen(t, a); tr.Cause != "failure-rate" || a.FirstOpenRequest != 20 {
		t.Errorf("first OPEN at request %d by %q, want request 20 by failure-rate (the rule fails every payment)", a.FirstOpenRequest, tr.Cause)
	}
}
