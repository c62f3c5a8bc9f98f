package experiments

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/cbprobe/cbprobe/results"
)

// The embedded-setup tests run the named experiments faster than real time
// (embeddedSpeed: 20 as the issue asks, 5 under -race; see speed_race_test.go).
// What speed does to the measurement: the reference service's clock runs
// Speed times faster than the wall clock, so a stall of d on the machine is
// d × Speed on the breaker's clock. The slow-call threshold is 100 ms of
// service time, i.e. 5 ms of real time at --speed 20, and the 600 ms
// TimeLimiter 30 ms: on a loaded machine an immediate failure can become a
// slow failure and a 500 ms answer a timeout. The tests therefore assert only
// metrics such a stall cannot move past the stated tolerance: causes where a
// stall can only add to the rate that decides them, request numbers in the
// sequential experiment (no concurrency: the gateway's seeded outcomes come
// in the same order on every run), and per-phase shares bounded by the
// breaker's own rules (see each assertion).
// predictRuns is lowered from 1,000 to 300 to keep the simulation's share of
// the -race run time small; the bands' 5th and 95th percentiles over 300 runs
// move by about one request (binomial standard error of a 5 % quantile over
// 300 runs: sqrt(0.05·0.95/300) ≈ 1.3 % of the distribution's mass).
const predictRuns = 300

// runNamed runs a named experiment into a fresh directory and loads the record back.
func runNamed(t *testing.T, name string, speed float64, expect ...string) (*results.Record, error) {
	t.Helper()
	spec, err := Named(name)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), name)
	_, gotDir, runErr := Run(context.Background(), Options{Spec: spec, Speed: speed, Seed: 1, Out: dir, Expect: expect, PredictRuns: predictRuns})
	if gotDir != dir {
		t.Fatalf("Run wrote to %q, want %q (err %v)", gotDir, dir, runErr)
	}
	rec, err := results.Load(dir)
	if err != nil {
		t.Fatalf("results.Load(%s): %v (run error %v)", dir, err, runErr)
	}
	return rec, runErr
}

// checkRunDirectory asserts that every file of the run directory exists and agrees with run.json.
func checkRunDirectory(t *testing.T, rec *results.Record, arms ...string) {
	t.Helper()
	for _, f := range []string{results.RunFile, results.RequestsFile, results.SamplesFile, results.EventsFile, results.SummaryFile, results.JUnitFile, results.HTMLFile} {
		st, err := os.Stat(filepath.Join(rec.Dir, f))
		if err != nil || st.Size() == 0 {
			t.Errorf("%s: missing or empty (%v)", f, err)
		}
	}
	if !rec.Run.Complete || rec.Run.Interrupted {
		t.Errorf("run complete=%v interrupted=%v reason=%q, want a complete run", rec.Run.Complete, rec.Run.Interrupted, rec.Run.Reason)
	}
	if len(rec.Warnings) > 0 {
		t.Errorf("results.Load warnings: %v", rec.Warnings)
	}
	if len(rec.Run.Arms) != len(arms) {
		t.Fatalf("%d arms, want %v", len(rec.Run.Arms), arms)
	}
	sent := 0
	for i, name := range arms {
		a := &rec.Run.Arms[i]
		if a.Name != name {
			t.Errorf("arm %d is %q, want %q", i, a.Name, name)
		}
		if a.Breaker == "" || len(a.Comparisons) == 0 {
			t.Errorf("arm %s: breaker %q, %d comparisons; want the polled breaker and predictions beside the measurements", name, a.Breaker, len(a.Comparisons))
		}
		tot := a.Totals()
		if tot.Sent != tot.Planned-tot.Dropped || tot.Sent != tot.Succeeded+tot.Rejected+tot.Failed {
			t.Errorf("arm %s: planned %d, dropped %d, sent %d = %d succeeded + %d rejected + %d failed: counts do not add up",
				name, tot.Planned, tot.Dropped, tot.Sent, tot.Succeeded, tot.Rejected, tot.Failed)
		}
		sent += tot.Sent
	}
	if len(rec.Requests) != sent {
		t.Errorf("requests.csv has %d rows, run.json counts %d requests", len(rec.Requests), sent)
	}
	samples := map[string]int{}
	for _, s := range rec.Samples {
		samples[s.Arm]++
	}
	for _, name := range arms {
		if samples[name] == 0 {
			t.Errorf("samples.csv has no sample of arm %s", name)
		}
	}
}

