package experiments

import (
	"context"
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cbprobe/cbprobe/sim"
)

// fuzzPredictRequests is how many simulated requests one FuzzPlanSpec input may
// predict in all (over its arms and runs). At about a microsecond a request
// (sim.MaxPredictRequests' doc) that is a few milliseconds an input, so the
// fuzzer runs thousands of inputs a second; larger plans are checked for their
// bounds but not simulated.
const fuzzPredictRequests = 4000

// fuzzPredictDeadline bounds one input's predictions. fuzzPredictRequests
// requests take milliseconds even on a loaded machine; a prediction still running
// after this long does work that is not bounded by its planned requests, which
// is the bug this fuzzer looks for (the deadline is over 1000 times the
// expected time, so load alone cannot reach it).
const fuzzPredictDeadline = 10 * time.Second

// fuzzSpecSeeds start FuzzPlanSpec from specs that reach prediction: every
// traffic model, gateway phases, per-arm properties and service settings
// (TestFuzzSpecSeeds checks each one predicts).
var fuzzSpecSeeds = []string{
	"name: x\ntraffic: {phases: '15/s:1s,0/s:2s,5/s:1s'}\narms: [{name: a}]\n",
	"name: x\ntraffic: {sequential: {users: 2, requests: 10, think: 10ms}}\ngateway: {error-rate: 0.5, latency: 1ms-5ms}\narms: [{name: a}, {name: b, service: {retry-max-attempts: 3, retry-wait: 0s}}]\nexpect: ['opens>=1', 'arm[b].rejected<=1']\n",
	"name: x\ntraffic: {phases: '20/s:2s,20/s:2s,5/s:2s'}\ngateway: {error-rate: 0.1}\ngateway-phases:\n  2: {slow: true, slow-latency: 200ms-300ms}\n  3: {slow: false, error-rate: 0}\narms:\n  - name: a\n    properties: {resilience4j.circuitbreaker.configs.default.sliding-window-size: '5', resilience4j.circuitbreaker.configs.default.minimum-number-of-calls: '5'}\n  - name: b\n    properties: {resilience4j.circuitbreaker.configs.default.sliding-window-type: TIME_BASED}\n",
	"name: x\ntraffic: {sequential: {users: 1, requests: 40}}\ngateway: {error-rate: 0.5, hang-rate: 0.2, reset-rate: 0.2, error-timing: after-latency}\nservice: {retry-max-attempts: 2, retry-on-rejection: true, db-latency: 1ms}\narms: [{name: a, gateway: {latency: 'normal:mean=100ms,sd=20ms'}}]\n",
	"name: x\ntraffic: {phases: '10/s:2s'}\narms: [{name: a, properties: {resilience4j.timelimiter.configs.default.timeout-duration: 50ms}, gateway: {latency: 10ms-100ms}}]\n",
}

// fuzzCyclingSeeds plan but make the breaker cycle OPEN -> HALF_OPEN -> OPEN
// without end: on 1 ms timers through a 100000-hour pause, and by retrying its
// rejections 1e8 times a request. Prediction refuses them at
// sim.MaxTransitionsPerRun instead of growing without bound.
var fuzzCyclingSeeds = []string{
	"name: x\ntraffic: {sequential: {users: 1, requests: 2, think: 100000h}}\ngateway: {error-rate: 1}\narms: [{name: a, properties: {" + fuzzIdleCycling + "}}]\n",
	"name: x\ntraffic: {sequential: {users: 1, requests: 1}}\ngateway: {error-rate: 1}\nservice: {retry-max-attempts: 100000000, retry-on-rejection: true}\narms: [{name: a}]\n",
}

// fuzzRefusedSeeds are issue 12's oversized or bad specs, which parsing or
// planning refuses, and missing files.
var fuzzRefusedSeeds = []string{
	"name: x\ntraffic: {phases: '1/s:10000h'}\narms: [{name: a}]\n",
	"name: x\ntraffic: {sequential: {users: 100000, requests: 1000000000}}\narms: [{name: a}]\n",
	"name: x\ntraffic: {sequential: {users: 1000000000, requests: 1}}\narms: [{name: a}]\n",
	"name: x\ntraffic: {sequential: {users: 1, requests: 1, think: -1s}}\narms: [{name: a}]\n",
	"name: x\ntraffic: {phases: '1/s:1s', flow: missing.yaml}\narms: [{name: a}]\n",
	"name: x\ntraffic: {phases: '1/s:1s'}\nconfig: missing.yml\narms: [{name: a}]\n",
}

