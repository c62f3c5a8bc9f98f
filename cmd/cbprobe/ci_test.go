package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cbprobe/cbprobe/demo"
	"github.com/cbprobe/cbprobe/results"
)

// TestExperimentCIOutputs runs the always-fails spec (deterministic: both
// arms open by failure rate; the findings are half-open-trial-cannot-pass,
// an error on both arms, and warnings) with --fail-on and the GitHub Actions
// environment set per case.
func TestExperimentCIOutputs(t *testing.T) {
	spec := filepath.Join("testdata", "experiment", "always-fails.yaml")
	const cannotClose = "::error title=cbprobe always-fails%3A error half-open-trial-cannot-pass (arms one%2C two)::"
	tests := []struct {
		name        string
		args        []string
		actions     string // GITHUB_ACTIONS
		summary     bool   // set GITHUB_STEP_SUMMARY to a file holding "earlier step\n"
		code        int
		verdict     string
		stdout      []string
		notStdout   []string
		stderr      []string
		jsonStdout  bool
		summaryHead string
	}{
		{name: "findings do not fail by default", code: exitOK, verdict: results.VerdictPassed, notStdout: []string{"::", "--fail-on"}},
		{name: "fail-on none", args: []string{"--fail-on", "none"}, code: exitOK, verdict: results.VerdictPassed},
		{name: "fail-on error fails on the error finding", args: []string{"--fail-on", "error"}, code: exitExpectation, verdict: results.VerdictFailed,
			stdout: []string{"FAIL  --fail-on error: 2 findings of severity error or worse"}, notStdout: []string{"::"}},
		{name: "fail-on warning counts warnings too", args: []string{"--fail-on", "warning"}, code: exitExpectation, verdict: results.VerdictFailed,
			stdout: []string{"--fail-on warning: 5 findings of severity warning or worse"}},
		{name: "bad fail-on is a usage error", args: []string{"--fail-on", "fatal"}, code: exitUsage, stderr: []string{`--fail-on: "fatal" is not one of none, warning, error`}},
		{name: "annotations in GitHub Actions", args: []string{"--expect", "cause=slow-call-rate", "--expect", "arm[one].opens>=1"}, actions: "true",
			code: exitExpectation, verdict: results.VerdictFailed,
			stdout: []string{
				"::error title=cbprobe always-fails%3A expectation failed::arm one: cause=slow-call-rate (got failure-rate, want == slow-call-rate)\n",
				"::error title=cbprobe always-fails%3A expectation failed::arm two: cause=slow-call-rate",
				cannotClose,
				"::warning title=cbprobe always-fails%3A warning retry-amplification (arm two)::",
			},
			notStdout: []string{"opens>=1 ("}},
		{name: "no annotations unless GITHUB_ACTIONS is true", actions: "false", code: exitOK, verdict: results.VerdictPassed, notStdout: []string{"::"}},
		{name: "annotations on stderr with --json", args: []string{"--json", "--fail-on", "error"}, actions: "true", code: exitExpectation,
			verdict: results.VerdictFailed, jsonStdout: true, stderr: []string{cannotClose}},
		{name: "summary appended to the job summary", args: []string{"--fail-on", "error"}, summary: true, code: exitExpectation,
			verdict: results.VerdictFailed, summaryHead: "earlier step\n\n# ❌ cbprobe always-fails\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(envGitHubActions, tc.actions)
			stepSummary := ""
			if tc.summary {
				stepSummary = filepath.Join(t.TempDir(), "step_summary")
				if err := os.WriteFile(stepSummary, []byte("earlier step\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			t.Setenv(envStepSummary, stepSummary)
			dir := filepath.Join(t.TempDir(), "run")
			args := append([]string{"experiment", "run", spec, "--speed", "10", "--predict-runs", "50", "--out", dir, "--color", "never"}, tc.args...)
			stdout, stderr, code := runCLI(context.Background(), args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.code, stdout, stderr)
			}
			for _, w := range tc.stdout {
				if !strings.Contains(stdout, w) {
					t.Errorf("stdout lacks %q:\n%s", w, stdout)
				}
			}
			for _, w := range tc.notStdout {
				if strings.Contains(stdout, w) {
					t.Errorf("stdout holds %q:\n%s", w, stdout)
				}
			}
			for _, w := range tc.stderr {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			if tc.jsonStdout {
				var run results.Run
				if err := json.Unmarshal([]byte(stdout), &run); err != nil {
					t.Errorf("stdout is not run.json (%v):\n%s", err, stdout)
				}
			}
			if tc.code == exitUsage {
				if _, err := os.Stat(dir); err == nil {
					t.Errorf("a usage error created the run directory %s", dir)
				}
				return
			}
			rec, err := results.Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			if rec.Run.Verdict != tc.verdict {
				t.Errorf("run.json verdict %q, want %q", rec.Run.Verdict, tc.verdict)
			}
			if tc.summary {
				got, err := os.ReadFile(stepSummary)
				if err != nil {
					t.Fatal(err)
				}
				md, err := os.ReadFile(filepath.Join(dir, results.SummaryFile))
				if err != nil {
					t.Fatal(err)
				}
				if !strings.HasPrefix(string(got), tc.summaryHead) || string(got) != "earlier step\n\n"+string(md) {
					t.Errorf("job summary is not the earlier content, a blank line and summary.md:\n%s", got)
				}
			}
		})
	}
}

// TestExperimentFailOnKeepsInconclusive: a run that could not observe its
// breaker stays inconclusive (exit 3) under --fail-on: its findings (here
// half-open-trial-cannot-pass, an error, and a warning) do not fail it. The
// warning stays a warning annotation; the inconclusive expectation is a warning.
func TestExperimentFailOnKeepsInconclusive(t *testing.T) {
	t.Setenv(envGitHubActions, "true")
	t.Setenv(envStepSummary, "")
	srv := fakeService(t, nil) // no actuator: the breaker is never observed
	dir := filepath.Join(t.TempDir(), "run")
	stdout, stderr, code := runCLI(context.Background(), "experiment", "retry", "--target", srv.URL, "--arm", "retry-3",
		"--breaker", feignBreaker, "--pg-listen", "127.0.0.1:0", "--predict-runs", "20", "--out", dir, "--color", "never", "--fail-on", "warning")
	if code != exitInfrastructure {
		t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, exitInfrastructure, stdout, stderr)
	}
	for _, want := range []string{"::warning title=cbprobe retry%3A expectation inconclusive::arm retry-3: opens>=1",
		"::warning title=cbprobe retry%3A warning timeouts-count-as-slow-failures (arm retry-3)::"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	if strings.Contains(stdout, "FAIL  --fail-on") {
		t.Errorf("findings of an inconclusive arm failed the run:\n%s", stdout)
	}
	rec, err := results.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Run.Verdict != results.VerdictInconclusive {
		t.Errorf("verdict %q, want inconclusive", rec.Run.Verdict)
	}
}

// refusingService answers the reference flow and exposes a CLOSED breaker
// "pg" whose events hold one ERROR with a 400 answer of the gateway: the
// attack reports the gateway-refused-requests finding (severity error).
func refusingService(t *testing.T) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/v1/orders", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`{"orderId":"o-1"}`))
	})
	mux.HandleFunc("POST /api/v1/payments", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`{"status":"SUCCESS"}`))
	})
	mux.HandleFunc("GET /actuator/circuitbreakers", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`{"circuitBreakers":{"pg":{"failureRate":"-1.0%","slowCallRate":"-1.0%","failureRateThreshold":"60.0%",` +
			`"slowCallRateThreshold":"50.0%","bufferedCalls":1,"failedCalls":1,"slowCalls":0,"slowFailedCalls":0,` +
			`"notPermittedCalls":0,"state":"CLOSED"}}}`))
	})
	// The event happens during the attack (from the third read on): events
	// older than the first read are history, never counted.
	var mu sync.Mutex
	reads := 0
	var at time.Time
	mux.HandleFunc("GET /actuator/circuitbreakerevents", func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		reads++
		if reads == 3 {
			at = time.Now()
		}
		var ev []demo.CBEventView
		if !at.IsZero() {
			ev = []demo.CBEventView{{Breaker: "pg", Type: "ERROR", Time: at, HasDuration: true, DurationMs: 3,
				ErrorMessage: "feign.FeignException$BadRequest: [400 Bad Request] during [POST] to [http://127.0.0.1:8082/api/v1/payments]"}}
		}
		mu.Unlock()
		_, _ = w.Write(demo.RenderCBEvents(ev, demo.DefaultZone(), false))
	})
	mux.HandleFunc("GET /", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNotFound) })
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// TestAttackFailOn: attack's findings fail the run under --fail-on like
// experiment's, with the annotation in GitHub Actions and the job summary.
func TestAttackFailOn(t *testing.T) {
	tests := []struct {
		name    string
		failOn  string
		code    int
		verdict string
	}{
		{"findings reported, not failing", "none", exitOK, results.VerdictPassed},
		{"fail-on error", "error", exitExpectation, results.VerdictFailed},
		{"fail-on warning takes errors", "warning", exitExpectation, results.VerdictFailed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(envGitHubActions, "true")
			summary := filepath.Join(t.TempDir(), "summary")
			t.Setenv(envStepSummary, summary)
			srv := refusingService(t)
			dir := filepath.Join(t.TempDir(), "run")
			stdout, stderr, code := runCLI(context.Background(), "attack", "--target", srv.URL, "--phases", "20/s:1s",
				"--actuator", srv.URL, "--poll-interval", "50ms", "--out", dir, "--color", "never", "--fail-on", tc.failOn)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.code, stdout, stderr)
			}
			if !strings.Contains(stdout, "::error title=cbprobe attack%3A error gateway-refused-requests (arm attack)::") {
				t.Errorf("stdout lacks the finding's annotation:\n%s", stdout)
			}
			rec, err := results.Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			if rec.Run.Verdict != tc.verdict {
				t.Errorf("verdict %q, want %q", rec.Run.Verdict, tc.verdict)
			}
			got, err := os.ReadFile(summary)
			if err != nil || !strings.Contains(string(got), "gateway-refused-requests") {
				t.Errorf("job summary (%v) lacks the finding:\n%s", err, got)
			}
		})
	}
	if _, stderr, code := runCLI(context.Background(), "attack", "--target", "http://127.0.0.1:1", "--phases", "1/s:1s", "--fail-on", "all"); code != exitUsage {
		t.Errorf("--fail-on all: exit %d, want 2\n%s", code, stderr)
	}
}
