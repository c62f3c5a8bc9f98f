package experiments

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cbprobe/cbprobe/attack"
	"github.com/cbprobe/cbprobe/breaker"
	"github.com/cbprobe/cbprobe/pgsim"
	"github.com/cbprobe/cbprobe/results"
	"github.com/cbprobe/cbprobe/sim"
)

func TestAttemptsPerRequest(t *testing.T) {
	req := func(seq int, o results.Outcome) results.Request { return results.Request{Seq: seq, Outcome: o} }
	att := func(order string, n int) pgsim.Attempt { return pgsim.Attempt{OrderID: order, N: n} }
	tests := []struct {
		name   string
		reqs   []results.Request
		orders map[int]string
		log    []pgsim.Attempt
		total  int
		want   float64
		n      int
		lost   int
	}{
		{
			// The report's table: 1 attempt (success), 2 (fail, success),
			// 3 (fail, fail, success): 6 attempts over 3 requests.
			name:   "matched by order id",
			reqs:   []results.Request{req(1, results.OutcomeSucceeded), req(2, results.OutcomeSucceeded), req(3, results.OutcomeSucceeded)},
			orders: map[int]string{1: "a", 2: "b", 3: "c"},
			log:    []pgsim.Attempt{att("a", 1), att("b", 1), att("b", 2), att("c", 1), att("c", 2), att("c", 3)},
			total:  6, want: 2, n: 3,
		},
		{
			// A rejected request met the open breaker: it is left out, and so
			// are its attempts (the closed form describes unobstructed requests).
			name:   "rejected requests left out",
			reqs:   []results.Request{req(1, results.OutcomeFailed), req(2, results.OutcomeRejected)},
			orders: map[int]string{1: "a", 2: "b"},
			log:    []pgsim.Attempt{att("a", 1), att("a", 2), att("a", 3), att("b", 1)},
			total:  4, want: 3, n: 1,
		},
		{
			// A request whose order id was not captured cannot be matched.
			name:   "request without order id",
			reqs:   []results.Request{req(1, results.OutcomeSucceeded), req(2, results.OutcomeSucceeded)},
			orders: map[int]string{1: "a"},
			log:    []pgsim.Attempt{att("a", 1), att("", 0)},
			total:  2, want: 1, n: 1,
		},
		{
			// A custom flow captures no order id: every attempt over every request.
			name:  "no order ids",
			reqs:  []results.Request{req(1, results.OutcomeSucceeded), req(2, results.OutcomeRejected)},
			log:   []pgsim.Attempt{att("", 0), att("", 0), att("", 0)},
			total: 3, want: 1.5, n: 2,
		},
		{
			// TestRunRetry once saw 0.950 attempts per request with one
			// attempt: on a loaded machine at --speed 5 the TimeLimiter (120 ms
			// of real time) cut a payment before pgsim received it, so the log
			// had no attempt for that order. Such a request says nothing about
			// retries: it is counted apart, not as 0 attempts.
			name:   "payment that never reached the gateway",
			reqs:   []results.Request{req(1, results.OutcomeSucceeded), req(2, results.OutcomeFailed), req(3, results.OutcomeFailed)},
			orders: map[int]string{1: "a", 2: "b", 3: "c"},
			log:    []pgsim.Attempt{att("a", 1), att("c", 1)},
			total:  2, want: 1, n: 2, lost: 1,
		},
		{name: "nothing sent", want: 0, n: 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, n, lost := attemptsPerRequest(tc.reqs, tc.orders, tc.log, tc.total)
			if math.Abs(got-tc.want) > 1e-12 || n != tc.n || lost != tc.lost {
				t.Errorf("attemptsPerRequest = %g over %d requests (%d unreached), want %g over %d (%d unreached)", got, n, lost, tc.want, tc.n, tc.lost)
			}
		})
	}
}

