package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/cbprobe/cbprobe/attack"
	"github.com/cbprobe/cbprobe/demo"
	"github.com/cbprobe/cbprobe/pgsim"
	"github.com/cbprobe/cbprobe/pgsim/behavior"
	"github.com/cbprobe/cbprobe/springconf"
)

// These tests prove, through the real commands, what the field report could not
// see: with its configuration the breaker opens by slow-call rate, and its
// configuration has two traps lint names.
//
// Why the outcome is determined. The demo runs the reference setting (COUNT_BASED
// window of 20, minimum calls capped at 20, failure threshold 60 %, slow threshold
// 100 ms, slow-call-rate threshold 50 %, TimeLimiter 600 ms, 3 attempts). One user
// pays sequentially, so the embedded pgsim receives the gateway calls one at a
// time and draws the decision of its i-th call from behavior.NewRand(seed) in
// arrival order: the outcome and injected latency of every call are fixed by the
// seed, whatever the retries do. The breaker evaluates nothing before its 20th
// call, so the first OPEN is decided at call 20 by the first 20 decisions, which
// seededWindow recomputes here from the same stream. Timing enters in two places
// only, both bounded:
//   - a call's duration is measured on the demo's scaled clock (real time x speed)
//     from before the request to after the answer, so it is never shorter than the
//     injected latency: every success of a 100-500 ms (or 150-300 ms) gateway is
//     slow, deterministically (and no success of this seed's window is near the
//     threshold: the fastest takes 145 ms). An immediate error is slow only if its round trip
//     takes more than 100 ms / speed of real time; that can only raise the slow
//     count, never the failure count.
//   - a success is cut by the TimeLimiter (a failure, and slow) only if the
//     service's overhead on that call exceeds (600 ms - its latency) / speed of
//     real time. The seed keeps the slowest success of the window at 361 ms: 24 ms
//     of real time at speed 10 (reference gateway); in slow mode the slowest call
//     is 300 ms: 60 ms of real time at speed 5. The reference test tolerates such
//     timeouts anyway (up to 2 keep the failure rate at 55 % < 60 % and the cause
//     unchanged; its failure count check subtracts them); the slow-mode test,
//     whose point is a failure rate of exactly 0, runs at speed 5 for the margin.
//
// The two tests do not run in parallel: the root command's PersistentPreRunE sets
// the fatih/color package variable NoColor, a data race between two commands run
// at once in one process (one command per process in real use).
const (
	// watchDemoSeed seeds the gateway (and the retry's waits). With the default
	// gateway its first 20 decisions are 9 immediate errors and 11 successes of
	// 145-361 ms (checked by seededWindow below): at call 20 the failure rate is
	// 45 % < 60 % and the slow-call rate at least 55 % >= 50 %, the field report's
	// situation. predict (--sequential 40 --retry 3) puts the cause at
	// slow-call-rate in about 94 % of runs; for this seed it is certain.
	watchDemoSeed = 36
	// watchDemoDuration is how long each watch runs. It must see the first OPEN:
	// measured with -race, 0.8 s after the start at speed 10 (reference gateway)
	// and 1.0 s at speed 5 (slow mode); 2.5 s leaves room for a loaded machine.
	watchDemoDuration = "2500ms"
)

// demoWindow is what the seeded gateway decides for the breaker's first window.
type demoWindow struct {
	errors      int           // immediate errors among the first 20 calls
	maxSuccess  time.Duration // slowest success (injected latency, service time)
	minSuccess  time.Duration // fastest success
	successes   int           // successes among the first 20 calls
	windowCalls int           // 20, the reference window
}

// seededWindow replays the first 20 decisions pgsim draws for seed with b: the
// server calls b.Decide on behavior.NewRand(seed) once per payment call, in
// arrival order.
func seededWindow(b behavior.Behavior, seed int64) demoWindow {
	r := behavior.NewRand(seed)
	w := demoWindow{minSuccess: time.Hour, windowCalls: 20}
	for range w.windowCalls {
		d := b.Decide(r)
		switch d.Outcome {
		case behavior.OutcomeError:
			w.errors++
		case behavior.OutcomeSuccess:
			w.successes++
			w.maxSuccess = max(w.maxSuccess, d.Delay)
			w.minSuccess = min(w.minSuccess, d.Delay)
		}
	}
	return w
}