// firstOpen returns the first CLOSED→OPEN transition of an arm.
func firstOpen(t *testing.T, a *results.Arm) results.Transition {
	t.Helper()
	for _, tr := range a.Transitions {
		if tr.From == "CLOSED" && tr.To == "OPEN" {
			return tr
		}
	}
	t.Fatalf("arm %s never went CLOSED→OPEN; transitions %+v", a.Name, a.Transitions)
	return results.Transition{}
}

// comparison returns the arm's first comparison row whose metric starts with metric.
func comparison(t *testing.T, a *results.Arm, metric string) results.Comparison {
	t.Helper()
	for _, c := range a.Comparisons {
		if strings.HasPrefix(c.Metric, metric) {
			return c
		}
	}
	t.Fatalf("arm %s has no comparison %q", a.Name, metric)
	return results.Comparison{}
}

// retrySpeed runs the retry experiment in real time. At --speed 5 a stall of
// 20 ms of real time changes an outcome (100 ms of service time), and beside two
// CPU-bound processes under -race such stalls happened: 42 % of the failures
// became TimeLimiter timeouts and the first OPEN moved to "both" at request 10.
// In real time the stall must last 100 ms; the test takes about 20 s instead of 3,
// in parallel with the other experiments.
const retrySpeed = 1

func TestRunRetry(t *testing.T) {
	t.Parallel() // mostly waiting on timers: the three experiments overlap (about 25 s instead of 45 s under -race)
	rec, err := runNamed(t, "retry", retrySpeed, "arm[retry-3].first-rejected-request<=17", "arm[retry-1].first-rejected-request>=19")
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	checkRunDirectory(t, rec, "retry-3", "retry-1")
	for _, a := range rec.Run.Arms {
		// One user sends requests back to back, so pgsim draws its outcomes
		// (seed 1) in the same order on every run: the window's content when it
		// first fills, hence the cause and the request numbers, are the same on
		// every run. Only a stall of 100 ms of real time could change them, by
		// making an immediate failure slow or a 500 ms answer a timeout: which
		// is why this test runs in real time (retrySpeed). sim gives
		// slow-call-rate 92 % and failure-rate 8 % over seeds.
		tr := firstOpen(t, &a)
		if tr.Cause != "slow-call-rate" {
			t.Errorf("arm %s: first OPEN by %q (evidence %+v), want slow-call-rate", a.Name, tr.Cause, tr.Evidence)
		}
		if tr.Evidence.FailureRate >= 60 || tr.Evidence.SlowCallRate < 50 {
			t.Errorf("arm %s: failure rate %.1f%%, slow-call rate %.1f%% at the transition: a slow-call-rate OPEN needs failure < 60 and slow >= 50", a.Name, tr.Evidence.FailureRate, tr.Evidence.SlowCallRate)
		}
		// The measured request numbers lie in sim's 5–95 % bands (seed 1:
		// retry-3 rejects first at 16 in [11, 17], retry-1 at 21 in [21, 22]).
		// Deterministic for this seed, as said above; the band check is what
		// the run itself reports, so it is asserted through OutsideBand.
		for _, m := range []string{"first OPEN request", "first rejected request"} {
			if c := comparison(t, &a, m); c.OutsideBand {
				t.Errorf("arm %s: %s measured %g outside the predicted [%g, %g]", a.Name, m, c.Measured, c.PredictedP5, c.PredictedP95)
			}
		}
		if a.FirstRejectedRequest != a.FirstOpenRequest+1 {
			// Sequential: the request in flight when the breaker opens is the
			// last one sent before the transition; the next one is refused.
			t.Errorf("arm %s: first OPEN at request %d, first rejected %d; with one sequential user the next request is the first rejected", a.Name, a.FirstOpenRequest, a.FirstRejectedRequest)
		}
	}
	r3, r1 := rec.Run.Arm("retry-3"), rec.Run.Arm("retry-1")
	if r3.FirstRejectedRequest >= r1.FirstRejectedRequest {
		t.Errorf("retry-3 first rejected at %d, retry-1 at %d: three attempts must fill the window sooner", r3.FirstRejectedRequest, r1.FirstRejectedRequest)
	}
	// With one attempt the gateway is called exactly once per request before
	// the breaker opens.
	if r1.AttemptsPerRequest != 1 {
		t.Errorf("retry-1: %.3f attempts per request, want exactly 1", r1.AttemptsPerRequest)
	}
	// retry-3: the band is the simulated mean ± 3 standard errors of the mean
	// over the requests the breaker did not reject (the attempts of one
	// request are a truncated geometric variable, sd 0.75: ±0.6 over 14
	// requests), and the note gives the closed form 1 + 0.4 + 0.16 = 1.56.
	// Deterministic for seed 1 like the request numbers above.
	if c := comparison(t, r3, "gateway attempts per request"); c.OutsideBand || !strings.Contains(c.Note, "= 1.560") || c.Measured <= 1 {
		t.Errorf("retry-3: %.3f attempts per request, predicted %.3f [%.3f, %.3f] (%s); want > 1, inside the band, closed form 1.560", c.Measured, c.PredictedP50, c.PredictedP5, c.PredictedP95, c.Note)
	}
	if len(rec.Run.Expectations) != 4 {
		t.Fatalf("%d verdicts, want 4 (opens>=1 on two arms, and one per arm[...] expectation): %+v", len(rec.Run.Expectations), rec.Run.Expectations)
	}
	for _, e := range rec.Run.Expectations {
		if !e.OK {
			t.Errorf("expectation %s on arm %s failed: got %s", e.Expr, e.Arm, e.Got)
		}
	}
	found := false
	for _, f := range rec.Run.Findings {
		found = found || (f.ID == "retry-amplification" && f.Arm == "retry-3")
	}
	if !found {
		t.Errorf("no retry-amplification finding for retry-3; findings %+v", rec.Run.Findings)
	}
}

