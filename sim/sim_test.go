package sim

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/cbprobe/cbprobe/attack"
	"github.com/cbprobe/cbprobe/breaker"
	"github.com/cbprobe/cbprobe/pgsim/behavior"
)

func predict(t *testing.T, a Arm, runs int, seed uint64) Prediction {
	t.Helper()
	p, err := Predict(context.Background(), a, runs, seed)
	if err != nil {
		t.Fatalf("Predict: %v", err)
	}
	return p
}

// neverOpens makes the breaker unable to compute rates: a TIME_BASED window's
// minimum number of calls is not capped, so 1e9 calls are never reached.
func neverOpens(a Arm) Arm {
	a.Breaker.SlidingWindowType = breaker.TimeBased
	a.Breaker.SlidingWindowSize = 10
	a.Breaker.MinimumNumberOfCalls = 1_000_000_000
	return a
}

func TestQueueOrdersByTimeThenSequence(t *testing.T) {
	var q queue
	ats := []time.Duration{5, 1, 3, 1, 5, 0, 3}
	for i, at := range ats {
		q.push(event{at: at, a: int32(i)})
	}
	var prev *event
	for q.len() > 0 {
		e, _ := q.pop()
		if prev != nil && (e.at < prev.at || e.at == prev.at && e.seq < prev.seq) {
			t.Fatalf("popped %+v after %+v", e, *prev)
		}
		p := e
		prev = &p
	}
	if _, ok := q.pop(); ok {
		t.Fatal("pop on an empty queue returned an event")
	}
}

// TestAttemptsMatchClosedForm: with a breaker that never opens, gateway attempts
// per request must agree with (1 − p^n)/(1 − p). Attempts per request X has
// P(X = k) = p^(k−1)(1 − p) for k < n and P(X = n) = p^(n−1); over R independent
// requests the mean's standard error is sd(X)/√R. The tolerance is 4 of them.
func TestAttemptsMatchClosedForm(t *testing.T) {
	slowGW := behavior.DefaultBehavior()
	slowGW.ErrorRate = 0.2
	slowGW.Latency = behavior.Uniform{Min: 100 * time.Millisecond, Max: 900 * time.Millisecond}
	cases := []struct {
		name     string
		gw       behavior.Behavior
		attempts int
		wantP    float64 // per-attempt retryable failure probability, by hand
	}{
		{"reference 3 attempts", behavior.DefaultBehavior(), 3, 0.4},
		{"reference 1 attempt", behavior.DefaultBehavior(), 1, 0.4},
		{"reference 5 attempts", behavior.DefaultBehavior(), 5, 0.4},
		// 20% errors plus the 80% successes slower than 600ms−1ms overhead:
		// P(L > 599ms) for L uniform on [100ms, 900ms] in ns = (900ms−599ms)/(800ms+1ns).
		{"timeouts count as failures", slowGW, 4, 0.2 + 0.8*float64(301*time.Millisecond)/float64(800*time.Millisecond+1)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := neverOpens(referenceArm(tc.attempts))
			a.Gateway = tc.gw
			p := predict(t, a, 400, 7)
			ap := p.AttemptsPerRequest
			if math.Abs(ap.P-tc.wantP) > 1e-9 {
				t.Fatalf("p = %v, want %v", ap.P, tc.wantP)
			}
			if want := ClosedFormAttempts(tc.wantP, tc.attempts); math.Abs(ap.ClosedForm-want) > 1e-12 {
				t.Fatalf("closed form %v, want %v", ap.ClosedForm, want)
			}
			if p.FirstRejectedRequest.N != 0 {
				t.Fatalf("breaker rejected in %d runs; it must never open", p.FirstRejectedRequest.N)
			}
			requests := float64(p.Runs * p.Requests)
			var m1, m2 float64
			for k := 1; k <= tc.attempts; k++ {
				pk := math.Pow(tc.wantP, float64(k-1))
				if k < tc.attempts {
					pk *= 1 - tc.wantP
				}
				m1 += pk * float64(k)
				m2 += pk * float64(k*k)
			}
			tol := 4 * math.Sqrt(m2-m1*m1) / math.Sqrt(requests)
			if d := math.Abs(ap.Mean - ap.ClosedForm); d > tol || tc.attempts == 1 && ap.Mean != 1 {
				t.Fatalf("attempts per request %.4f, closed form %.4f: |diff| %.4f > tolerance %.4f", ap.Mean, ap.ClosedForm, d, tol)
			}
		})
	}
}

