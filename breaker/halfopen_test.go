package breaker

import (
	"fmt"
	"math"
	"testing"
	"time"
)

// bruteForcePass enumerates every sequence of the four outcomes over the
// permitted trial calls, drives a real breaker through each, and adds up the
// probability of the sequences that end in CLOSED.
func bruteForcePass(t *testing.T, cfg Config, p CallOutcomeProbabilities) float64 {
	t.Helper()
	n := cfg.PermittedNumberOfCallsInHalfOpenState
	probs := []float64{p.FastSuccess, p.SlowSuccess, p.FastFailure, p.SlowFailure}
	fast, slow := time.Duration(0), cfg.SlowCallDurationThreshold+time.Millisecond
	total := 0.0
	seq := make([]int, n)
	for code := 0; code < 1<<(2*n); code++ {
		pr := 1.0
		for i := range seq {
			seq[i] = (code >> (2 * i)) & 3
			pr *= probs[seq[i]]
		}
		if pr == 0 {
			continue
		}
		cb, err := New("brute", cfg, WithClock(NewVirtualClock(t0())))
		if err != nil {
			t.Fatal(err)
		}
		_ = cb.TransitionTo(StateOpen)
		_ = cb.TransitionTo(StateHalfOpen)
		for _, o := range seq {
			if cb.State() != StateHalfOpen {
				break
			}
			if !cb.TryAcquirePermission() {
				t.Fatalf("trial call refused before a decision")
			}
			switch o {
			case 0:
				cb.OnSuccess(fast)
			case 1:
				cb.OnSuccess(slow)
			case 2:
				cb.OnError(fast, boomError{})
			case 3:
				cb.OnError(slow, boomError{})
			}
		}
		switch cb.State() {
		case StateClosed:
			total += pr
		case StateOpen:
		default:
			t.Fatalf("undecided after %d trial calls: %v", n, cb.State())
		}
	}
	return total
}

func TestHalfOpenPassProbabilityBruteForce(t *testing.T) {
	probabilities := []CallOutcomeProbabilities{
		{FastSuccess: 0, SlowSuccess: 0.6, FastFailure: 0.4, SlowFailure: 0},
		{FastSuccess: 0.1, SlowSuccess: 0.2, FastFailure: 0.3, SlowFailure: 0.4},
		{FastSuccess: 0.7, SlowSuccess: 0.1, FastFailure: 0.15, SlowFailure: 0.05},
	}
	for permits := 1; permits <= 5; permits++ {
		for _, minCalls := range []int{2, 100} {
			for _, fail := range []float32{50, 60, 33.3} {
				for _, slowThr := range []float32{50, 66.7, 100} {
					cfg := DefaultConfig()
					cfg.PermittedNumberOfCallsInHalfOpenState = permits
					cfg.MinimumNumberOfCalls = minCalls
					cfg.FailureRateThreshold = fail
					cfg.SlowCallRateThreshold = slowThr
					cfg.SlowCallDurationThreshold = 100 * time.Millisecond
					for i, p := range probabilities {
						name := fmt.Sprintf("permits=%d/min=%d/fail=%v/slow=%v/p%d", permits, minCalls, fail, slowThr, i)
						want := bruteForcePass(t, cfg, p)
						got := HalfOpenPassProbability(cfg, p)
						if math.Abs(got-want) > 1e-12 {
							t.Errorf("%s: got %.15f, brute force %.15f", name, got, want)
						}
					}
				}
			}
		}
	}
}

// TestHalfOpenPassProbabilityReference: the reference setting against the
// reference gateway can never pass: with 5 trial calls, at most 2 failures keep
// the failure rate below 60 %, which leaves at least 3 slow successes (60 % >= 50 %).
func TestHalfOpenPassProbabilityReference(t *testing.T) {
	cfg := DefaultConfig()
	cfg.SlidingWindowSize = 20
	cfg.FailureRateThreshold = 60
	cfg.SlowCallRateThreshold = 50
	cfg.SlowCallDurationThreshold = 100 * time.Millisecond
	cfg.WaitDurationInOpenState = 10 * time.Second
	cfg.PermittedNumberOfCallsInHalfOpenState = 5
	p := CallOutcomeProbabilities{FastSuccess: 0, SlowSuccess: 0.6, FastFailure: 0.4, SlowFailure: 0}
	if got := HalfOpenPassProbability(cfg, p); got != 0 {
		t.Fatalf("pass probability %v, want exactly 0", got)
	}
	// With a 1 s slow threshold no success is slow: pass = P(at most 2 failures of 5).
	p = CallOutcomeProbabilities{FastSuccess: 0.6, FastFailure: 0.4}
	want := 0.0
	for k := 0; k <= 2; k++ {
		want += float64(binomial(5, k)) * math.Pow(0.4, float64(k)) * math.Pow(0.6, float64(5-k))
	}
	if got := HalfOpenPassProbability(cfg, p); math.Abs(got-want) > 1e-12 {
		t.Errorf("fast gateway: got %v, want %v", got, want)
	}
}

func TestHalfOpenPassProbabilityLarge(t *testing.T) {
	cfg := DefaultConfig()
	cfg.PermittedNumberOfCallsInHalfOpenState = 400
	cfg.MinimumNumberOfCalls = 400
	p := CallOutcomeProbabilities{FastSuccess: 0.5, SlowSuccess: 0.2, FastFailure: 0.2, SlowFailure: 0.1}
	got := HalfOpenPassProbability(cfg, p)
	// Failure rate 30 % against 50 %, slow rate 30 % against 100 %: passing is
	// all but certain (the failure count is 13 standard deviations below 200).
	if !(got > 0.999999 && got <= 1+1e-9) {
		t.Errorf("got %v, want ~1", got)
	}
}

func binomial(n, k int) int {
	r := 1
	for i := 1; i <= k; i++ {
		r = r * (n - k + i) / i
	}
	return r
}
