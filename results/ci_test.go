package results

import (
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// findingsRun is a finished run without expectations whose findings are one
// warning on two arms (identical), one error on one arm and one info.
func findingsRun(failOn string) *Run {
	w := Finding{ID: "timeout-counted-as-slow", Severity: SeverityWarning, Title: "timeouts are slow failures", Fix: "raise the slow threshold"}
	w1, w2 := w, w
	w1.Arm, w2.Arm = "a", "b"
	return &Run{
		Experiment: "slow-call", Complete: true, FailOn: failOn,
		Arms: []Arm{{Name: "a"}, {Name: "b"}},
		Findings: []Finding{w1, w2,
			{ID: "half-open-trial-cannot-pass", Severity: SeverityError, Arm: "b", Title: "the breaker cannot close"},
			{ID: "events-lost", Severity: SeverityInfo, Title: "events lost"}},
	}
}

func TestFailOnDecides(t *testing.T) {
	tests := []struct {
		name     string
		run      func() *Run
		wantIDs  []string
		wantVerd string
		wantExit int
	}{
		{name: "no fail-on", run: func() *Run { return findingsRun("") }, wantVerd: VerdictPassed, wantExit: 0},
		{name: "none", run: func() *Run { return findingsRun("none") }, wantVerd: VerdictPassed, wantExit: 0},
		{name: "error", run: func() *Run { return findingsRun("error") }, wantIDs: []string{"half-open-trial-cannot-pass"}, wantVerd: VerdictFailed, wantExit: 1},
		{name: "warning takes error too", run: func() *Run { return findingsRun("warning") },
			wantIDs: []string{"timeout-counted-as-slow", "timeout-counted-as-slow", "half-open-trial-cannot-pass"}, wantVerd: VerdictFailed, wantExit: 1},
		{name: "error with only warnings", run: func() *Run {
			r := findingsRun("error")
			r.Findings = r.Findings[:2]
			return r
		}, wantVerd: VerdictPassed, wantExit: 0},
		{name: "inconclusive arm without failing finding stays inconclusive", run: func() *Run {
			r := findingsRun("error")
			r.Findings = r.Findings[:2]
			r.Arms[0].Observation = &Observation{Verdict: VerdictInconclusive, Reasons: []string{"no samples"}}
			return r
		}, wantVerd: VerdictInconclusive, wantExit: 3},
		{name: "failing finding on a consistent arm outranks an inconclusive arm", run: func() *Run {
			r := findingsRun("error")
			r.Arms[0].Observation = &Observation{Verdict: VerdictInconclusive, Reasons: []string{"no samples"}}
			return r
		}, wantIDs: []string{"half-open-trial-cannot-pass"}, wantVerd: VerdictFailed, wantExit: 1},
		{name: "finding on an inconclusive arm does not fail", run: func() *Run {
			r := findingsRun("error")
			r.Arms[1].Observation = &Observation{Verdict: VerdictInconclusive, Reasons: []string{"no samples"}}
			return r
		}, wantVerd: VerdictInconclusive, wantExit: 3},
		{name: "run-wide finding fails whatever the arms", run: func() *Run {
			r := findingsRun("warning")
			r.Findings = []Finding{{ID: "x", Severity: SeverityWarning, Title: "x"}}
			r.Arms[0].Observation = &Observation{Verdict: VerdictInconclusive}
			r.Arms[1].Observation = &Observation{Verdict: VerdictInconclusive}
			return r
		}, wantIDs: []string{"x"}, wantVerd: VerdictFailed, wantExit: 1},
		{name: "interrupted stays incomplete", run: func() *Run {
			r := findingsRun("warning")
			r.Complete, r.Interrupted = false, true
			return r
		}, wantIDs: []string{"timeout-counted-as-slow", "timeout-counted-as-slow", "half-open-trial-cannot-pass"}, wantVerd: VerdictIncomplete, wantExit: 130},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.run()
			var ids []string
			for _, f := range r.FailingFindings() {
				ids = append(ids, f.ID)
			}
			if diff := cmp.Diff(tc.wantIDs, ids); diff != "" {
				t.Errorf("FailingFindings ids (-want +got):\n%s", diff)
			}
			if got := r.Decide(); got != tc.wantVerd {
				t.Errorf("Decide = %s, want %s", got, tc.wantVerd)
			}
			if got := r.ExitCode(); got != tc.wantExit {
				t.Errorf("ExitCode = %d, want %d", got, tc.wantExit)
			}
		})
	}
}