// TestCountWindowFillsAtRequest: a gateway that always fails makes every
// request use all n attempts, so the COUNT_BASED window of 20 fills (and opens
// at 100 % failures) during request ceil(20/n), in every run. The rejection comes
// at the next attempt: in the same request when attempts are left, else the next one.
func TestCountWindowFillsAtRequest(t *testing.T) {
	for _, n := range []int{1, 2, 3, 4, 6} {
		t.Run("attempts "+string(rune('0'+n)), func(t *testing.T) {
			a := referenceArm(n)
			a.Gateway.ErrorRate = 1
			p := predict(t, a, 200, 3)
			open := (20 + n - 1) / n
			rej := open
			if 20%n == 0 {
				rej = open + 1
			}
			b := p.FirstOpenRequest
			if b.Share != 1 || b.P5 != float64(open) || b.P95 != float64(open) {
				t.Fatalf("first open %+v, want request %d in every run", b, open)
			}
			if r := p.FirstRejectedRequest; r.P5 != float64(rej) || r.P95 != float64(rej) {
				t.Fatalf("first rejected %+v, want request %d", r, rej)
			}
			if p.OpenCauses[breaker.CauseFailureRate] != 1 {
				t.Fatalf("open causes %v, want failure-rate only", p.OpenCauses)
			}
		})
	}
}

// TestFirstOpenAtTwentiethCall: with 1 attempt the window is full at request 20,
// and it opens right there unless exactly 9 of the 20 succeeded (then the
// failure rate is 55 % < 60 % and the slow-call rate 45 % < 50 %):
// P = 1 − C(20,9)·0.6^9·0.4^11. Tolerance: 4 binomial standard errors over the runs.
func TestFirstOpenAtTwentiethCall(t *testing.T) {
	const runs = 2000
	a := referenceArm(1)
	p := predict(t, a, runs, 11)
	want := 1 - 167960*math.Pow(0.6, 9)*math.Pow(0.4, 11)
	got := 0
	for i := range runs {
		r, err := Run(a, RunSeed(11, i))
		if err != nil {
			t.Fatal(err)
		}
		if r.FirstOpenRequest == 20 {
			got++
		}
	}
	share := float64(got) / runs
	tol := 4 * math.Sqrt(want*(1-want)/runs)
	if math.Abs(share-want) > tol {
		t.Fatalf("opened at request 20 in %.4f of runs, want %.4f ± %.4f", share, want, tol)
	}
	if p.FirstOpenRequest.P50 != 20 || p.FirstRejectedRequest.P50 != 21 {
		t.Fatalf("median first open %v, first rejected %v; want 20 and 21", p.FirstOpenRequest.P50, p.FirstRejectedRequest.P50)
	}
}

// TestReferenceResults reproduces the field report's retry experiment (DESIGN.md).
func TestReferenceResults(t *testing.T) {
	cases := []struct {
		name        string
		attempts    int
		lo, hi      float64
		minSlowRate float64
	}{
		{"retry 3: first rejected around the 14th", 3, 13, 15, 0.8},
		{"retry 1: first rejected around the 21st", 1, 20, 22, 0.8},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := predict(t, referenceArm(tc.attempts), 2000, 1)
			if m := p.FirstRejectedRequest.P50; m < tc.lo || m > tc.hi {
				t.Errorf("first rejected p50 = %v, want in [%v, %v]", m, tc.lo, tc.hi)
			}
			if s := p.OpenCauses[breaker.CauseSlowCallRate]; s <= tc.minSlowRate {
				t.Errorf("slow-call-rate share of first OPENs = %v, want > %v", s, tc.minSlowRate)
			}
			if p.HalfOpenPassProbability != 0 {
				t.Errorf("half-open pass probability = %v, want 0", p.HalfOpenPassProbability)
			}
			if p.MedianRun.FirstOpenRequest != int(p.FirstOpenRequest.P50) {
				t.Errorf("median run opened at request %d, median is %v", p.MedianRun.FirstOpenRequest, p.FirstOpenRequest.P50)
			}
		})
	}
}