func TestRunWindowType(t *testing.T) {
	t.Parallel() // mostly waiting on timers: the three experiments overlap (about 25 s instead of 45 s under -race)
	rec, err := runNamed(t, "window-type", embeddedSpeed)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	checkRunDirectory(t, rec, "count-based", "time-based")
	for _, a := range rec.Run.Arms {
		if len(a.Phases) != 3 || a.Phases[1].Sent != 0 {
			t.Fatalf("arm %s: phases %+v, want burst, an empty pause and resume", a.Name, a.Phases)
		}
		// Each arm's half-open trial cannot pass (every successful call is
		// slow: 100–500 ms against a 100 ms threshold, so any 5-call trial
		// has a slow-call rate >= 60 % or a failure rate >= 60 %). Once the
		// breaker has opened it never closes, so during the 8 s resume phase
		// only the half-open permits get through: at most 5 calls per
		// 10 s OPEN wait, i.e. 2 trial windows = 10 calls, and each call lets
		// at most one of the 40 requests not be rejected. Rejected share
		// >= 30/40 = 0.75; asserted >= 0.6 to allow one more trial window
		// should a stall stretch the phase in service time.
		if !opened(&a) {
			// TIME_BASED opens only if the burst makes >= 100 calls within
			// 10 s (75 requests × 1.56 attempts = 117 expected, sd 6.5): this
			// fails for about 1 run in 200; the finding must then say so.
			if a.Name == "time-based" && hasFinding(rec, "time-based-min-calls-unreachable", a.Name) {
				continue
			}
			t.Fatalf("arm %s never opened and no finding says why; transitions %+v", a.Name, a.Transitions)
		}
		if got := a.Phases[2].Share(a.Phases[2].Rejected); got < 0.6 {
			t.Errorf("arm %s: %.1f%% of the resume phase rejected, want >= 60%% (the breaker cannot close)", a.Name, 100*got)
		}
	}
	// The count-based window fills after 20 calls, about 13 requests, long
	// before the TIME_BASED window's 100 calls (about 64 requests): so the
	// count-based arm's first OPEN request is earlier, whatever the timing.
	cb, tb := rec.Run.Arm("count-based"), rec.Run.Arm("time-based")
	if opened(tb) && cb.FirstOpenRequest >= tb.FirstOpenRequest {
		t.Errorf("count-based opened at request %d, time-based at %d; COUNT_BASED 20 must open first\ncount-based transitions %+v\ntime-based transitions %+v\nwarnings %q",
			cb.FirstOpenRequest, tb.FirstOpenRequest, cb.Transitions, tb.Transitions, rec.Run.Warnings)
	}
	// The TIME_BASED window opens with >= 100 calls buffered (minimum number
	// of calls 100), with the slow-call rate over its threshold: with ~117
	// calls the slow share (60 % successes) is 0.60 ± 0.045, so slow < 50 %
	// is 2.2 sigma away, and every timeout adds a slow call too (sim:
	// slow-call-rate in 100 % of its runs). The failure rate can join it
	// ("both"): under -race at --speed 20 the 600 ms TimeLimiter is 30 ms of
	// real time and answers of 500 ms are 25 ms, so a 5 ms stall turns a
	// success into a timeout (seen: 64 % of the failures were timeouts, cause
	// "both"). The assertion is therefore "the slow-call rate was exceeded".
	if opened(tb) {
		tr := firstOpen(t, tb)
		if (tr.Cause != "slow-call-rate" && tr.Cause != "both") || tr.Evidence.Buffered < 100 || tr.Evidence.SlowCallRate < 50 {
			t.Errorf("time-based: first OPEN by %q with %d calls buffered, want the slow-call rate exceeded with >= 100 calls (minimum number of calls); evidence %+v", tr.Cause, tr.Evidence.Buffered, tr.Evidence)
		}
	}
	if !hasFinding(rec, "window-memory-after-pause", "count-based") {
		t.Errorf("no window-memory-after-pause finding for count-based; findings %+v", rec.Run.Findings)
	}
}

