package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cbprobe/cbprobe/results"
)

// writeRun writes a finished one-arm run directory with a few requests; ok
// says whether its one expectation held.
func writeRun(t *testing.T, dir string, ok bool) {
	t.Helper()
	w, err := results.Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	run := &results.Run{Experiment: "attack", Started: t0, Ended: t0.Add(3 * time.Second),
		Arms:         []results.Arm{{Name: "attack", Thresholds: results.Thresholds{FailureRate: 60, SlowCallRate: 50}}},
		Expectations: []results.Expectation{{Expr: "opens>=1", OK: ok, Got: "0", Want: ">= 1"}}}
	for i := 1; i <= 10; i++ {
		r := results.Request{Arm: "attack", Seq: i, Phase: "phase1", Intended: t0.Add(time.Duration(i) * 200 * time.Millisecond),
			Latency: time.Duration(100+i) * time.Millisecond, Status: 200, Outcome: results.OutcomeSucceeded}
		r.Sent = r.Intended
		run.Arms[0].Add(r)
		w.Request(r)
	}
	if err := w.Finish(run); err != nil {
		t.Fatal(err)
	}
}

func TestReportHTMLComparison(t *testing.T) {
	base := t.TempDir()
	a, b := filepath.Join(base, "run-a"), filepath.Join(base, "run-b")
	writeRun(t, a, false)
	writeRun(t, b, true)
	before, err := os.ReadFile(filepath.Join(a, results.HTMLFile))
	if err != nil {
		t.Fatal(err)
	}

	out := filepath.Join(base, "cmp.html")
	stdout, stderr, code := runCLI(context.Background(), "report", "--html", a, b, "--html-out", out)
	if code != 0 || !strings.Contains(stderr, "wrote "+out) || !strings.Contains(stdout, "run-a") {
		t.Fatalf("report --html A B: exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	page, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`data-verdict="failed"`, `data-verdict="passed"`, "run-a against run-b", `data-column="1"`} {
		if !strings.Contains(string(page), want) {
			t.Errorf("the comparison lacks %q", want)
		}
	}
	after, err := os.ReadFile(filepath.Join(a, results.HTMLFile))
	if err != nil || string(after) != string(before) {
		t.Errorf("a comparison rewrote a run's report.html (%v)", err)
	}

	// Without --html-out: A-vs-B.html in the current directory.
	t.Chdir(base)
	if _, stderr, code := runCLI(context.Background(), "report", "--html", a, b); code != 0 {
		t.Fatalf("report --html A B: exit %d %s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(base, "run-a-vs-run-b.html")); err != nil {
		t.Errorf("default comparison file: %v", err)
	}

	for _, tc := range []struct {
		name string
		args []string
	}{
		{"html-out without html", []string{"report", a, b, "--html-out", out}},
		{"html-out with one run", []string{"report", "--html", a, "--html-out", out}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, stderr, code := runCLI(context.Background(), tc.args...); code != 2 || !strings.Contains(stderr, "--html-out") {
				t.Errorf("exit %d %q, want 2 naming --html-out", code, stderr)
			}
		})
	}
	_, stderr, code = runCLI(context.Background(), "report", "--html", a, b, "--html-out", filepath.Join(base, "no-such-dir", "x.html"))
	if code != 3 || !strings.Contains(stderr, "write comparison") {
		t.Errorf("unwritable --html-out: exit %d %q, want 3", code, stderr)
	}
}