// TestWindowTypeMechanisms checks the two window types on the field report's
// traffic: both open in phase 1 (TIME_BASED reaches its 100 calls inside the 10 s
// window at 15 req/s × 1.56 attempts), and in phase 3 neither can close.
func TestWindowTypeMechanisms(t *testing.T) {
	count := predict(t, windowTypeArm(breaker.CountBased), 500, 1)
	tb := predict(t, windowTypeArm(breaker.TimeBased), 500, 1)
	if count.FirstOpenRequest.P50 > 20 {
		t.Errorf("COUNT_BASED first open p50 %v: the window of 20 fills within about 13 requests", count.FirstOpenRequest.P50)
	}
	if tb.FirstOpenRequest.P50 < 50 {
		t.Errorf("TIME_BASED first open p50 %v: 100 calls need about 64 requests", tb.FirstOpenRequest.P50)
	}
	for _, p := range []Prediction{count, tb} {
		ph3 := p.Phases[2]
		if ph3.SuccessShare > 0.2 || ph3.RejectedShare < 0.75 {
			t.Errorf("phase 3 success %.3f rejected %.3f: the half-open trial cannot pass", ph3.SuccessShare, ph3.RejectedShare)
		}
	}
	// With one attempt per request TIME_BASED gets 75 calls in phase 1: below 100, never opens.
	one := windowTypeArm(breaker.TimeBased)
	one.Retry.MaxAttempts = 1
	p := predict(t, one, 200, 1)
	if p.FirstOpenRequest.N != 0 || p.RejectedShare != 0 {
		t.Errorf("TIME_BASED with 1 attempt opened in %d runs (rejected %.3f); 75 calls cannot reach 100", p.FirstOpenRequest.N, p.RejectedShare)
	}
}