func TestRunSlowCall(t *testing.T) {
	t.Parallel() // mostly waiting on timers: the three experiments overlap (about 25 s instead of 45 s under -race)
	rec, err := runNamed(t, "slow-call", embeddedSpeed)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	checkRunDirectory(t, rec, "timelimiter-600ms", "timelimiter-1000ms")
	// 1,000 ms arm: the gateway answers every call after 150–300 ms without
	// error, so no call fails and every call is slow: the only possible cause
	// is the slow-call rate, with a failure rate of 0.
	a := rec.Run.Arm("timelimiter-1000ms")
	tr := firstOpen(t, a)
	// (At --speed 20 the 1 s timeout is 50 ms of real time against answers
	// of 7.5–15 ms: a stall of 35 ms under -race could still time a call out,
	// so the failure rate is asserted below its threshold, not at 0: 12 of
	// the 20 calls would have to time out to reach 60 %.)
	if tr.Cause != "slow-call-rate" || tr.Evidence.FailureRate >= 60 || tr.Evidence.SlowCallRate != 100 {
		t.Errorf("timelimiter-1000ms: first OPEN by %q, failure %.1f%%, slow %.1f%%; want slow-call-rate, < 60%%, 100%%", tr.Cause, tr.Evidence.FailureRate, tr.Evidence.SlowCallRate)
	}
	// 600 ms arm: latency 300–900 ms, so a call times out with probability
	// 1/2; a timed-out call is a failure and a slow call. The first OPEN must
	// show failures in the window that are all slow and all timeouts.
	b := rec.Run.Arm("timelimiter-600ms")
	tr = firstOpen(t, b)
	if tr.Evidence.Failed <= 0 || !strings.Contains(tr.Evidence.Note, "100% of the failures were also slow") {
		t.Errorf("timelimiter-600ms: %d failures in the window, note %q; want timeouts recorded as slow failures", tr.Evidence.Failed, tr.Evidence.Note)
	}
	// The measured finding (evidence from the transition), not only the
	// static one springconf.Lint gives every arm under the same ID.
	measured := false
	for _, f := range rec.Run.Findings {
		if f.ID == "timeouts-count-as-slow-failures" && f.Arm == "timelimiter-600ms" && len(f.Evidence) > 0 && !strings.HasPrefix(f.Evidence[0], "configuration") {
			measured = true
		}
	}
	if !measured {
		t.Errorf("no measured timeouts-count-as-slow-failures finding for timelimiter-600ms; findings %+v", rec.Run.Findings)
	}
	// The verdict of the spec's own expectation is in run.json and junit.xml.
	if len(rec.Run.Expectations) != 1 || !rec.Run.Expectations[0].OK || rec.Run.Expectations[0].Arm != "timelimiter-1000ms" {
		t.Errorf("verdicts %+v, want arm[timelimiter-1000ms].cause=slow-call-rate passed", rec.Run.Expectations)
	}
	checkJUnit(t, rec.Dir, 1, 0)
}