func TestArmOutcome(t *testing.T) {
	a := &results.Arm{
		Name: "x", FirstOpenRequest: 13, FirstRejectedRequest: 14, AttemptsPerRequest: 1.5,
		Transitions: []results.Transition{
			{From: "CLOSED", To: "OPEN", Cause: "slow-call-rate"},
			{From: "OPEN", To: "HALF_OPEN"},
			{From: "HALF_OPEN", To: "OPEN", Cause: "half-open-trial"},
			{From: "OPEN", To: "HALF_OPEN"},
			{From: "HALF_OPEN", To: "CLOSED"},
			{From: "CLOSED", To: "OPEN", Cause: "failure-rate"},
		},
		Phases: []results.PhaseStats{{Name: "a", Sent: 10, Succeeded: 7, Rejected: 2, Failed: 1}, {Name: "b"}},
	}
	o := armOutcome(a, armFacts{})
	if o.Name != "x" || o.FirstOpenRequest != 13 || o.FirstRejectedRequest != 14 || o.AttemptsPerRequest != 1.5 {
		t.Errorf("armOutcome = %+v, want the arm's request numbers and attempts", o)
	}
	// Every transition into OPEN counts; the cause is the first CLOSED→OPEN's.
	if o.Opens != 3 || o.FirstCause != "slow-call-rate" {
		t.Errorf("opens %d, first cause %q; want 3 and slow-call-rate", o.Opens, o.FirstCause)
	}
	if len(o.Phases) != 2 || o.Phases[0] != (PhaseOutcome{Sent: 10, Succeeded: 7, Rejected: 2, Failed: 1}) {
		t.Errorf("phases %+v, want the arm's counts in order", o.Phases)
	}
	if never := armOutcome(&results.Arm{Name: "y"}, armFacts{}); never.FirstCause != "none" || never.Opens != 0 {
		t.Errorf("an arm that never opened: cause %q, opens %d; want none and 0", never.FirstCause, never.Opens)
	}
	if unk := armOutcome(&results.Arm{Transitions: []results.Transition{{From: "CLOSED", To: "OPEN"}}}, armFacts{}); unk.FirstCause != "unknown" {
		t.Errorf("an OPEN without a cause reads %q, want unknown", unk.FirstCause)
	}
	if down := armOutcome(&results.Arm{}, armFacts{targetDown: "refused 5 polls"}); down.Untrusted != "refused 5 polls" {
		t.Errorf("a target that went down: untrusted %q, want the reason", down.Untrusted)
	}
}

func TestOutsideBand(t *testing.T) {
	tests := []struct {
		name     string
		measured float64
		want     bool
	}{
		{"below", 9.9, true},
		{"at the 5th percentile", 10, false},
		{"inside", 12, false},
		{"at the 95th percentile", 20, false},
		{"above", 20.1, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := results.Comparison{Measured: tc.measured, PredictedP5: 10, PredictedP95: 20}
			if got := outside(c); got != tc.want {
				t.Errorf("outside(%g in [10, 20]) = %v, want %v", tc.measured, got, tc.want)
			}
		})
	}
}

func TestScalePhasesKeepsRequests(t *testing.T) {
	phases, err := attack.ParsePhases("burst=15/s:5s,pause=0/s:15s,resume=5/s:8s")
	if err != nil {
		t.Fatal(err)
	}
	for _, speed := range []float64{1, 5, 20} {
		got := scalePhases(phases, speed)
		for i := range phases {
			if got[i].Name != phases[i].Name || got[i].Planned() != phases[i].Planned() {
				t.Errorf("speed %g: phase %s plans %d requests, want %d (rate ×%g, duration ÷%g)", speed, got[i].Name, got[i].Planned(), phases[i].Planned(), speed, speed)
			}
			if want := time.Duration(float64(phases[i].Duration) / speed); got[i].Duration != want {
				t.Errorf("speed %g: phase %s lasts %s, want %s", speed, got[i].Name, got[i].Duration, want)
			}
		}
	}
}