// TestOutcomeProbabilitiesByHand checks the per-attempt picture against hand
// calculations from the uniform distribution's inclusive nanosecond bounds.
func TestOutcomeProbabilitiesByHand(t *testing.T) {
	cfg := referenceConfig()
	rc := breaker.DefaultRetryConfig()
	ms := time.Millisecond
	u := func(a, b time.Duration) behavior.Distribution { return behavior.Uniform{Min: a, Max: b} }
	frac := func(hi, lo, span time.Duration) float64 { return float64(hi-lo+1) / float64(span+1) } // P(L ∈ [lo,hi])
	cases := []struct {
		name    string
		gw      behavior.Behavior
		timeout time.Duration
		want    breaker.CallOutcomeProbabilities
		timeouT float64
	}{
		{"reference", behavior.DefaultBehavior(), 600 * ms, breaker.CallOutcomeProbabilities{SlowSuccess: 0.6, FastFailure: 0.4}, 0},
		{"slow mode under 1s timeout", behavior.Behavior{Slow: true, SlowLatency: u(150*ms, 300*ms), Latency: u(0, 0)}, time.Second,
			breaker.CallOutcomeProbabilities{SlowSuccess: 1}, 0},
		{"after-latency errors, some fast", behavior.Behavior{ErrorRate: 0.5, ErrorTiming: behavior.AfterLatency, Latency: u(50*ms, 150*ms), SlowLatency: u(0, 0)}, 600 * ms,
			breaker.CallOutcomeProbabilities{
				FastSuccess: 0.5 * frac(99*ms, 50*ms, 100*ms), SlowSuccess: 0.5 * (1 - frac(99*ms, 50*ms, 100*ms)),
				FastFailure: 0.5 * frac(99*ms, 50*ms, 100*ms), SlowFailure: 0.5 * (1 - frac(99*ms, 50*ms, 100*ms))}, 0},
		{"timeouts are slow failures", behavior.Behavior{Latency: u(100*ms, 900*ms), SlowLatency: u(0, 0)}, 600 * ms,
			breaker.CallOutcomeProbabilities{SlowSuccess: frac(599*ms, 100*ms, 800*ms), SlowFailure: 1 - frac(599*ms, 100*ms, 800*ms)}, 1 - frac(599*ms, 100*ms, 800*ms)},
		{"hang held past the timeout", behavior.Behavior{HangRate: 1, HangMax: 30 * time.Second, Latency: u(0, 0), SlowLatency: u(0, 0)}, 600 * ms,
			breaker.CallOutcomeProbabilities{SlowFailure: 1}, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := OutcomeProbabilities(tc.gw, cfg, rc, tc.timeout, ms)
			g, w := got.Call, tc.want
			for _, d := range [][2]float64{{g.FastSuccess, w.FastSuccess}, {g.SlowSuccess, w.SlowSuccess}, {g.FastFailure, w.FastFailure}, {g.SlowFailure, w.SlowFailure}, {got.Timeout, tc.timeouT}} {
				if math.Abs(d[0]-d[1]) > 1e-12 {
					t.Fatalf("got %+v (timeout %v), want %+v (timeout %v)", g, got.Timeout, w, tc.timeouT)
				}
			}
			if !got.Exact {
				t.Fatal("uniform latencies must give exact probabilities")
			}
		})
	}
}

// TestHalfOpenPassProbability compares the breaker's exact formula for sim's
// per-attempt probabilities with (a) a brute-force enumeration of the 4^5
// outcome sequences of the trial calls in float32 arithmetic and (b) real
// HALF_OPEN trials of breaker.CircuitBreaker fed by behavior.Decide, within 4
// binomial standard errors.
func TestHalfOpenPassProbability(t *testing.T) {
	cfg := referenceConfig()
	gw := behavior.Behavior{ErrorRate: 0.3, Latency: behavior.Uniform{Min: 50 * time.Millisecond, Max: 150 * time.Millisecond}, SlowLatency: behavior.DefaultSlowLatency()}
	overhead, timeout := time.Millisecond, 600*time.Millisecond
	pr := OutcomeProbabilities(gw, cfg, breaker.DefaultRetryConfig(), timeout, overhead)
	exact := breaker.HalfOpenPassProbability(cfg, pr.Call)

	probs := []float64{pr.Call.FastSuccess, pr.Call.SlowSuccess, pr.Call.FastFailure, pr.Call.SlowFailure}
	m := cfg.PermittedNumberOfCallsInHalfOpenState
	enum := 0.0
	for code := 0; code < 1<<(2*m); code++ {
		prob, failed, slow := 1.0, 0, 0
		for k := range m {
			o := code >> (2 * k) & 3
			prob *= probs[o]
			if o >= 2 {
				failed++
			}
			if o == 1 || o == 3 {
				slow++
			}
		}
		fr := float32(float32(failed)*100) / float32(m)
		sr := float32(float32(slow)*100) / float32(m)
		if fr < cfg.FailureRateThreshold && sr < cfg.SlowCallRateThreshold {
			enum += prob
		}
	}
	if math.Abs(exact-enum) > 1e-12 || exact == 0 {
		t.Fatalf("HalfOpenPassProbability %v, enumeration %v", exact, enum)
	}

	const trials = 4000
	r := rand.New(rand.NewPCG(5, 5))
	closed := 0
	for range trials {
		clock := breaker.NewVirtualClock(time.Unix(epochSeconds, 0))
		cb, err := breaker.New("t", cfg, breaker.WithClock(clock))
		if err != nil {
			t.Fatal(err)
		}
		if err := cb.TransitionTo(breaker.StateOpen); err != nil {
			t.Fatal(err)
		}
		if err := cb.TransitionTo(breaker.StateHalfOpen); err != nil {
			t.Fatal(err)
		}
		for range m {
			if !cb.TryAcquirePermission() {
				t.Fatal("half-open refused a trial call")
			}
			s := shape(gw.Decide(r), overhead, timeout)
			if s.failed {
				cb.OnError(s.elapsed, errors.New("x"))
			} else {
				cb.OnSuccess(s.elapsed)
			}
		}
		if cb.State() == breaker.StateClosed {
			closed++
		}
	}
	got := float64(closed) / trials
	if tol := 4 * math.Sqrt(exact*(1-exact)/trials); math.Abs(got-exact) > tol {
		t.Fatalf("simulated trials closed %.4f, exact %.4f ± %.4f", got, exact, tol)
	}
}

