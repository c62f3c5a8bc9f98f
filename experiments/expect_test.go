package experiments

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseExpectation(t *testing.T) {
	tests := []struct {
		name string
		expr string
		want Expectation
	}{
		{"cause", "cause=slow-call-rate", Expectation{Metric: "cause", Op: "==", Cause: "slow-call-rate"}},
		{"cause not", "cause != failure-rate", Expectation{Metric: "cause", Op: "!=", Cause: "failure-rate"}},
		{"first rejected", "first-rejected-request<=14", Expectation{Metric: "first-rejected-request", Op: "<=", Number: 14}},
		{"phase share", "phase[3].success>=0.9", Expectation{Metric: "success", Phase: 3, Op: ">=", Number: 0.9}},
		{"opens", "opens>=1", Expectation{Metric: "opens", Op: ">=", Number: 1}},
		{"arm prefix", "arm[retry-3].first-open-request < 16", Expectation{Arm: "retry-3", Metric: "first-open-request", Op: "<", Number: 16}},
		{"single equals is equality", "opens=0", Expectation{Metric: "opens", Op: "==", Number: 0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseExpectation(tc.expr)
			if err != nil {
				t.Fatalf("ParseExpectation(%q): %v", tc.expr, err)
			}
			tc.want.Expr = tc.expr
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ParseExpectation(%q) (-want +got):\n%s", tc.expr, diff)
			}
		})
	}
}

func TestParseExpectationErrors(t *testing.T) {
	tests := []struct {
		name, expr, wantIn string
	}{
		{"empty", "", "empty expression"},
		{"no operator", "opens", "no comparison operator"},
		{"unknown metric", "latency<3", `unknown metric "latency"`},
		{"not a number", "opens>=many", `"many" is not a number`},
		{"unknown cause", "cause=timeouts", `unknown cause "timeouts"`},
		{"cause with less", "cause<both", "cause can only be compared"},
		{"bad phase index", "phase[0].success>=1", "phase index"},
		{"unknown phase metric", "phase[1].latency>=1", "unknown phase metric"},
		{"unclosed arm", "arm[x.opens>=1", "without a closing"},
		{"missing dot after arm", "arm[x]opens>=1", "expected '.'"},
		{"nothing after operator", "opens>=", "nothing after"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseExpectation(tc.expr)
			var ee *ExpectationError
			if !errors.As(err, &ee) {
				t.Fatalf("ParseExpectation(%q) error = %v, want *ExpectationError", tc.expr, err)
			}
			if ee.ExitCode() != 2 {
				t.Errorf("exit code = %d, want 2", ee.ExitCode())
			}
			if !strings.Contains(err.Error(), tc.wantIn) || !strings.Contains(err.Error(), tc.expr) {
				t.Errorf("error %q should name the expression and contain %q", err, tc.wantIn)
			}
		})
	}
}

func TestCheck(t *testing.T) {
	arms := []ArmOutcome{
		{Name: "retry-3", FirstOpenRequest: 13, FirstRejectedRequest: 14, Opens: 2, FirstCause: "slow-call-rate", AttemptsPerRequest: 1.55,
			Phases: []PhaseOutcome{{Sent: 40, Succeeded: 13, Rejected: 26, Failed: 1}}},
		{Name: "retry-1", FirstOpenRequest: 20, FirstRejectedRequest: 21, Opens: 1, FirstCause: "both",
			Phases: []PhaseOutcome{{Sent: 40, Succeeded: 12, Rejected: 20, Failed: 8}}},
		{Name: "never", FirstCause: "none", Phases: []PhaseOutcome{{Sent: 10, Succeeded: 10}}},
	}
	tests := []struct {
		name string
		expr string
		want map[string]bool // arm -> OK
	}{
		{"every arm cause", "cause=slow-call-rate", map[string]bool{"retry-3": true, "retry-1": false, "never": false}},
		{"one arm", "arm[retry-1].first-rejected-request<=21", map[string]bool{"retry-1": true}},
		{"never rejected fails an upper bound", "arm[never].first-rejected-request<=14", map[string]bool{"never": false}},
		{"never opened passes a lower bound", "arm[never].first-open-request>40", map[string]bool{"never": true}},
		{"phase share", "phase[1].success>=0.31", map[string]bool{"retry-3": true, "retry-1": false, "never": true}},
		{"total rejected share", "arm[retry-3].rejected>0.6", map[string]bool{"retry-3": true}},
		{"attempts", "arm[retry-3].attempts-per-request<1.6", map[string]bool{"retry-3": true}},
		{"opens", "opens>=1", map[string]bool{"retry-3": true, "retry-1": true, "never": false}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, err := ParseExpectation(tc.expr)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]bool{}
			for _, v := range Check(e, arms) {
				got[v.Arm] = v.OK
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Check(%q) (-want +got):\n%s", tc.expr, diff)
			}
		})
	}
}

func TestCheckMissingArmAndPhase(t *testing.T) {
	arms := []ArmOutcome{{Name: "a", Phases: []PhaseOutcome{{Sent: 1}}}}
	for _, expr := range []string{"arm[b].opens>=0", "phase[2].sent>=0"} {
		e, err := ParseExpectation(expr)
		if err != nil {
			t.Fatal(err)
		}
		vs := Check(e, arms)
		if len(vs) != 1 || vs[0].OK || vs[0].Reason == "" {
			t.Errorf("Check(%q) = %+v, want one failed verdict with a reason", expr, vs)
		}
	}
}

func FuzzParseExpectation(f *testing.F) {
	for _, s := range []string{"cause=both", "phase[3].success>=0.9", "arm[x].opens>=1", "arm[", "phase[", "=", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e, err := ParseExpectation(s)
		if err != nil {
			return
		}
		if e.Metric == "" || e.Op == "" {
			t.Fatalf("ParseExpectation(%q) = %+v without error but incomplete", s, e)
		}
		_ = Check(e, []ArmOutcome{{Name: e.Arm, Phases: []PhaseOutcome{{Sent: 1}}}})
	})
}

// TestCheckUnmeasuredAttempts: attempts per request of 0 means "not measured" (no attempt
// reached the gateway's log under its order id), so an expectation on it is inconclusive,
// never failed, whichever way it points.
func TestCheckUnmeasuredAttempts(t *testing.T) {
	arms := []ArmOutcome{{Name: "a", Phases: []PhaseOutcome{{Sent: 10}}}}
	for _, expr := range []string{"attempts-per-request>=1.2", "attempts-per-request<2"} {
		e, err := ParseExpectation(expr)
		if err != nil {
			t.Fatal(err)
		}
		vs := Check(e, arms)
		if len(vs) != 1 || vs[0].OK || !vs[0].Inconclusive || !strings.Contains(vs[0].Reason, "not measured") {
			t.Errorf("Check(%q) = %+v, want one inconclusive verdict saying attempts were not measured", expr, vs)
		}
	}
}
