package main

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/cbprobe/cbprobe/experiments"
	"github.com/cbprobe/cbprobe/results"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// feignBreaker is the breaker name the reference service registers.
const feignBreaker = "PgPaymentClient#requestPayment(String,PaymentRequest)"

// fakeService answers the reference flow (an order, then a successful
// payment), exposes an actuator listing breakers (all CLOSED; none when
// breakers is empty: /actuator answers 404), and calls onPayment with the
// number of payments received so far.
func fakeService(t *testing.T, onPayment func(n int64), breakers ...string) *httptest.Server {
	t.Helper()
	var payments atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/v1/orders", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"orderId":"o-1"}`))
	})
	mux.HandleFunc("POST /api/v1/payments", func(w http.ResponseWriter, _ *http.Request) {
		n := payments.Add(1)
		if onPayment != nil {
			onPayment(n)
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"SUCCESS"}`))
	})
	if len(breakers) > 0 {
		mux.HandleFunc("GET /actuator/circuitbreakers", func(w http.ResponseWriter, _ *http.Request) {
			m := map[string]any{}
			for _, b := range breakers {
				m[b] = map[string]any{"failureRate": "-1.0%", "slowCallRate": "-1.0%", "failureRateThreshold": "60.0%",
					"slowCallRateThreshold": "50.0%", "bufferedCalls": 0, "failedCalls": 0, "slowCalls": 0,
					"slowFailedCalls": 0, "notPermittedCalls": 0, "state": "CLOSED"}
			}
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(map[string]any{"circuitBreakers": m})
		})
		mux.HandleFunc("GET /actuator/circuitbreakerevents", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"circuitBreakerEvents":[]}`))
		})
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// firstRejected reads "first rejected request #N" of each arm from the terminal summary.
func firstRejected(t *testing.T, stdout string) map[string]int {
	t.Helper()
	out := map[string]int{}
	arm := ""
	armRe := regexp.MustCompile(`^arm (\S+)`)
	rejRe := regexp.MustCompile(`first rejected request #(\d+)`)
	for _, line := range strings.Split(stdout, "\n") {
		if m := armRe.FindStringSubmatch(line); m != nil {
			arm = m[1]
		}
		if m := rejRe.FindStringSubmatch(line); m != nil && arm != "" {
			out[arm], _ = strconv.Atoi(m[1])
		}
	}
	return out
}

// TestExperimentRetryCommand is issue 8's first point: both arms, the first
// rejected request near 14 with 3 attempts and near 21 with 1, the cause of
// each OPEN, attempts per request and the predictions; exit 0. It runs at
// --speed 5 (about 3 s): at --speed 20 the 100 ms slow threshold is 5 ms of
// real time, which a loaded 2-core machine under -race can exceed on an
// immediate failure and so change the request numbers (see
// experiments/run_test.go). One sequential user and seed 1 make the
// gateway's outcomes arrive in the same order on every run, so the numbers
// below are the same on every run: retry-3 rejects first at request 16
// (sim's 5–95 % band [11, 17], the field report's 14), retry-1 at 21 ([21, 22],
// the report's 21).
func TestExperimentRetryCommand(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "retry")
	stdout, stderr, code := runCLI(context.Background(), "experiment", "retry", "--speed", "5", "--seed", "1",
		"--predict-runs", "300", "--out", dir, "--color", "never",
		"--expect", "arm[retry-3].first-rejected-request<=17", "--expect", "cause=slow-call-rate")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	got := firstRejected(t, stdout)
	if r3, r1 := got["retry-3"], got["retry-1"]; r3 < 11 || r3 > 17 || r1 < 20 || r1 > 22 {
		t.Errorf("first rejected request: retry-3 #%d (want 11–17), retry-1 #%d (want 20–22)\n%s", r3, r1, stdout)
	}
	for _, want := range []string{
		"arm retry-3", "arm retry-1",
		"CLOSED → OPEN  slow-call-rate",
		"first rejected request: measured",
		"first OPEN request: measured",
		"gateway attempts per request",
		"PASS  arm retry-3: cause=slow-call-rate",
		"PASS  arm retry-1: cause=slow-call-rate",
		"PASS  arm[retry-3].first-rejected-request<=17",
		"Run directory: " + dir,
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	if n := strings.Count(stdout, "CLOSED → OPEN  slow-call-rate"); n != 2 {
		t.Errorf("%d OPEN transitions by slow-call rate shown, want one per arm", n)
	}
	if strings.Contains(stdout, "\x1b[") {
		t.Errorf("--color never output holds ANSI escapes")
	}
	rec, err := results.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !rec.Run.Complete || len(rec.Run.Arms) != 2 {
		t.Fatalf("run.json: complete=%v, %d arms", rec.Run.Complete, len(rec.Run.Arms))
	}
	// The closed form 1 + 0.4 + 0.16 = 1.56 goes with the measured attempts.
	found := false
	for _, c := range rec.Run.Arm("retry-3").Comparisons {
		if strings.HasPrefix(c.Metric, "gateway attempts per request") {
			found = strings.Contains(c.Note, "1.560") && c.Measured > 1 && !c.OutsideBand
		}
	}
	if !found {
		t.Errorf("retry-3: no attempts-per-request comparison inside its band with the closed form 1.560: %+v", rec.Run.Arm("retry-3").Comparisons)
	}
}