// TestReproducibleAcrossGOMAXPROCS: the same seed gives byte-identical JSON
// with one worker and with two.
func TestReproducibleAcrossGOMAXPROCS(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, a := range []Arm{referenceArm(3), windowTypeArm(breaker.TimeBased)} {
		var out [2][]byte
		for i, procs := range []int{1, 2} {
			runtime.GOMAXPROCS(procs)
			p := predict(t, a, 200, 42)
			b, err := json.Marshal(p)
			if err != nil {
				t.Fatal(err)
			}
			out[i] = b
		}
		if string(out[0]) != string(out[1]) {
			t.Fatalf("GOMAXPROCS 1 and 2 differ for arm %q", a.Name)
		}
		other := predict(t, a, 200, 43)
		if b, _ := json.Marshal(other); string(b) == string(out[0]) {
			t.Fatal("a different seed gave the same prediction")
		}
	}
}

// TestRunReplaysPredictRun: Run(arm, RunSeed(seed, i)) is run i of Predict.
func TestRunReplaysPredictRun(t *testing.T) {
	a := referenceArm(3)
	p := predict(t, a, 50, 9)
	r, err := Run(a, RunSeed(9, p.MedianRunIndex))
	if err != nil {
		t.Fatal(err)
	}
	if r.FirstOpenRequest != p.MedianRun.FirstOpenRequest || len(r.RequestLog) != 40 || r.GatewayAttempts != p.MedianRun.GatewayAttempts {
		t.Fatalf("replay %+v differs from the median run %+v", r, p.MedianRun)
	}
	// Sequential requests never overlap, and request numbers follow send order.
	for i := 1; i < len(r.RequestLog); i++ {
		prev, cur := r.RequestLog[i-1], r.RequestLog[i]
		if cur.Seq != i+1 || cur.Sent < prev.Ended {
			t.Fatalf("request %d sent at %v before request %d ended at %v", cur.Seq, cur.Sent, prev.Seq, prev.Ended)
		}
	}
}

// TestOpenModelArrivals: arrivals come at phase start + i/rate, Planned per phase,
// and requests overlap in virtual time.
func TestOpenModelArrivals(t *testing.T) {
	a := windowTypeArm(breaker.CountBased)
	r, err := Run(a, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.RequestLog) != 115 {
		t.Fatalf("%d requests, want 75 + 40", len(r.RequestLog))
	}
	for i, q := range r.RequestLog {
		want := time.Duration(float64(i) * float64(time.Second) / 15)
		if i >= 75 {
			want = 20*time.Second + time.Duration(float64(i-75)*float64(time.Second)/5)
		}
		if q.Sent != want {
			t.Fatalf("request %d sent at %v, want %v", q.Seq, q.Sent, want)
		}
	}
	overlap := false
	for i := 1; i < 75; i++ {
		overlap = overlap || r.RequestLog[i].Sent < r.RequestLog[i-1].Ended
	}
	if !overlap {
		t.Fatal("no two phase-1 requests overlapped: calls must run concurrently in virtual time")
	}
}