// startWatchDemo starts the demo with the reference configuration and an
// embedded gateway behaving as b, speed times faster than real time, on a free
// loopback port.
func startWatchDemo(t *testing.T, b behavior.Behavior, speed float64) *demo.Service {
	t.Helper()
	svc, err := demo.New(demo.Config{
		Speed:           speed,
		Seed:            watchDemoSeed,
		EmbeddedGateway: true,
		Gateway:         pgsim.Config{Behavior: b},
	}, nil)
	if err != nil {
		t.Fatalf("demo.New: %v", err)
	}
	if err := svc.Start(context.Background(), "127.0.0.1:0"); err != nil {
		t.Fatalf("demo start: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := svc.Close(ctx); err != nil {
			t.Errorf("demo close: %v", err)
		}
	})
	return svc
}

// watchEvidence is the evidence of a transition in watch --json; NaN is null.
type watchEvidence struct {
	ExceededEvents        []string `json:"exceededEvents"`
	ThresholdSource       string   `json:"thresholdSource"`
	FailureRate           *float64 `json:"failureRate"`
	SlowCallRate          *float64 `json:"slowCallRate"`
	FailureRateThreshold  *float64 `json:"failureRateThreshold"`
	SlowCallRateThreshold *float64 `json:"slowCallRateThreshold"`
	Buffered              *float64 `json:"buffered"`
	Failed                *float64 `json:"failed"`
	Slow                  *float64 `json:"slow"`
	TimeoutShare          *float64 `json:"timeoutShare"`
}

// watchTransition is a "transition" line of watch --json.
type watchTransition struct {
	Breaker struct {
		Breaker string `json:"breaker"`
	} `json:"breaker"`
	From       string         `json:"from"`
	To         string         `json:"to"`
	Cause      string         `json:"cause"`
	Reason     string         `json:"reason"`
	Evidence   *watchEvidence `json:"evidence"`
	DetectedAt time.Time      `json:"detectedAt"`
}

// watchDuringPayments runs `cbprobe watch --actuator URL --json` while one user
// sends 40 order+payment requests to the demo, and returns the watch's
// transitions and the requests' results. The watch ends by its --duration.
func watchDuringPayments(t *testing.T, svc *demo.Service) ([]watchTransition, []attack.Result) {
	t.Helper()
	type watchRun struct {
		out, errOut string
		code        int
	}
	done := make(chan watchRun, 1)
	start := time.Now()
	go func() {
		out, errOut, code := runWatchCLI(t, "watch", "--actuator", svc.URL(), "--json",
			"--duration", watchDemoDuration, "--interval", "50ms")
		done <- watchRun{out, errOut, code}
	}()
	var results []attack.Result
	sum, err := attack.Run(context.Background(), attack.Config{Target: svc.URL(), Users: 1, Requests: 40, RunID: "watchdemo"},
		func(r attack.Result) { results = append(results, r) })
	if err != nil {
		t.Fatalf("attack: %v", err)
	}
	attackTime := time.Since(start)
	w := <-done
	if w.code != 0 {
		t.Fatalf("watch exit %d, stderr:\n%s", w.code, w.errOut)
	}
	if len(results) != 40 || sum.Phases[0].Sent != 40 {
		t.Fatalf("attack sent %d requests (%d results), want 40", sum.Phases[0].Sent, len(results))
	}
	var ts []watchTransition
	sawSummary := false
	for _, line := range strings.Split(strings.TrimSpace(w.out), "\n") {
		var rec struct {
			Type string          `json:"type"`
			Data json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("watch --json wrote a line that is not JSON: %q", line)
		}
		switch rec.Type {
		case "transition":
			var tr watchTransition
			if err := json.Unmarshal(rec.Data, &tr); err != nil {
				t.Fatalf("transition %s: %v", rec.Data, err)
			}
			ts = append(ts, tr)
			t.Logf("%s->%s detected %v after the start (attack took %v)", tr.From, tr.To, tr.DetectedAt.Sub(start).Round(time.Millisecond), attackTime.Round(time.Millisecond))
		case "summary":
			sawSummary = true
		}
	}
	if !sawSummary {
		t.Errorf("no summary line; output:\n%s", w.out)
	}
	return ts, results
}

// firstOpen returns the first CLOSED->OPEN transition of the reference breaker.
func firstOpen(t *testing.T, ts []watchTransition) watchTransition {
	t.Helper()
	for _, tr := range ts {
		if tr.From == "CLOSED" && tr.To == "OPEN" {
			if tr.Breaker.Breaker != "PgPaymentClient#requestPayment(String,PaymentRequest)" {
				t.Errorf("first OPEN of breaker %q, want the Feign-named payment breaker", tr.Breaker.Breaker)
			}
			if tr.Evidence == nil {
				t.Fatalf("first OPEN without evidence: %+v", tr)
			}
			return tr
		}
	}
	t.Fatalf("no CLOSED->OPEN among %d transitions: %+v", len(ts), ts)
	return watchTransition{}
}