// TestExperimentExpectationsCommand checks verdicts and exit codes through the
// command with a spec whose gateway always fails (deterministic: the
// breaker opens by failure rate at request 20 with one attempt, 10 with two).
func TestExperimentExpectationsCommand(t *testing.T) {
	spec := filepath.Join("testdata", "experiment", "always-fails.yaml")
	tests := []struct {
		name    string
		expect  []string
		code    int
		verdict map[string]bool // expr@arm -> ok
		stdout  []string
		stderr  []string
	}{
		{"all hold", []string{"cause=failure-rate", "opens>=1", "arm[one].first-rejected-request==21", "arm[two].first-rejected-request<=11", "phase[1].success==0"}, 0,
			map[string]bool{"cause=failure-rate@one": true, "cause=failure-rate@two": true, "opens>=1@one": true, "opens>=1@two": true,
				"arm[one].first-rejected-request==21@one": true, "arm[two].first-rejected-request<=11@two": true, "phase[1].success==0@one": true, "phase[1].success==0@two": true},
			[]string{"PASS  arm one: cause=failure-rate", "PASS  arm two: cause=failure-rate", "PASS  arm[one].first-rejected-request==21"}, nil},
		{"one fails", []string{"cause=slow-call-rate", "arm[two].opens>=1"}, 1,
			map[string]bool{"cause=slow-call-rate@one": false, "cause=slow-call-rate@two": false, "arm[two].opens>=1@two": true},
			[]string{"FAIL  arm one: cause=slow-call-rate", "FAIL  arm two: cause=slow-call-rate"}, nil},
		{"unknown arm fails", []string{"arm[three].opens>=1"}, 1,
			map[string]bool{"arm[three].opens>=1@three": false}, []string{`no arm named "three"`}, nil},
		{"bad expression", []string{"opens>=1", "first-rejected-request<=fourteen"}, 2, nil, nil,
			[]string{`"first-rejected-request<=fourteen"`, "not a number"}},
		{"unknown metric", []string{"first-rejection<=14"}, 2, nil, nil, []string{`unknown metric "first-rejection"`}},
		{"unknown cause", []string{"cause=slowness"}, 2, nil, nil, []string{`unknown cause "slowness"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "run")
			args := []string{"experiment", "run", spec, "--speed", "10", "--predict-runs", "50", "--out", dir, "--color", "never"}
			for _, e := range tc.expect {
				args = append(args, "--expect", e)
			}
			stdout, stderr, code := runCLI(context.Background(), args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.code, stdout, stderr)
			}
			for _, w := range tc.stdout {
				if !strings.Contains(stdout, w) {
					t.Errorf("stdout lacks %q:\n%s", w, stdout)
				}
			}
			for _, w := range tc.stderr {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			if tc.code == 2 {
				if _, err := os.Stat(dir); err == nil {
					t.Errorf("a usage error created the run directory %s", dir)
				}
				return
			}
			rec, err := results.Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]bool{}
			for _, e := range rec.Run.Expectations {
				got[e.Expr+"@"+e.Arm] = e.OK
			}
			if len(got) != len(tc.verdict) {
				t.Errorf("run.json verdicts %v, want %v", got, tc.verdict)
			}
			for k, ok := range tc.verdict {
				if g, present := got[k]; !present || g != ok {
					t.Errorf("run.json verdict %s = %v (present %v), want %v", k, g, present, ok)
				}
			}
			junit, err := os.ReadFile(filepath.Join(dir, results.JUnitFile))
			if err != nil {
				t.Fatal(err)
			}
			var doc struct {
				Cases []struct {
					Failure *struct{} `xml:"failure"`
				} `xml:"testsuite>testcase"`
			}
			if err := xml.Unmarshal(junit, &doc); err != nil {
				t.Fatalf("junit.xml: %v", err)
			}
			failed := 0
			for _, c := range doc.Cases {
				if c.Failure != nil {
					failed++
				}
			}
			wantFailed := 0
			for _, ok := range tc.verdict {
				if !ok {
					wantFailed++
				}
			}
			if len(doc.Cases) != len(tc.verdict) || failed != wantFailed {
				t.Errorf("junit.xml: %d cases, %d failures; want %d and %d", len(doc.Cases), failed, len(tc.verdict), wantFailed)
			}
			summary, err := os.ReadFile(filepath.Join(dir, results.SummaryFile))
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range tc.expect {
				if !strings.Contains(string(summary), e) {
					t.Errorf("summary.md does not show %s", e)
				}
			}
		})
	}
}

// TestExperimentRunSpecFile runs a custom spec from testdata whose gateway
// turns slow in phase 2 (gateway-phases). At --speed 5 the slow threshold is
// 20 ms of real time against phase-1 answers of 2–4 ms: phase 1 would open
// only if 10 of 20 calls stalled 16 ms, so the breaker opens in phase 2 and
// by slow-call rate (no call ever fails).
func TestExperimentRunSpecFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	stdout, stderr, code := runCLI(context.Background(), "experiment", "run", filepath.Join("testdata", "experiment", "slow-from-phase-2.yaml"),
		"--speed", "5", "--predict-runs", "100", "--out", dir, "--color", "never",
		"--expect", "phase[1].success>=0.9", "--expect", "phase[1].rejected==0", "--expect", "phase[2].rejected>=0.3", "--expect", "opens>=1")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	rec, err := results.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	a := rec.Run.Arm("reference")
	if rec.Run.Experiment != "slow-from-phase-2" || a == nil || len(a.Phases) != 2 {
		t.Fatalf("run.json: experiment %q, arm %+v; want slow-from-phase-2 with one arm of two phases", rec.Run.Experiment, a)
	}
	// Phase 1 sends 30 requests (10/s for 3 s): the first OPEN is a phase-2 request.
	if a.FirstOpenRequest <= 30 {
		t.Errorf("first OPEN at request %d, want after phase 1's 30 requests", a.FirstOpenRequest)
	}
	if per, ok := a.Parameters["gatewayPerPhase"].([]any); !ok || len(per) != 2 || !strings.Contains(per[1].(string), "slow") {
		t.Errorf("run.json gatewayPerPhase = %v, want phase 2 in slow mode", a.Parameters["gatewayPerPhase"])
	}
	if len(rec.Run.Expectations) != 5 || !rec.Run.Passed() {
		t.Errorf("verdicts %+v, want the spec's and the 4 flags' expectations, all passed", rec.Run.Expectations)
	}
}

func TestExperimentShowParsesBack(t *testing.T) {
	for _, name := range experiments.Names() {
		t.Run(name, func(t *testing.T) {
			stdout, stderr, code := runCLI(context.Background(), "experiment", "show", name)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			got, err := experiments.ParseSpec("show "+name, []byte(stdout))
			if err != nil {
				t.Fatalf("show output does not parse back: %v\n%s", err, stdout)
			}
			want, err := experiments.Named(name)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(want, got, cmpopts.IgnoreFields(experiments.Spec{}, "Source")); d != "" {
				t.Errorf("show %s does not parse back to the embedded spec (-want +got):\n%s", name, d)
			}
		})
	}
}

func TestExperimentBadInput(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		wantIn []string
	}{
		{"no experiment named", []string{"experiment"}, []string{"name an experiment", "retry"}},
		{"unknown experiment", []string{"experiment", "nope"}, []string{"nope"}},
		{"show unknown", []string{"experiment", "show", "nope"}, []string{"no such experiment", "retry, slow-call, window-type"}},
		{"spec file missing", []string{"experiment", "run", "testdata/experiment/missing.yaml"}, []string{"missing.yaml"}},
		{"spec unknown key", []string{"experiment", "run", "testdata/experiment/bad-key.yaml"}, []string{"bad-key.yaml", "line 6", "gatway"}},
		{"speed zero", []string{"experiment", "retry", "--speed", "0"}, []string{"--speed"}},
		{"speed negative", []string{"experiment", "retry", "--speed", "-2"}, []string{"--speed"}},
		{"speed not a number", []string{"experiment", "retry", "--speed", "fast"}, []string{"speed", "fast"}},
		{"target with speed", []string{"experiment", "retry", "--target", "http://127.0.0.1:1", "--arm", "retry-3", "--speed", "10"}, []string{"--speed", "--target"}},
		{"target without arm", []string{"experiment", "retry", "--target", "http://127.0.0.1:1"}, []string{"--arm", "retry-3, retry-1"}},
		{"unknown arm", []string{"experiment", "retry", "--arm", "retry-7"}, []string{`"retry-7"`, "retry-3, retry-1"}},
		{"predict runs", []string{"experiment", "retry", "--predict-runs", "0"}, []string{"--predict-runs"}},
		{"bad header", []string{"experiment", "retry", "--header", "no colon"}, []string{"--header"}},
		{"unknown metrics source", []string{"experiment", "retry", "--target", "TARGET", "--arm", "retry-3", "--metrics", "statsd", "--pg-listen", "127.0.0.1:0"}, []string{"statsd"}},
		// A usage error is found before any network: exit 2 even with a target that does not answer.
		{"unknown metrics source, target down", []string{"experiment", "retry", "--target", "http://127.0.0.1:1", "--arm", "retry-3", "--metrics", "statsd", "--pg-listen", "127.0.0.1:0"}, []string{"statsd"}},
		{"prom-api without url", []string{"experiment", "retry", "--target", "http://127.0.0.1:1", "--arm", "retry-3", "--metrics", "prom-api", "--pg-listen", "127.0.0.1:0"}, []string{"--prom-api"}},
	}
	srv := fakeService(t, nil, feignBreaker)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "run")
			for i, a := range tc.args {
				if a == "TARGET" {
					tc.args[i] = srv.URL
				}
			}
			stdout, stderr, code := runCLI(context.Background(), append(tc.args, "--out", out)...)
			if tc.name == "no experiment named" || tc.name == "unknown experiment" || tc.name == "show unknown" {
				stdout, stderr, code = runCLI(context.Background(), tc.args...)
			}
			if code != exitUsage {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, exitUsage, stdout, stderr)
			}
			for _, w := range tc.wantIn {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
		})
	}
}

func TestExperimentExternalTarget(t *testing.T) {
	tests := []struct {
		name     string
		breakers []string
		code     int
		stderr   []string
		stdout   []string
	}{
		// Issue 8: a breaker that never appears in the metrics is exit 3,
		// naming what was found instead.
		{"another breaker", []string{"inventory", "shipping"}, exitInfrastructure,
			[]string{feignBreaker, "was never observed", "found: inventory, shipping", "--breaker"}, nil},
		{"no actuator", nil, exitInfrastructure, []string{feignBreaker, "found: no breaker at all"}, nil},
		// The breaker is there but never opens (the fake always succeeds):
		// the run completes and the spec's opens>=1 fails.
		{"breaker never opens", []string{feignBreaker}, exitExpectation, nil, []string{"FAIL  arm retry-3: opens>=1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := fakeService(t, nil, tc.breakers...)
			dir := filepath.Join(t.TempDir(), "run")
			stdout, stderr, code := runCLI(context.Background(), "experiment", "retry", "--target", srv.URL, "--arm", "retry-3",
				"--breaker", feignBreaker, "--pg-listen", "127.0.0.1:0", "--predict-runs", "20", "--out", dir, "--color", "never")
			if code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.code, stdout, stderr)
			}
			for _, w := range tc.stderr {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			for _, w := range tc.stdout {
				if !strings.Contains(stdout, w) {
					t.Errorf("stdout lacks %q:\n%s", w, stdout)
				}
			}
			rec, err := results.Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			if rec.Run.Target != srv.URL || len(rec.Run.Arms) != 1 || len(rec.Requests) != 40 {
				t.Fatalf("run.json target %q, %d arms, %d requests; want the target, arm retry-3 and its 40 requests", rec.Run.Target, len(rec.Run.Arms), len(rec.Requests))
			}
			// cbprobe cannot configure the user's service: the arm's notes
			// name the setting the arm assumes.
			notes := strings.Join(rec.Run.Arms[0].Notes, "\n")
			if !strings.Contains(notes, "pg.retry-max-attempts=3") {
				t.Errorf("arm notes do not say the service must run with pg.retry-max-attempts=3:\n%s", notes)
			}
		})
	}
}

// TestExperimentExternalTargetDefaultBreaker checks the default of --breaker
// (experiments.Options.Breaker: "the Feign name, or the only breaker the
// target exposes"): a target exposing two other breakers must not be read as
// if one of them were the payment breaker.
func TestExperimentExternalTargetDefaultBreaker(t *testing.T) {
	tests := []struct {
		name     string
		breakers []string
		code     int
		stderr   []string
	}{
		{"two other breakers", []string{"inventory", "shipping"}, exitInfrastructure, []string{feignBreaker, "found: inventory, shipping; set --breaker"}},
		{"no actuator", nil, exitInfrastructure, []string{feignBreaker, "found: no breaker at all"}},
		{"the only breaker", []string{"payments"}, exitExpectation, nil},
		{"the feign breaker among others", []string{"inventory", feignBreaker}, exitExpectation, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := fakeService(t, nil, tc.breakers...)
			dir := filepath.Join(t.TempDir(), "run")
			stdout, stderr, code := runCLI(context.Background(), "experiment", "retry", "--target", srv.URL, "--arm", "retry-3",
				"--pg-listen", "127.0.0.1:0", "--predict-runs", "20", "--out", dir, "--color", "never")
			if code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.code, stdout, stderr)
			}
			for _, w := range tc.stderr {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			rec, err := results.Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			if tc.code == exitExpectation && !strings.Contains(stdout, "FAIL  arm retry-3: opens>=1") {
				t.Errorf("stdout lacks the failed verdict of opens>=1:\n%s", stdout)
			}
			want := feignBreaker
			if tc.name == "the only breaker" {
				want = "payments"
			}
			if got := rec.Run.Arms[0].Breaker; got != want {
				t.Errorf("arm read breaker %q, want %q", got, want)
			}
		})
	}
}

func TestExperimentInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The service cancels the command's context (Ctrl-C) at its 5th payment.
	srv := fakeService(t, func(n int64) {
		if n == 5 {
			cancel()
		}
	}, feignBreaker)
	dir := filepath.Join(t.TempDir(), "run")
	stdout, stderr, code := runCLI(ctx, "experiment", "retry", "--target", srv.URL, "--arm", "retry-1",
		"--pg-listen", "127.0.0.1:0", "--predict-runs", "20", "--out", dir, "--color", "never")
	if code != exitInterrupted {
		t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, exitInterrupted, stdout, stderr)
	}
	if !strings.Contains(stderr, "interrupted; partial run kept in "+dir) {
		t.Errorf("stderr does not say where the partial run is:\n%s", stderr)
	}
	rec, err := results.Load(dir)
	if err != nil {
		t.Fatalf("results.Load of the partial run: %v", err)
	}
	if rec.Run.Complete || !rec.Run.Interrupted {
		t.Errorf("run.json complete=%v interrupted=%v, want complete=false interrupted=true", rec.Run.Complete, rec.Run.Interrupted)
	}
	if n := len(rec.Requests); n < 4 || n >= 40 {
		t.Errorf("%d requests recorded, want the few sent before the interrupt (about 5 of 40)", n)
	}
}