func TestRetryOnRejectionSpendsAttempts(t *testing.T) {
	a := referenceArm(3)
	a.Gateway.ErrorRate = 1
	a.Retry.WaitDuration = 0
	a.RetryOnRejection = true
	r, err := Run(a, 1)
	if err != nil {
		t.Fatal(err)
	}
	// Requests after the first rejection make 3 attempts each, all refused.
	last := r.RequestLog[len(r.RequestLog)-1]
	if last.Rejections != 3 || last.Status != StatusRejected {
		t.Fatalf("last request %+v: want 3 rejected attempts", last)
	}
}

func TestArmValidate(t *testing.T) {
	good := referenceArm(3)
	cases := []struct {
		name  string
		edit  func(a *Arm)
		field string
	}{
		{"breaker config", func(a *Arm) { a.Breaker.FailureRateThreshold = 0 }, "Breaker"},
		{"negative timeout", func(a *Arm) { a.TimeLimiter = &breaker.TimeLimiterConfig{TimeoutDuration: -1} }, "TimeLimiter.TimeoutDuration"},
		{"retry attempts", func(a *Arm) { a.Retry.MaxAttempts = 0 }, "Retry"},
		{"error rate above 1", func(a *Arm) { a.Gateway.ErrorRate = 1.5 }, "Gateway"},
		{"phase gateways length", func(a *Arm) { a.PhaseGateways = []behavior.Behavior{behavior.DefaultBehavior()} }, "PhaseGateways"},
		{"negative overhead", func(a *Arm) { a.CallOverhead = -time.Millisecond }, "CallOverhead"},
		{"no requests per user", func(a *Arm) { a.RequestsPerUser = 0 }, "RequestsPerUser"},
		{"no traffic", func(a *Arm) { a.Users = 0 }, "Phases"},
		{"negative rate", func(a *Arm) { a.Users = 0; a.Phases = []attack.Phase{{Rate: -1, Duration: time.Second}} }, "Phases[0].Rate"},
		{"zero duration", func(a *Arm) { a.Users = 0; a.Phases = []attack.Phase{{Rate: 1}} }, "Phases[0].Duration"},
	}
	if err := good.Validate(); err != nil {
		t.Fatalf("reference arm: %v", err)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := referenceArm(3)
			tc.edit(&a)
			err := a.Validate()
			var ae *ArmError
			if !errors.As(err, &ae) || ae.Field != tc.field || ae.ExitCode() != 2 {
				t.Fatalf("Validate() = %v, want an *ArmError for %s", err, tc.field)
			}
			if _, err := Predict(context.Background(), a, 1, 1); !errors.As(err, &ae) {
				t.Fatalf("Predict accepted the bad arm: %v", err)
			}
		})
	}
	if _, err := Predict(context.Background(), good, 0, 1); err == nil {
		t.Fatal("Predict accepted 0 runs")
	}
}

func TestPredictCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Predict(ctx, referenceArm(3), 1000, 1); !errors.Is(err, context.Canceled) {
		t.Fatalf("Predict on a cancelled context = %v, want context.Canceled", err)
	}
}

func TestBand(t *testing.T) {
	b := newBand([]float64{5, 1, 4, 2, 3, 6, 7, 8, 9, 10}, 20)
	if b.P5 != 1 || b.P50 != 5 || b.P95 != 10 || b.Mean != 5.5 || b.N != 10 || b.Share != 0.5 {
		t.Fatalf("band %+v", b)
	}
	if !b.Contains(3) || b.Contains(11) || (Band{}).Contains(0) {
		t.Fatal("Contains")
	}
}