// num reads an evidence number, failing when it is unknown (null).
func num(t *testing.T, name string, v *float64) float64 {
	t.Helper()
	if v == nil {
		t.Fatalf("evidence %s is null (unknown)", name)
	}
	return *v
}

// countCircuitOpen counts the requests the open breaker refused (503 CIRCUIT_OPEN).
func countCircuitOpen(rs []attack.Result) int {
	n := 0
	for _, r := range rs {
		if r.Status == 503 && strings.Contains(string(r.Body), demo.CodeCircuitOpen) {
			n++
		}
	}
	return n
}

func TestWatchDemoReferenceOpensBySlowCallRate(t *testing.T) {
	gw := behavior.DefaultBehavior() // 40 % immediate errors, successes after 100-500 ms
	win := seededWindow(gw, watchDemoSeed)
	// Guard the premise: if pgsim's stream ever changes, pick another seed.
	if win.errors != 9 || win.successes != 11 || win.maxSuccess > 400*time.Millisecond || win.minSuccess <= 100*time.Millisecond {
		t.Fatalf("seed %d no longer gives the window this test relies on: %+v", watchDemoSeed, win)
	}
	svc := startWatchDemo(t, gw, 10)
	ts, results := watchDuringPayments(t, svc)

	open := firstOpen(t, ts)
	ev := open.Evidence
	if open.Cause != "slow-call-rate" {
		t.Errorf("first OPEN cause %q (%s), want slow-call-rate", open.Cause, open.Reason)
	}
	// The breaker publishes SLOW_CALL_RATE_EXCEEDED (and not FAILURE_RATE_EXCEEDED)
	// before CLOSED_TO_OPEN; the watch reads it from /actuator/circuitbreakerevents.
	if strings.Join(ev.ExceededEvents, ",") != "SLOW_CALL_RATE_EXCEEDED" {
		t.Errorf("exceeded events %v, want [SLOW_CALL_RATE_EXCEEDED]", ev.ExceededEvents)
	}
	fr, sr := num(t, "failureRate", ev.FailureRate), num(t, "slowCallRate", ev.SlowCallRate)
	frt, srt := num(t, "failureRateThreshold", ev.FailureRateThreshold), num(t, "slowCallRateThreshold", ev.SlowCallRateThreshold)
	buffered, failed, slow := num(t, "buffered", ev.Buffered), num(t, "failed", ev.Failed), num(t, "slow", ev.Slow)
	if frt != 60 || srt != 50 || ev.ThresholdSource != "actuator" {
		t.Errorf("thresholds %v/%v from %q, want 60/50 from the actuator", frt, srt, ev.ThresholdSource)
	}
	if !(fr < 60) || !(sr >= 50) {
		t.Errorf("failure rate %v%% (want < 60), slow-call rate %v%% (want >= 50)", fr, sr)
	}
	// The trip happens at call 20 exactly: nothing is evaluated before, and at 20
	// the 11 slow successes already make 55 %. The immediate errors in the window
	// are the seed's 9; a success cut by the TimeLimiter (see the top comment; not
	// expected) would add a failure that is a timeout, so the non-timeout failures
	// are compared: failed x (1 - timeoutShare) = 9.
	if buffered != 20 {
		t.Errorf("window of the first OPEN holds %v calls, want 20", buffered)
	}
	timeouts := 0.0
	if ev.TimeoutShare != nil {
		timeouts = failed * *ev.TimeoutShare
	}
	// The share is counted over the window's ERROR events and the failures come
	// from the sample, which can lag by a call under load (seen: 1 timeout in 9
	// ERROR events, 10 failures in the sample): rounded, it still names 9.
	if got := math.Round(failed - timeouts); got != 9 {
		t.Errorf("failed %v with %v timeouts: %v immediate errors, want the seed's 9", failed, timeouts, got)
	}
	if fr != failed*100/buffered || sr != slow*100/buffered {
		t.Errorf("rates %v%%/%v%% do not match counts %v failed, %v slow of %v", fr, sr, failed, slow, buffered)
	}
	// Every success is slow (measured >= injected latency > 100 ms); an immediate
	// error may also be slow under load, which only adds.
	if slow < float64(win.successes) {
		t.Errorf("slow %v, want at least the %d slow successes", slow, win.successes)
	}
	if n := countCircuitOpen(results); n == 0 {
		t.Errorf("no request was refused with %s after the OPEN", demo.CodeCircuitOpen)
	}
	t.Logf("first OPEN: %s (%s)", open.Cause, open.Reason)
}