func TestCheckFailOn(t *testing.T) {
	for _, tc := range []struct {
		level string
		ok    bool
	}{{"", true}, {"none", true}, {"warning", true}, {"error", true}, {"info", false}, {"Error", false}, {"warn", false}} {
		t.Run("level "+tc.level, func(t *testing.T) {
			err := CheckFailOn(tc.level)
			if (err == nil) != tc.ok {
				t.Errorf("CheckFailOn(%q) = %v, want ok %v", tc.level, err, tc.ok)
			}
		})
	}
}

func TestGroupFindings(t *testing.T) {
	gs := GroupFindings(findingsRun("").Findings)
	var got []string
	for _, g := range gs {
		got = append(got, g.Finding.ID+" "+armList(g.Arms))
	}
	want := []string{"timeout-counted-as-slow arms a, b", "half-open-trial-cannot-pass arm b", "events-lost "}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("groups (-want +got):\n%s", diff)
	}
	// A different title on another arm is another finding, not the same one.
	fs := findingsRun("").Findings[:2]
	fs[1].Title = "other numbers"
	if n := len(GroupFindings(fs)); n != 2 {
		t.Errorf("findings with different titles merged into %d groups, want 2", n)
	}
}

func TestAnnotationEscaping(t *testing.T) {
	tests := []struct {
		name string
		a    Annotation
		want string
	}{
		{name: "plain", a: Annotation{Level: "error", Message: "opens>=1"}, want: "::error::opens>=1"},
		{name: "title escapes colon and comma", a: Annotation{Level: "warning", Title: "a: b, c", Message: "x"}, want: "::warning title=a%3A b%2C c::x"},
		{name: "message keeps colon, escapes percent and newlines", a: Annotation{Level: "notice", Message: "50%: a\r\nb"}, want: "::notice::50%25: a%0D%0Ab"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.a.String(); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestAnnotations(t *testing.T) {
	withExpectations := func(failOn string) *Run {
		r := findingsRun(failOn)
		r.Expectations = []Expectation{
			{Expr: "opens>=1", OK: true, Arm: "a", Got: "1", Want: ">= 1"},
			{Expr: "opens>=1", OK: false, Arm: "b", Got: "0", Want: ">= 1"},
			{Expr: "cause=slow-call-rate", Arm: "a", Inconclusive: true, Message: "inconclusive: no samples"},
		}
		return r
	}
	tests := []struct {
		name string
		run  *Run
		want []string
	}{
		{name: "findings only", run: findingsRun(""), want: []string{
			"::warning title=cbprobe slow-call%3A warning timeout-counted-as-slow (arms a%2C b)::timeouts are slow failures%0AFix: raise the slow threshold",
			"::error title=cbprobe slow-call%3A error half-open-trial-cannot-pass (arm b)::the breaker cannot close",
			"::notice title=cbprobe slow-call%3A info events-lost::events lost",
		}},
		{name: "fail-on warning makes warnings errors", run: findingsRun("warning"), want: []string{
			"::error title=cbprobe slow-call%3A warning timeout-counted-as-slow (arms a%2C b)::timeouts are slow failures%0AFix: raise the slow threshold",
			"::error title=cbprobe slow-call%3A error half-open-trial-cannot-pass (arm b)::the breaker cannot close",
			"::notice title=cbprobe slow-call%3A info events-lost::events lost",
		}},
		{name: "expectations: failed is error, inconclusive warning, passed silent", run: func() *Run {
			r := withExpectations("")
			r.Findings = nil
			return r
		}(), want: []string{
			"::error title=cbprobe slow-call%3A expectation failed::arm b: opens>=1 (got 0, want >= 1)",
			"::warning title=cbprobe slow-call%3A expectation inconclusive::arm a: cause=slow-call-rate (inconclusive: no samples)",
		}},
		{name: "incomplete run and inconclusive arm", run: func() *Run {
			r := &Run{Experiment: "retry", Interrupted: true, Reason: "stopped by Ctrl-C",
				Arms: []Arm{{Name: "retry-3", Observation: &Observation{Verdict: VerdictInconclusive, Reasons: []string{"metrics unreachable"}, Fix: []string{"expose the actuator"}}}}}
			return r
		}(), want: []string{
			"::warning title=cbprobe retry%3A run not complete::the numbers cover only what was measured before it stopped (stopped by Ctrl-C)",
			"::warning title=cbprobe retry%3A arm retry-3 inconclusive::inconclusive: metrics unreachable%0Afix: expose the actuator",
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var sb strings.Builder
			if err := WriteAnnotations(&sb, tc.run); err != nil {
				t.Fatal(err)
			}
			got := strings.Split(strings.TrimSuffix(sb.String(), "\n"), "\n")
			if sb.Len() == 0 {
				got = nil
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("annotations (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAppendStepSummary(t *testing.T) {
	run := findingsRun("")
	tests := []struct {
		name     string
		existing string // content already in the job summary ("" none)
		summary  string // summary.md in the run directory ("" none: rendered)
		want     func(string) bool
	}{
		{name: "copies summary.md into a new file", summary: "# run\n", want: func(s string) bool { return s == "# run\n" }},
		{name: "appends after earlier steps with a blank line", existing: "earlier\n", summary: "# run\n",
			want: func(s string) bool { return s == "earlier\n\n# run\n" }},
		{name: "renders the summary without summary.md", want: func(s string) bool {
			return strings.HasPrefix(s, "# ✅ cbprobe slow-call") && strings.Contains(s, "timeout-counted-as-slow")
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(t.TempDir(), "step_summary.md")
			if tc.existing != "" {
				if err := os.WriteFile(path, []byte(tc.existing), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if tc.summary != "" {
				if err := os.WriteFile(filepath.Join(dir, SummaryFile), []byte(tc.summary), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := AppendStepSummary(path, dir, run); err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !tc.want(string(got)) {
				t.Errorf("job summary is %q", got)
			}
		})
	}
	if err := AppendStepSummary(filepath.Join(t.TempDir(), "no", "such", "dir", "f"), "", run); err == nil {
		t.Error("appending to a file in a missing directory gave no error")
	}
}

func TestFailOnInReports(t *testing.T) {
	run := findingsRun("error")
	var md strings.Builder
	if err := WriteMarkdown(&md, run); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "Failed by `--fail-on error`**: 1 finding of severity error or worse") || !strings.HasPrefix(md.String(), "# ❌") {
		t.Errorf("summary.md does not say the run failed by its findings:\n%s", md.String())
	}
	var txt strings.Builder
	if err := WriteText(&txt, run, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(txt.String(), "FAIL  --fail-on error: 1 finding of severity error or worse") {
		t.Errorf("terminal summary does not say the run failed by its findings:\n%s", txt.String())
	}
	var ju strings.Builder
	if err := WriteJUnit(&ju, run); err != nil {
		t.Fatal(err)
	}
	var doc junitSuites
	if err := xml.Unmarshal([]byte(ju.String()), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Failures != 1 || doc.Tests != 1 || len(doc.Suites) != 1 || doc.Suites[0].Cases[0].Failure == nil ||
		doc.Suites[0].Cases[0].Failure.Type != "finding-error" {
		t.Errorf("junit.xml: %d tests %d failures, want the failing finding as 1 failed test:\n%s", doc.Tests, doc.Failures, ju.String())
	}
}

func TestTextNamesArmsAndMergesFindings(t *testing.T) {
	run := findingsRun("")
	run.Expectations = []Expectation{
		{Expr: "opens>=1", OK: true, Arm: "a", Got: "1", Want: ">= 1"},
		{Expr: "opens>=1", OK: false, Arm: "b", Got: "0", Want: ">= 1"},
		{Expr: "arm[b].cause=slow-call-rate", OK: true, Arm: "b"},
	}
	var sb strings.Builder
	if err := WriteText(&sb, run, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	out := sb.String()
	for _, want := range []string{
		"PASS  arm a: opens>=1  (got 1, want >= 1)",
		"FAIL  arm b: opens>=1  (got 0, want >= 1)",
		"PASS  arm[b].cause=slow-call-rate\n",
		"[warning] timeouts are slow failures (timeout-counted-as-slow, arms a, b)",
		"[error] the breaker cannot close (half-open-trial-cannot-pass, arm b)",
		"[info] events lost (events-lost)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	if n := strings.Count(out, "timeouts are slow failures"); n != 1 {
		t.Errorf("the finding on two arms is printed %d times, want once:\n%s", n, out)
	}
}