// TestStartOpen: a breaker left OPEN by an earlier run starts a HALF_OPEN trial
// at the first request; with the reference gateway the trial cannot pass, so
// the breaker reopens at once and phase 1 is nearly all rejected.
func TestStartOpen(t *testing.T) {
	a := windowTypeArm(breaker.CountBased)
	a.StartOpen = true
	r, err := Run(a, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Transitions) < 2 || r.Transitions[0].Kind != "OPEN_TO_HALF_OPEN" || r.Transitions[0].Request != 1 || r.Transitions[1].Kind != "HALF_OPEN_TO_OPEN" {
		t.Fatalf("transitions %+v: want OPEN_TO_HALF_OPEN at request 1, then HALF_OPEN_TO_OPEN", r.Transitions)
	}
	if ph := r.Phases[0]; ph.Rejected < 65 {
		t.Fatalf("phase 1 %+v: want nearly all 75 rejected", ph)
	}
}

// TestPhaseGateways: the gateway fails every call in phase 1 (the breaker opens)
// and answers every call in 10 ms in phase 2, so the HALF_OPEN trial 10 s later
// passes and the breaker closes again.
func TestPhaseGateways(t *testing.T) {
	a := windowTypeArm(breaker.CountBased)
	a.Phases = []attack.Phase{{Name: "bad", Rate: 10, Duration: 2 * time.Second}, {Name: "good", Rate: 10, Duration: 15 * time.Second}}
	bad, good := behavior.DefaultBehavior(), behavior.DefaultBehavior()
	bad.ErrorRate = 1
	good.ErrorRate, good.Latency = 0, behavior.Fixed{D: 10 * time.Millisecond}
	a.PhaseGateways = []behavior.Behavior{bad, good}
	r, err := Run(a, 3)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, tr := range r.Transitions {
		kinds = append(kinds, tr.Kind)
	}
	want := []string{"CLOSED_TO_OPEN", "OPEN_TO_HALF_OPEN", "HALF_OPEN_TO_CLOSED"}
	if len(kinds) != 3 || kinds[0] != want[0] || kinds[1] != want[1] || kinds[2] != want[2] {
		t.Fatalf("transitions %v, want %v", kinds, want)
	}
	if r.Transitions[0].Cause != breaker.CauseFailureRate {
		t.Fatalf("first OPEN cause %q, want failure-rate", r.Transitions[0].Cause)
	}
	last := r.RequestLog[len(r.RequestLog)-1]
	if last.Status != StatusSuccess {
		t.Fatalf("last request %+v: the breaker closed, it should succeed", last)
	}
}

// TestCDFMatchesSampling: the closed-form CDFs agree with the distributions'
// own samplers within 4 binomial standard errors of 200,000 draws.
func TestCDFMatchesSampling(t *testing.T) {
	ms := time.Millisecond
	cases := []struct {
		name string
		d    behavior.Distribution
		x    time.Duration
	}{
		{"uniform", behavior.Uniform{Min: 100 * ms, Max: 500 * ms}, 230 * ms},
		{"normal", behavior.Normal{Mean: 200 * ms, SD: 50 * ms}, 240 * ms},
		{"normal truncated at 0", behavior.Normal{Mean: 10 * ms, SD: 50 * ms}, 0},
		{"lognormal", behavior.LogNormal{Median: 200 * ms, P99: time.Second}, 600 * ms},
		{"list", behavior.Empirical{Values: []time.Duration{100 * ms, 150 * ms, 900 * ms}}, 150 * ms},
		{"fixed", behavior.Fixed{D: 200 * ms}, 200 * ms},
	}
	const n = 200_000
	r := rand.New(rand.NewPCG(1, 2))
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			want, exact := cdf(tc.d, tc.x)
			if !exact {
				t.Fatal("not exact")
			}
			hits := 0
			for range n {
				if tc.d.Sample(r) <= tc.x {
					hits++
				}
			}
			got := float64(hits) / n
			if tol := 4*math.Sqrt(want*(1-want)/n) + 1e-12; math.Abs(got-want) > tol {
				t.Fatalf("sampled %.5f, cdf %.5f ± %.5f", got, want, tol)
			}
		})
	}
}