func TestMeasuredFindingGatewayRefused(t *testing.T) {
	spec, err := Named("retry")
	if err != nil {
		t.Fatal(err)
	}
	plans, err := planArms(spec, "retry-3", "")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		refused int
		want    bool
	}{
		{"refusals", 3, true},
		{"none", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := &results.Arm{Name: "retry-3"}
			got := false
			for _, f := range measuredFindings(a, plans[0], armFacts{gatewayRefused: tc.refused}) {
				if f.ID == "gateway-refused-requests" {
					got = true
					if !strings.Contains(f.Title, "3 payment calls") {
						t.Errorf("title %q does not give the count", f.Title)
					}
				}
			}
			if got != tc.want {
				t.Errorf("gateway-refused-requests finding = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestMeasuredFindingRetriedRejections(t *testing.T) {
	spec, err := Named("retry")
	if err != nil {
		t.Fatal(err)
	}
	onRejection := true
	spec.Arms[0].Service.RetryOnRejection = &onRejection
	plans, err := planArms(spec, "retry-3", "")
	if err != nil {
		t.Fatal(err)
	}
	if !plans[0].settings.RetryOnRejection {
		t.Fatal("the arm's service setting did not reach the resolved settings")
	}
	for _, tc := range []struct {
		name         string
		notPermitted int
		want         bool
	}{
		{"each rejection retried twice", 30, true},
		{"one event per rejected request", 10, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := &results.Arm{Name: "retry-3", Phases: []results.PhaseStats{{Name: "sequential", Sent: 40, Rejected: 10}}}
			got := false
			for _, f := range measuredFindings(a, plans[0], armFacts{notPermitted: tc.notPermitted}) {
				got = got || f.ID == "retry-retries-rejections"
			}
			if got != tc.want {
				t.Errorf("retry-retries-rejections = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestFindingsIgnoreWording builds arms that show every measured finding, then
// rewords every note, evidence note and parameter a person reads in run.json, and
// requires the same findings: they are computed from typed fields, never from
// the wording of a note.
func TestFindingsIgnoreWording(t *testing.T) {
	retrySpec, err := Named("retry")
	if err != nil {
		t.Fatal(err)
	}
	onRejection := true
	retrySpec.Arms[0].Service.RetryOnRejection = &onRejection
	retryPlans, err := planArms(retrySpec, "retry-3", "")
	if err != nil {
		t.Fatal(err)
	}
	wtSpec, err := Named("window-type")
	if err != nil {
		t.Fatal(err)
	}
	wtPlans, err := planArms(wtSpec, "", "")
	if err != nil {
		t.Fatal(err)
	}
	var countPlan, timePlan armPlan
	for _, p := range wtPlans {
		switch p.settings.Breaker.SlidingWindowType {
		case breaker.CountBased:
			countPlan = p
		case breaker.TimeBased:
			timePlan = p
		}
	}
	if countPlan.file == nil || timePlan.file == nil {
		t.Fatalf("window-type arms %v: want one COUNT_BASED and one TIME_BASED", wtSpec.Arms)
	}
	share := 0.5
	retry := results.Arm{Name: "retry-3", AttemptsPerRequest: 1.6, Breaker: "b",
		Phases: []results.PhaseStats{{Name: "sequential", Sent: 40, Rejected: 10}},
		Notes:  []string{"Events of b lost to the service's ring buffer (size 10) between t1 and t2 (at least 3)."},
		Transitions: []results.Transition{
			{From: "CLOSED", To: "OPEN", Cause: "both", Evidence: results.Evidence{TimeoutShare: &share, ThresholdSource: results.ThresholdFromActuator,
				FailureRateThreshold: 50, SlowCallRateThreshold: 50, Note: "50% of the failures were timeouts (events); thresholds from actuator"}},
			{From: "OPEN", To: "HALF_OPEN"}, {From: "HALF_OPEN", To: "OPEN", Cause: "half-open-trial"},
		},
		Parameters: map[string]any{"gatewayRefused": 2, "notPermittedEvents": 30, "halfOpenPassProbability": 0.0}}
	count := results.Arm{Name: countPlan.arm.Name, Phases: []results.PhaseStats{
		{Name: "burst", Rate: 15, Duration: 5 * time.Second, Sent: 75},
		{Name: "pause", Rate: 0, Duration: 15 * time.Second},
		{Name: "after", Rate: 5, Duration: 8 * time.Second, Sent: 40, Rejected: 40}}}
	timed := results.Arm{Name: timePlan.arm.Name}
	run := &results.Run{Arms: []results.Arm{retry, count, timed}}
	plans := []armPlan{retryPlans[0], countPlan, timePlan}
	facts := []armFacts{
		{gatewayRefused: 2, notPermitted: 30, eventsLost: retry.Notes, prediction: sim.Prediction{Runs: 1, HalfOpenPassProbability: 0}},
		{}, {},
	}
	ids := func(fs []results.Finding) []string {
		var out []string
		for _, f := range fs {
			out = append(out, f.Arm+"/"+f.ID)
		}
		return out
	}
	before := ids(findings(run, plans, facts))
	for _, want := range []string{"retry-3/retry-amplification", "retry-3/timeouts-count-as-slow-failures", "retry-3/gateway-refused-requests",
		"retry-3/retry-retries-rejections", "retry-3/half-open-trial-cannot-pass", "retry-3/live-threshold-differs", "retry-3/events-lost",
		countPlan.arm.Name + "/window-memory-after-pause", timePlan.arm.Name + "/time-based-min-calls-unreachable"} {
		if !slices.Contains(before, want) {
			t.Errorf("finding %s missing from %v", want, before)
		}
	}
	for i := range run.Arms {
		a := &run.Arms[i]
		for j := range a.Notes {
			a.Notes[j] = "reworded note " + strconv.Itoa(j)
		}
		for j := range a.Transitions {
			a.Transitions[j].Evidence.Note = "reworded evidence"
		}
		for k := range a.Parameters {
			a.Parameters[k] = "reworded"
		}
	}
	for i := range facts {
		for j := range facts[i].eventsLost {
			facts[i].eventsLost[j] = "reworded loss"
		}
	}
	if after := ids(findings(run, plans, facts)); !slices.Equal(before, after) {
		t.Errorf("findings changed with the wording:\nbefore %v\nafter  %v", before, after)
	}
}

// TestHalfOpenFindingJudgesEveryPhase: an arm that starts in an outage (no
// half-open trial can pass) and then recovers must not get the error-severity
// half-open-trial-cannot-pass finding; the same outage throughout must.
func TestHalfOpenFindingJudgesEveryPhase(t *testing.T) {
	const spec = `name: ho
traffic:
  phases: "outage=10/s:6s,after=10/s:20s"
gateway:
  error-rate: 1
  error-timing: immediate
%s
config: reference
service: {retry-max-attempts: 1}
arms:
  - name: a
`
	for _, tc := range []struct {
		name, phases string
		want         bool
	}{
		{"outage then recovered", "gateway-phases:\n  2: {error-rate: 0, latency: 20ms-60ms}", false},
		{"outage throughout", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := ParseSpec("ho.yaml", []byte(fmt.Sprintf(spec, tc.phases)))
			if err != nil {
				t.Fatal(err)
			}
			plans, err := planArms(s, "", "")
			if err != nil {
				t.Fatal(err)
			}
			a := &results.Arm{Name: "a", Transitions: []results.Transition{
				{From: "CLOSED", To: "OPEN"}, {From: "OPEN", To: "HALF_OPEN"}, {From: "HALF_OPEN", To: "OPEN"}}}
			got := false
			for _, f := range findings(&results.Run{Arms: []results.Arm{*a}}, plans, []armFacts{{}}) {
				got = got || (f.ID == "half-open-trial-cannot-pass" && f.Severity == "error")
			}
			if got != tc.want {
				t.Errorf("error half-open-trial-cannot-pass = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestFleetComparisonUnobservedReplica: a replica that "never opened" while
// cbprobe could not observe it is no evidence: its comparison is inconclusive,
// never outside the band; an observed replica that never opened is outside.
func TestFleetComparisonUnobservedReplica(t *testing.T) {
	pr := sim.Prediction{Instances: []sim.InstancePrediction{{FirstOpenRequest: sim.Band{P5: 36, P50: 45, P95: 54, Mean: 45, N: 100, Share: 1}}}}
	for _, tc := range []struct {
		name                    string
		verdict                 string
		inconclusive, outOfBand bool
	}{
		{"unobserved", results.VerdictInconclusive, true, false},
		{"observed", results.ObservationConsistent, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := &results.Arm{Fleet: &results.Fleet{Instances: []results.FleetInstance{
				{Breaker: "pg@r1", Observation: &results.Observation{Verdict: tc.verdict, Reasons: []string{"no samples"}}}}}}
			addFleetComparisons(a, pr)
			if len(a.Comparisons) != 1 {
				t.Fatalf("comparisons %+v, want one", a.Comparisons)
			}
			if c := a.Comparisons[0]; c.Inconclusive != tc.inconclusive || c.OutsideBand != tc.outOfBand {
				t.Errorf("comparison %+v: want inconclusive %v, outside band %v", c, tc.inconclusive, tc.outOfBand)
			}
		})
	}
}