func TestWatchDemoSlowModeOpensBySlowCallRate(t *testing.T) {
	gw := behavior.DefaultBehavior()
	gw.Slow = true // no errors; every call answers after 150-300 ms
	win := seededWindow(gw, watchDemoSeed)
	if win.errors != 0 || win.successes != 20 || win.maxSuccess > 300*time.Millisecond || win.minSuccess < 150*time.Millisecond {
		t.Fatalf("slow mode window for seed %d: %+v, want 20 successes of 150-300 ms", watchDemoSeed, win)
	}
	svc := startWatchDemo(t, gw, 5)
	ts, results := watchDuringPayments(t, svc)

	open := firstOpen(t, ts)
	ev := open.Evidence
	if open.Cause != "slow-call-rate" {
		t.Errorf("first OPEN cause %q (%s), want slow-call-rate", open.Cause, open.Reason)
	}
	if strings.Join(ev.ExceededEvents, ",") != "SLOW_CALL_RATE_EXCEEDED" {
		t.Errorf("exceeded events %v, want [SLOW_CALL_RATE_EXCEEDED]", ev.ExceededEvents)
	}
	// No call fails: the gateway sends no errors, and a timeout would need 60 ms of
	// real time (300 ms of service time at speed 5) of overhead on one call, so the
	// failure rate is exactly 0 and all 20 calls of the window are slow.
	fr, sr := num(t, "failureRate", ev.FailureRate), num(t, "slowCallRate", ev.SlowCallRate)
	buffered, failed, slow := num(t, "buffered", ev.Buffered), num(t, "failed", ev.Failed), num(t, "slow", ev.Slow)
	if fr != 0 || failed != 0 {
		t.Errorf("failure rate %v%% with %v failed calls, want 0", fr, failed)
	}
	if sr != 100 || slow != 20 || buffered != 20 {
		t.Errorf("slow-call rate %v%% (%v slow of %v), want 100%% (20 of 20)", sr, slow, buffered)
	}
	if n := countCircuitOpen(results); n == 0 {
		t.Errorf("no request was refused with %s after the OPEN", demo.CodeCircuitOpen)
	}
	t.Logf("first OPEN: %s (%s)", open.Cause, open.Reason)
}

func TestLintFieldReportWithInstance(t *testing.T) {
	const file = "testdata/lint/field-report-with-instance.yml"
	// The breaker is Spring Cloud OpenFeign's, which the file cannot name: --name says it.
	out, errOut, code := runWatchCLI(t, "lint", file, "--json", "--name", springconf.DefaultBreakerName, "--error-rate", "0.4", "--latency", "100ms-500ms")
	if code != 1 {
		t.Fatalf("lint exit %d, want 1 (error findings); stderr: %s", code, errOut)
	}
	var findings []struct{ ID, Severity, Key, Message string }
	if err := json.Unmarshal([]byte(out), &findings); err != nil {
		t.Fatalf("lint --json: %v\n%s", err, out)
	}
	find := func(id string) (f struct{ ID, Severity, Key, Message string }, ok bool) {
		for _, f := range findings {
			if f.ID == id {
				return f, true
			}
		}
		return f, false
	}
	// (a) The pg-simulator instance never applies to the Feign-named breaker.
	inst, ok := find("instance-name-never-matches")
	if !ok {
		t.Fatalf("no instance-name-never-matches finding in %+v", findings)
	}
	if inst.Severity != "error" || inst.Key != "resilience4j.circuitbreaker.instances.pg-simulator" ||
		!strings.Contains(inst.Message, "PgPaymentClient#requestPayment(String,PaymentRequest)") {
		t.Errorf("instance finding %+v: want an error on the pg-simulator key naming the Feign breaker", inst)
	}
	// (b) With 40 % failing calls and every success slower than 100 ms, no
	// half-open trial of 5 calls stays under both thresholds. The message names
	// the 100 ms of configs.default, not the instance's 1s: the instance is ignored.
	ho, ok := find("half-open-trial-cannot-pass")
	if !ok {
		t.Fatalf("no half-open-trial-cannot-pass finding in %+v", findings)
	}
	want := fmt.Sprintf("slow: above %v", 100*time.Millisecond)
	if ho.Severity != "error" || ho.Key != "resilience4j.circuitbreaker.configs.default.permitted-number-of-calls-in-half-open-state" ||
		!strings.Contains(ho.Message, want) {
		t.Errorf("half-open finding %+v: want an error on configs.default's permitted calls, %q", ho, want)
	}
}