// fuzzIdleCycling are the properties of a breaker that cycles on its own 1 ms
// timers whenever no request comes.
const fuzzIdleCycling = "resilience4j.circuitbreaker.configs.default.wait-duration-in-open-state: 1ms, " +
	"resilience4j.circuitbreaker.configs.default.automatic-transition-from-open-to-half-open-enabled: 'true', " +
	"resilience4j.circuitbreaker.configs.default.max-wait-duration-in-half-open-state: 1ms, " +
	"resilience4j.circuitbreaker.configs.default.minimum-number-of-calls: '1', resilience4j.circuitbreaker.configs.default.sliding-window-size: '1'"

// FuzzPlanSpec takes a spec through what `cbprobe experiment` does before it
// sends a request: parse, plan every arm, predict it with the simulator. No input
// may panic; a bad spec is a usage error (exit code 2) that names the spec file,
// and every plan stays inside the limits that bound a prediction.
func FuzzPlanSpec(f *testing.F) {
	for _, n := range Names() {
		data, err := NamedSource(n)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, seeds := range [][]string{fuzzSpecSeeds, fuzzRefusedSeeds, {"name: x\ntraffic: {phases: '10/s:24h'}\narms: [{name: a}]\n"}} {
		for _, s := range seeds {
			f.Add([]byte(s))
		}
	}
	// (fuzzCyclingSeeds take most of a second each: TestFuzzSpecSeeds runs them.)
	// Relative flow: and config: paths resolve in an empty folder, so no input
	// reads the test's files; absolute ones are skipped below.
	dir := f.TempDir()
	source := filepath.Join(dir, "fuzz.yaml")
	f.Fuzz(func(t *testing.T, data []byte) {
		spec, err := ParseSpec(source, data)
		if err != nil {
			var se *SpecError
			if !errors.As(err, &se) || se.Source != source || !strings.HasPrefix(err.Error(), source+":") {
				t.Fatalf("ParseSpec error %T %q is not a *SpecError naming %s", err, err, source)
			}
			return
		}
		if filepath.IsAbs(spec.Config) || filepath.IsAbs(spec.Traffic.Flow) {
			return // would read the machine's files (/dev/zero never ends)
		}
		spec.Dir = dir
		plans, err := planArms(spec, "", "")
		if err != nil {
			checkPlanError(t, err, source)
			return
		}
		if len(plans) != len(spec.Arms) {
			t.Fatalf("%d plans for %d arms", len(plans), len(spec.Arms))
		}
		budget := fuzzPredictRequests
		ctx, cancel := context.WithTimeout(context.Background(), fuzzPredictDeadline)
		defer cancel()
		for _, p := range plans {
			n := p.sim.PlannedRequests()
			if n < 0 || n > sim.MaxRequestsPerRun {
				t.Fatalf("arm %s planned %d requests, outside [0, %d]", p.arm.Name, n, sim.MaxRequestsPerRun)
			}
			if runs := sim.PredictRuns(&p.sim, 1000); runs < 1 || runs > 1 && runs*max(n, 1) > sim.MaxPredictRequests {
				t.Fatalf("arm %s: %d runs of %d requests exceed the prediction budget %d", p.arm.Name, runs, n, sim.MaxPredictRequests)
			}
			if n > budget {
				continue
			}
			runs := max(1, min(20, budget/max(n, 1)/2)) // Predict replays its median run
			budget -= (runs + 1) * max(n, 1)
			start := time.Now()
			pr, err := sim.Predict(ctx, p.sim, runs, 1)
			var ae *sim.ArmError
			if errors.As(err, &ae) && ae.Field == "Breaker" && strings.Contains(ae.Msg, "state transitions") {
				continue // a breaker cycling past sim.MaxTransitionsPerRun: a usage error (exit 2)
			}
			if err != nil {
				t.Fatalf("arm %s: a planned arm of %d requests does not predict (after %v): %v", p.arm.Name, n, time.Since(start), err)
			}
			checkPrediction(t, p, pr, runs, n)
		}
	})
}

// checkPlanError asserts that a planning error is a usage error naming the spec.
func checkPlanError(t *testing.T, err error, source string) {
	t.Helper()
	var coded interface{ ExitCode() int }
	if !errors.As(err, &coded) || coded.ExitCode() != 2 {
		t.Fatalf("planning error %T %q is not a usage error (exit code 2)", err, err)
	}
	var se *SpecError
	if errors.As(err, &se) && (se.Source != source || !strings.HasPrefix(err.Error(), source+":")) {
		t.Fatalf("planning error %q does not start with the spec %s", err, source)
	}
	if strings.TrimSpace(err.Error()) == "" {
		t.Fatal("empty planning error")
	}
}

// checkPrediction asserts what holds for every prediction of a planned arm.
func checkPrediction(t *testing.T, p armPlan, pr sim.Prediction, runs, n int) {
	t.Helper()
	wantPhases := len(p.phases)
	if p.seq != nil {
		wantPhases = 1
	}
	if pr.Runs != runs || pr.Requests != n || len(pr.Phases) != wantPhases {
		t.Fatalf("arm %s: prediction of %d runs, %d requests, %d phases; want %d, %d, %d", p.arm.Name, pr.Runs, pr.Requests, len(pr.Phases), runs, n, wantPhases)
	}
	shares := []float64{pr.RejectedShare, pr.RejectedBand.Share, pr.FirstOpenRequest.Share}
	for _, ph := range pr.Phases {
		shares = append(shares, ph.RejectedShare, ph.SuccessShare, ph.FailedShare)
		if s := ph.RejectedShare + ph.SuccessShare + ph.FailedShare; ph.Requests > 0 && s > 1+1e-9 {
			t.Fatalf("arm %s phase %s: rejected + success + failed = %v > 1", p.arm.Name, ph.Name, s)
		}
	}
	for _, s := range shares {
		if !(s >= 0 && s <= 1) {
			t.Fatalf("arm %s: share %v outside [0, 1] in %+v", p.arm.Name, s, pr)
		}
	}
	if got := len(pr.MedianRun.RequestLog); got != n {
		t.Fatalf("arm %s: the median run logs %d requests, want the %d planned", p.arm.Name, got, n)
	}
}

// seedDeadline guards each seed's prediction against a hang, and only that: a
// cycling seed records 100,000 transitions before its refusal, 0.1-1 s without
// the race detector but 7.3 s under -race at load average 3 (measured).
const seedDeadline = 2 * time.Minute

// TestFuzzSpecSeeds: FuzzPlanSpec's seeds are what they say: the first group
// plans and predicts, the cycling group plans and is refused by prediction with
// an *ArmError naming the transition limit, the last group is refused with a
// usage error naming the spec.
func TestFuzzSpecSeeds(t *testing.T) {
	dir := t.TempDir()
	source := filepath.Join(dir, "seed.yaml")
	plan := func(t *testing.T, y string) ([]armPlan, error) {
		spec, err := ParseSpec(source, []byte(y))
		if err != nil {
			return nil, err
		}
		spec.Dir = dir
		return planArms(spec, "", "")
	}
	for i, y := range fuzzSpecSeeds {
		t.Run("predicts/"+strconv.Itoa(i), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), seedDeadline)
			defer cancel()
			plans, err := plan(t, y)
			if err != nil {
				t.Fatalf("planning: %v", err)
			}
			for _, p := range plans {
				n := p.sim.PlannedRequests()
				pr, err := sim.Predict(ctx, p.sim, 2, 1)
				if err != nil {
					t.Fatalf("arm %s: %v", p.arm.Name, err)
				}
				checkPrediction(t, p, pr, 2, n)
			}
		})
	}
	for i, y := range fuzzCyclingSeeds {
		t.Run("cycles/"+strconv.Itoa(i), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), seedDeadline)
			defer cancel()
			plans, err := plan(t, y)
			if err != nil {
				t.Fatalf("planning: %v", err)
			}
			_, err = sim.Predict(ctx, plans[0].sim, 1, 1)
			var ae *sim.ArmError
			if !errors.As(err, &ae) || ae.Field != "Breaker" || !strings.Contains(ae.Msg, strconv.Itoa(sim.MaxTransitionsPerRun)) {
				t.Fatalf("Predict = %v, want an *ArmError on Breaker naming the limit %d", err, sim.MaxTransitionsPerRun)
			}
		})
	}
	for i, y := range fuzzRefusedSeeds {
		t.Run("refused/"+strconv.Itoa(i), func(t *testing.T) {
			_, err := plan(t, y)
			if err == nil {
				t.Fatal("planned without error")
			}
			checkPlanError(t, err, source)
			if !strings.Contains(err.Error(), dir) {
				t.Fatalf("error %q does not name the spec or its folder %s", err, dir)
			}
		})
	}
}
