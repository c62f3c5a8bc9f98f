package experiments

import (
	"strings"
	"testing"
	"time"

	"github.com/cbprobe/cbprobe/results"
	"github.com/google/go-cmp/cmp"
)

func TestParseLatencyAndRecovery(t *testing.T) {
	tests := []struct {
		name string
		expr string
		want Expectation
	}{
		{"arm latency in ms", "latency-p95<1000", Expectation{Metric: "latency-p95", Op: "<", Number: 1000}},
		{"latency as a duration", "latency-p99<=1.5s", Expectation{Metric: "latency-p99", Op: "<=", Number: 1500}},
		{"phase latency with arm", "arm[retry-3].phase[2].latency-p50 < 250ms", Expectation{Arm: "retry-3", Phase: 2, Metric: "latency-p50", Op: "<", Number: 250}},
		{"p90", "latency-p90>=0", Expectation{Metric: "latency-p90", Op: ">=", Number: 0}},
		{"time to close in s", "time-to-close<=30", Expectation{Metric: "time-to-close", Op: "<=", Number: 30}},
		{"time to close as a duration", "time-to-close<=1m", Expectation{Metric: "time-to-close", Op: "<=", Number: 60}},
		{"time in open", "time-in-open<2500ms", Expectation{Metric: "time-in-open", Op: "<", Number: 2.5}},
		{"trials passed", "half-open-trials-passed>=1", Expectation{Metric: "half-open-trials-passed", Op: ">=", Number: 1}},
		{"trials", "half-open-trials==2", Expectation{Metric: "half-open-trials", Op: "==", Number: 2}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseExpectation(tc.expr)
			if err != nil {
				t.Fatalf("ParseExpectation(%q): %v", tc.expr, err)
			}
			tc.want.Expr = tc.expr
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseLatencyAndRecoveryErrors(t *testing.T) {
	tests := []struct{ name, expr, wantIn string }{
		{"unknown percentile", "latency-p75<100", `unknown metric "latency-p75"`},
		{"duration on a count", "opens>=1s", `"1s" is not a number`},
		{"duration on trials", "half-open-trials-passed>=1s", `"1s" is not a number`},
		{"bad duration", "latency-p95<fast", `"fast" is not a number or a duration`},
		{"recovery is not per phase", "phase[1].time-to-close<5", "unknown phase metric"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseExpectation(tc.expr)
			if err == nil || !strings.Contains(err.Error(), tc.wantIn) {
				t.Errorf("ParseExpectation(%q) error %v, want it to contain %q", tc.expr, err, tc.wantIn)
			}
		})
	}
}

// recoveryArm opened at t0+1s, tried a half-open trial at +11s that failed,
// another at +22s that passed (+23s), and was last observed at +40s.
func recoveryArm(t0 time.Time) ArmOutcome {
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	return ArmOutcome{Name: "a", FirstCause: "failure-rate", Opens: 2,
		Phases:  []PhaseOutcome{{Sent: 10, Latency: results.LatencyStats{P50: 100, P90: 300, P95: 400, P99: 900}}, {Sent: 0}},
		Latency: results.LatencyStats{P50: 120, P90: 350, P95: 480, P99: 950},
		Transitions: []results.Transition{
			{At: at(1), From: "CLOSED", To: "OPEN"}, {At: at(11), From: "OPEN", To: "HALF_OPEN"},
			{At: at(12), From: "HALF_OPEN", To: "OPEN"}, {At: at(22), From: "OPEN", To: "HALF_OPEN"},
			{At: at(23), From: "HALF_OPEN", To: "CLOSED"},
		},
		ObservedUntil: at(40),
	}
}

func TestCheckLatencyAndRecovery(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	stillOpen := func() ArmOutcome {
		a := recoveryArm(t0)
		a.Transitions = a.Transitions[:1] // opened at +1 s, never left OPEN
		return a
	}
	tests := []struct {
		name    string
		expr    string
		arm     func() ArmOutcome
		ok      bool
		inconc  bool
		got     string
		reasons string
	}{
		{name: "arm p95 holds", expr: "latency-p95<1000", arm: func() ArmOutcome { return recoveryArm(t0) }, ok: true, got: "480 ms"},
		{name: "arm p99 fails", expr: "latency-p99<900", arm: func() ArmOutcome { return recoveryArm(t0) }, got: "950 ms"},
		{name: "p90 read", expr: "latency-p90==350", arm: func() ArmOutcome { return recoveryArm(t0) }, ok: true, got: "350 ms"},
		{name: "phase p95", expr: "phase[1].latency-p95<=400", arm: func() ArmOutcome { return recoveryArm(t0) }, ok: true, got: "400 ms"},
		{name: "phase without requests is inconclusive", expr: "phase[2].latency-p95<400", arm: func() ArmOutcome { return recoveryArm(t0) }, inconc: true, reasons: "sent no request"},
		{name: "phase beyond the arm fails with a reason", expr: "phase[3].latency-p95<400", arm: func() ArmOutcome { return recoveryArm(t0) }, reasons: "has 2 phases, not 3"},
		{name: "latency not recorded", expr: "latency-p50<1", arm: func() ArmOutcome { a := recoveryArm(t0); a.Latency = results.LatencyStats{}; return a }, inconc: true, reasons: "not recorded"},
		{name: "old record without p90", expr: "latency-p90<1", arm: func() ArmOutcome { a := recoveryArm(t0); a.Latency.P90 = 0; return a }, inconc: true, reasons: "no p90"},
		{name: "closed within", expr: "time-to-close<=30", arm: func() ArmOutcome { return recoveryArm(t0) }, ok: true, got: "22 s"},
		{name: "closed too late", expr: "time-to-close<=20s", arm: func() ArmOutcome { return recoveryArm(t0) }, got: "22 s"},
		{name: "speed scales to service time", expr: "time-to-close<=30", arm: func() ArmOutcome { a := recoveryArm(t0); a.Speed = 2; return a }, got: "44 s"},
		{name: "never opened: nothing to close", expr: "time-to-close<=30", arm: func() ArmOutcome { a := recoveryArm(t0); a.Transitions = nil; return a }, inconc: true, reasons: "never opened"},
		{name: "still open long enough fails", expr: "time-to-close<=30", arm: stillOpen, got: "never (not closed 39 s after opening)"},
		{name: "still open long enough holds a lower bound", expr: "time-to-close>10", arm: stillOpen, ok: true, got: "never (not closed 39 s after opening)"},
		{name: "still open but the run ended too soon", expr: "time-to-close<=60", arm: stillOpen, inconc: true, reasons: "too soon to tell against 60 s"},
		{name: "time in open sums the open spells", expr: "time-in-open<=20", arm: func() ArmOutcome { return recoveryArm(t0) }, ok: true, got: "20 s"},
		{name: "time in open counts an open spell to the last observation", expr: "time-in-open>=39", arm: stillOpen, ok: true, got: "39 s"},
		{name: "open at the end, last observation unknown", expr: "time-in-open>=1", arm: func() ArmOutcome { a := stillOpen(); a.ObservedUntil = time.Time{}; return a }, inconc: true, reasons: "last observation is unknown"},
		{name: "never open is zero time in open", expr: "time-in-open==0", arm: func() ArmOutcome { a := recoveryArm(t0); a.Transitions = nil; return a }, ok: true, got: "0 s"},
		{name: "trials passed", expr: "half-open-trials-passed>=1", arm: func() ArmOutcome { return recoveryArm(t0) }, ok: true, got: "1"},
		{name: "trials", expr: "half-open-trials==2", arm: func() ArmOutcome { return recoveryArm(t0) }, ok: true, got: "2"},
		{name: "no trial passed", expr: "half-open-trials-passed>=1", arm: func() ArmOutcome {
			a := recoveryArm(t0)
			a.Transitions = a.Transitions[:3]
			return a
		}, got: "0"},
		{name: "no trial finished", expr: "half-open-trials-passed>=1", arm: stillOpen, inconc: true, reasons: "no half-open trial finished"},
		{name: "never opened: no trial", expr: "half-open-trials>=1", arm: func() ArmOutcome { a := recoveryArm(t0); a.Transitions = nil; return a }, inconc: true, reasons: "never opened"},
		{name: "recovery needs observed transitions", expr: "time-to-close<=30", arm: func() ArmOutcome { a := recoveryArm(t0); a.Unobserved = "no samples"; return a }, inconc: true, reasons: "no samples"},
		{name: "latency does not need transitions", expr: "latency-p95<1000", arm: func() ArmOutcome { a := recoveryArm(t0); a.Unobserved = "no samples"; return a }, ok: true, got: "480 ms"},
		{name: "untrusted arm", expr: "latency-p95<1000", arm: func() ArmOutcome { a := recoveryArm(t0); a.Untrusted = "target down"; return a }, inconc: true, reasons: "target down"},
		{name: "half-open seen at the horizon", expr: "time-to-close<=39", arm: func() ArmOutcome {
			a := stillOpen()
			a.Transitions = append(a.Transitions, results.Transition{At: at(30), From: "OPEN", To: "HALF_OPEN"})
			return a
		}, got: "never (not closed 39 s after opening)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, err := ParseExpectation(tc.expr)
			if err != nil {
				t.Fatal(err)
			}
			vs := Check(e, []ArmOutcome{tc.arm()})
			if len(vs) != 1 {
				t.Fatalf("%d verdicts, want 1", len(vs))
			}
			v := vs[0]
			if v.OK != tc.ok || v.Inconclusive != tc.inconc {
				t.Errorf("ok %v inconclusive %v (got %q, reason %q), want ok %v inconclusive %v", v.OK, v.Inconclusive, v.Got, v.Reason, tc.ok, tc.inconc)
			}
			if tc.got != "" && v.Got != tc.got {
				t.Errorf("got %q, want %q", v.Got, tc.got)
			}
			if !strings.Contains(v.Reason, tc.reasons) {
				t.Errorf("reason %q lacks %q", v.Reason, tc.reasons)
			}
		})
	}
}

func TestWantHasUnits(t *testing.T) {
	for expr, wantText := range map[string]string{"latency-p95<1s": "< 1000 ms", "time-to-close<=30": "<= 30 s", "opens>=1": ">= 1"} {
		e, err := ParseExpectation(expr)
		if err != nil {
			t.Fatal(err)
		}
		if got := want(e); got != wantText {
			t.Errorf("want(%q) = %q, want %q", expr, got, wantText)
		}
	}
}