// checkJUnit asserts junit.xml holds one test case per verdict and the failures.
func checkJUnit(t *testing.T, dir string, cases, failures int) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, results.JUnitFile))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Cases []struct {
			Name    string    `xml:"name,attr"`
			Failure *struct{} `xml:"failure"`
		} `xml:"testsuite>testcase"`
	}
	if err := xml.Unmarshal(data, &doc); err != nil {
		t.Fatalf("junit.xml: %v", err)
	}
	failed := 0
	for _, c := range doc.Cases {
		if c.Failure != nil {
			failed++
		}
	}
	if len(doc.Cases) != cases || failed != failures {
		t.Errorf("junit.xml: %d test cases, %d failures; want %d and %d\n%s", len(doc.Cases), failed, cases, failures, data)
	}
}

func opened(a *results.Arm) bool {
	for _, tr := range a.Transitions {
		if tr.To == "OPEN" {
			return true
		}
	}
	return false
}

func hasFinding(rec *results.Record, id, arm string) bool {
	for _, f := range rec.Run.Findings {
		if f.ID == id && f.Arm == arm {
			return true
		}
	}
	return false
}

// smallSpec is a two-arm sequential experiment of 8 requests: fast, and
// enough to open the breaker with a gateway that always fails.
func smallSpec(t *testing.T) *Spec {
	t.Helper()
	s, err := ParseSpec("small.yaml", []byte(`name: small
traffic:
  sequential: {users: 1, requests: 30}
gateway: {error-rate: 1, error-timing: immediate}
service: {retry-wait: 0s}
arms:
  - name: a
    service: {retry-max-attempts: 1}
  - name: b
    service: {retry-max-attempts: 2}
`))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestRunExpectationVerdicts(t *testing.T) {
	// A gateway that always fails: the window of 20 fills with failures and
	// the breaker opens by failure rate after 20 attempts — at request 20
	// with one attempt, request 10 with two. Nothing random is involved.
	dir := filepath.Join(t.TempDir(), "run")
	_, _, err := Run(context.Background(), Options{Spec: smallSpec(t), Speed: 10, Out: dir, PredictRuns: 50, Expect: []string{
		"cause=failure-rate",
		"arm[a].first-rejected-request==21",
		"arm[b].first-rejected-request<=11",
		"arm[b].first-rejected-request<=5", // fails
		"arm[nope].opens>=1",               // fails: no such arm
	}})
	var ef *ExpectationsFailed
	if !errors.As(err, &ef) || ef.Failed != 2 || ef.Total != 6 {
		t.Fatalf("Run error %v, want *ExpectationsFailed with 2 of 6 failed", err)
	}
	if code := ef.ExitCode(); code != 1 {
		t.Errorf("ExitCode = %d, want 1", code)
	}
	rec, err := results.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !rec.Run.Complete {
		t.Errorf("a run whose expectations failed is still complete; got complete=false (%s)", rec.Run.Reason)
	}
	got := map[string]string{}
	for _, e := range rec.Run.Expectations {
		got[e.Expr+"@"+e.Arm] = fmt.Sprintf("%v %s %s", e.OK, e.Got, e.Message)
	}
	want := map[string]string{
		"cause=failure-rate@a":                "true failure-rate ",
		"cause=failure-rate@b":                "true failure-rate ",
		"arm[a].first-rejected-request==21@a": "true 21 ",
		"arm[b].first-rejected-request<=11@b": "true 11 ",
		"arm[b].first-rejected-request<=5@b":  "false 11 ",
		`arm[nope].opens>=1@nope`:             `false  no arm named "nope" (arms: a, b)`,
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("verdict %s = %q, want %q", k, got[k], w)
		}
	}
	checkJUnit(t, dir, 6, 2)
	summary, err := os.ReadFile(filepath.Join(dir, results.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, expr := range []string{"cause=failure-rate", "arm[b].first-rejected-request<=5", "arm[nope].opens>=1"} {
		if !strings.Contains(string(summary), expr) {
			t.Errorf("summary.md does not mention %s:\n%s", expr, summary)
		}
	}
}

func TestRunBadInput(t *testing.T) {
	tests := []struct {
		name   string
		opts   Options
		code   int
		wantIn string
	}{
		{"bad expectation", Options{Expect: []string{"opens>>1"}}, 2, `"opens>>1"`},
		{"speed with target", Options{Target: "http://127.0.0.1:1", Speed: 5, Arm: "a"}, 2, "--speed"},
		{"target without arm", Options{Target: "http://127.0.0.1:1"}, 2, "arms: a, b"},
		{"unknown arm", Options{Arm: "c"}, 2, `"c": no such arm`},
		// A usage error even when the target is unreachable: it is found before anything starts.
		{"unknown metrics", Options{Target: "http://127.0.0.1:1", Arm: "a", Metrics: "statsd", PGListen: "127.0.0.1:0"}, 2, `"statsd" is not one of`},
		{"prom-api without url", Options{Target: "http://127.0.0.1:1", Arm: "a", Metrics: "prom-api", PGListen: "127.0.0.1:0"}, 2, "--prom-api"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.opts
			o.Spec = smallSpec(t)
			o.Out = filepath.Join(t.TempDir(), "run")
			_, _, err := Run(context.Background(), o)
			var ec interface{ ExitCode() int }
			if !errors.As(err, &ec) || ec.ExitCode() != tc.code || !strings.Contains(err.Error(), tc.wantIn) {
				t.Errorf("Run error %v, want exit code %d containing %q", err, tc.code, tc.wantIn)
			}
		})
	}
}

// fakeTarget answers the reference flow (an order, then a payment that
// succeeds) and exposes an actuator listing the breakers named.
func fakeTarget(t *testing.T, breakers ...string) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/v1/orders", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"orderId":"o-1"}`))
	})
	mux.HandleFunc("POST /api/v1/payments", func(w http.ResponseWriter, _ *http.Request) {
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

func TestRunExternalTarget(t *testing.T) {
	feign := "PgPaymentClient#requestPayment(String,PaymentRequest)"
	tests := []struct {
		name     string
		breakers []string
		code     int
		wantIn   []string
	}{
		// The breaker never appears: exit 3 naming what was found instead.
		{"other breaker", []string{"inventory"}, 3, []string{feign, "found: inventory", "--breaker"}},
		{"no actuator", nil, 3, []string{feign, "found: no breaker at all"}},
		// The breaker is there and stays CLOSED (the fake never opens):
		// the run completes and opens>=1 fails.
		{"breaker never opens", []string{feign, "inventory"}, 1, []string{"1 of 1 expectations failed"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := fakeTarget(t, tc.breakers...)
			dir := filepath.Join(t.TempDir(), "run")
			_, _, err := Run(context.Background(), Options{Spec: smallSpec(t), Target: srv.URL, Arm: "b", Breaker: feign,
				PGListen: "127.0.0.1:0", Out: dir, PredictRuns: 20, Expect: []string{"opens>=1"}})
			var ec interface{ ExitCode() int }
			if !errors.As(err, &ec) || ec.ExitCode() != tc.code {
				t.Fatalf("Run error %v, want exit code %d", err, tc.code)
			}
			for _, w := range tc.wantIn {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			rec, err := results.Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			if len(rec.Run.Arms) != 1 || rec.Run.Arms[0].Name != "b" || len(rec.Requests) != 30 {
				t.Fatalf("arms %d, requests %d; want arm b with its 30 requests recorded", len(rec.Run.Arms), len(rec.Requests))
			}
			// cbprobe cannot set the user's service: the arm says which
			// settings it assumes (retry-max-attempts 2, retry-wait 0s).
			note := strings.Join(rec.Run.Arms[0].Notes, "\n")
			if !strings.Contains(note, "pg.retry-max-attempts=2") || !strings.Contains(note, "pg.retry-wait=0s") {
				t.Errorf("arm notes do not name the settings the user must apply:\n%s", note)
			}
			// A breaker cbprobe could not observe is not an infrastructure
			// abort any more: the run finishes, inconclusive, in every file.
			if tc.code == 3 && (rec.Run.Verdict != results.VerdictInconclusive || rec.Run.Expectations[0].OK || !rec.Run.Expectations[0].Inconclusive) {
				t.Errorf("unobserved breaker: verdict %q, expectations %+v; want inconclusive, opens>=1 neither held nor failed", rec.Run.Verdict, rec.Run.Expectations)
			}
		})
	}
}

func TestRunInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var once sync.Once
	spec, err := Named("window-type")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "run")
	// Cancel as soon as the first arm has sent requests: the progress
	// callback runs four times a second while an arm runs.
	run, gotDir, err := Run(ctx, Options{Spec: spec, Speed: 20, Out: dir, PredictRuns: 50,
		Progress: func(_ string, p results.Progress) {
			if p.Sent > 0 {
				once.Do(cancel)
			}
		}})
	if !errors.Is(err, context.Canceled) || gotDir != dir || run == nil {
		t.Fatalf("Run = %v, %q, %v; want the run so far, its directory and context.Canceled", run != nil, gotDir, err)
	}
	rec, err := results.Load(dir)
	if err != nil {
		t.Fatalf("results.Load of the partial run: %v", err)
	}
	if rec.Run.Complete || !rec.Run.Interrupted || rec.Run.Reason != "interrupted" {
		t.Errorf("complete=%v interrupted=%v reason=%q, want an interrupted partial run", rec.Run.Complete, rec.Run.Interrupted, rec.Run.Reason)
	}
	if len(rec.Run.Arms) != 1 || rec.Run.Arms[0].Name != "count-based" || rec.Run.Arms[0].Totals().Sent == 0 || len(rec.Requests) != rec.Run.Arms[0].Totals().Sent {
		t.Errorf("partial run: %d arms, %d request rows; want the first arm with what it sent", len(rec.Run.Arms), len(rec.Requests))
	}
	for _, f := range []string{results.SummaryFile, results.JUnitFile, results.HTMLFile} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("partial run lacks %s: %v", f, err)
		}
	}
}
