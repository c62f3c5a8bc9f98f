package sim

import (
	"math"
	"math/rand/v2"
	"time"

	"github.com/cbprobe/cbprobe/breaker"
	"github.com/cbprobe/cbprobe/pgsim/behavior"
)

// GatewayError is the error a simulated gateway attempt fails with when the
// gateway answers HTTP 500, resets the connection or holds it until it gives up
// (a hang shorter than the TimeLimiter's timeout). A timeout is a
// *breaker.TimeoutError instead and a rejection a *breaker.CallNotPermittedError.
type GatewayError struct {
	// Outcome is the gateway's decision: behavior.OutcomeError, OutcomeReset or OutcomeHang.
	Outcome behavior.Outcome
}

// Error describes the failure the way the reference service's Feign client would see it.
func (e *GatewayError) Error() string {
	switch e.Outcome {
	case behavior.OutcomeError:
		return "pg: HTTP 500 Internal Server Error"
	case behavior.OutcomeReset:
		return "pg: connection reset"
	}
	return "pg: connection closed without an answer"
}

// JavaClass names the exception a Spring/Feign service would get, so that
// springconf's record-/ignore-/retry-exceptions lists classify simulated errors
// the way they classify the real ones.
func (e *GatewayError) JavaClass() string {
	if e.Outcome == behavior.OutcomeError {
		return "feign.FeignException$InternalServerError"
	}
	return "feign.RetryableException"
}

// Probabilities is the exact per-attempt picture of one gateway behaviour as a
// circuit breaker sees it through the TimeLimiter.
type Probabilities struct {
	// Call is what the breaker records per permitted attempt: fast/slow
	// success/failure, after the breaker's classifier; calls the classifier
	// ignores are left out and the rest renormalised (they give their permit back).
	Call breaker.CallOutcomeProbabilities `json:"call"`
	// Ignored is the probability that the classifier ignores an attempt's error.
	Ignored float64 `json:"ignored"`
	// Timeout is the probability that an attempt is cut by the TimeLimiter.
	Timeout float64 `json:"timeout"`
	// Retryable is p of the closed form: the probability that an attempt ends in
	// an error the Retry retries (timeouts included).
	Retryable float64 `json:"retryable"`
	// Exact is false when a latency distribution had no closed-form CDF and a
	// sampled estimate (CDFSamples draws) was used.
	Exact bool `json:"exact"`
}

// CDFSamples is the number of draws used to estimate the CDF of a latency
// distribution sim does not know in closed form (standard error at most
// 0.5/sqrt(CDFSamples) ≈ 0.0005).
const CDFSamples = 1 << 20

// cdf returns P(X <= x) for a distribution of package behavior, exactly for its
// own types (Uniform at nanosecond resolution, bounds inclusive, as Sample draws it)
// and by sampling for others; exact reports which.
func cdf(d behavior.Distribution, x time.Duration) (p float64, exact bool) {
	switch d := d.(type) {
	case behavior.Fixed:
		return b2f(d.D <= x), true
	case behavior.Uniform:
		switch {
		case x < d.Min:
			return 0, true
		case x >= d.Max:
			return 1, true
		}
		return float64(x-d.Min+1) / float64(d.Max-d.Min+1), true
	case behavior.Normal:
		// Sample truncates toward zero: X <= x iff the real draw is < x+1ns; below 0 it is 0.
		if x < 0 {
			return 0, true
		}
		if d.SD == 0 {
			return b2f(d.Mean <= x), true
		}
		return phi((float64(x+1) - float64(d.Mean)) / float64(d.SD)), true
	case behavior.LogNormal:
		if x < 0 {
			return 0, true
		}
		s := d.Sigma()
		if s == 0 {
			return b2f(d.Median <= x), true
		}
		return phi(math.Log(float64(x+1)/float64(d.Median)) / s), true
	case behavior.Empirical:
		if len(d.Values) == 0 {
			return 1, true
		}
		n := 0
		for _, v := range d.Values {
			if v <= x {
				n++
			}
		}
		return float64(n) / float64(len(d.Values)), true
	}
	r := rand.New(rand.NewPCG(0x5eed, 0xcdf))
	n := 0
	for range CDFSamples {
		if d.Sample(r) <= x {
			n++
		}
	}
	return float64(n) / CDFSamples, false
}

func phi(z float64) float64 { return 0.5 * math.Erfc(-z/math.Sqrt2) }

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// attemptShape is how long a permitted attempt takes as the breaker measures it and
// how it ends; shape applies the TimeLimiter to the gateway's decision.
type attemptShape struct {
	elapsed time.Duration // what the breaker records
	timeout bool          // cut by the TimeLimiter at its timeout
	failed  bool          // the attempt raised an error (timeout or gateway failure)
}

// shape turns a gateway decision into an attempt: the call lasts the gateway's
// delay plus overhead; a call longer than the timeout ends at the timeout as a
// failure (timeout < 0: no TimeLimiter).
func shape(d behavior.Decision, overhead, timeout time.Duration) attemptShape {
	dur := d.Delay + overhead
	if timeout >= 0 && dur > timeout {
		return attemptShape{elapsed: timeout, timeout: true, failed: true}
	}
	return attemptShape{elapsed: dur, failed: d.Outcome != behavior.OutcomeSuccess}
}

// OutcomeProbabilities computes, exactly where the latency distributions allow
// it, how one gateway attempt of behaviour b is recorded by a breaker with
// config cfg behind a TimeLimiter of timeout (< 0: none), each call lasting the
// gateway's delay plus overhead. It classifies the errors the simulation raises
// with cfg.Classify and rc.ShouldRetry, so ignore-/record-/retry-exceptions count.
func OutcomeProbabilities(b behavior.Behavior, cfg breaker.Config, rc breaker.RetryConfig, timeout, overhead time.Duration) Probabilities {
	m := b.Mix()
	lat := b.ActiveLatency()
	exact := true
	// F(x) = P(latency + overhead <= x).
	F := func(x time.Duration) float64 {
		p, ok := cdf(lat, x-overhead)
		exact = exact && ok
		return p
	}
	slow := cfg.SlowCallDurationThreshold
	var out Probabilities
	var call breaker.CallOutcomeProbabilities
	timeoutErr := &breaker.TimeoutError{Name: "sim"}
	// add records probability p of an attempt that lasts d and ends with err (nil: success).
	add := func(p float64, d time.Duration, err error) {
		if p <= 0 {
			return
		}
		o := breaker.OutcomeSuccess
		if err != nil {
			o = classify(cfg, err)
			if rc.ShouldRetry(err) {
				out.Retryable += p
			}
		}
		isSlow := d > slow
		switch {
		case o == breaker.OutcomeIgnored:
			out.Ignored += p
		case o == breaker.OutcomeSuccess && isSlow:
			call.SlowSuccess += p
		case o == breaker.OutcomeSuccess:
			call.FastSuccess += p
		case isSlow:
			call.SlowFailure += p
		default:
			call.FastFailure += p
		}
	}
	// random adds an attempt whose gateway delay is the latency sample, ending in err when it answers in time.
	random := func(p float64, err error) {
		if p <= 0 {
			return
		}
		if timeout < 0 {
			fs := F(slow)
			add(p*fs, slow, err)       // at or below the slow threshold
			add(p*(1-fs), slow+1, err) // above it
			return
		}
		ft := F(timeout)
		lo := min(slow, timeout)
		fl := F(lo)
		add(p*fl, lo, err)
		if timeout > slow {
			add(p*(ft-fl), slow+1, err)
		}
		add(p*(1-ft), timeout, timeoutErr)
		out.Timeout += p * (1 - ft)
	}
	// fixed adds an attempt whose gateway delay is exactly d.
	fixed := func(p float64, d time.Duration, err error) {
		if p <= 0 {
			return
		}
		s := shape(behavior.Decision{Outcome: behavior.OutcomeError, Delay: d}, overhead, timeout)
		if s.timeout {
			out.Timeout += p
			add(p, s.elapsed, timeoutErr)
			return
		}
		add(p, s.elapsed, err)
	}
	random(m.Success, nil)
	for _, f := range []struct {
		p float64
		o behavior.Outcome
	}{{m.Error, behavior.OutcomeError}, {m.Reset, behavior.OutcomeReset}} {
		if b.ErrorTiming == behavior.AfterLatency {
			random(f.p, &GatewayError{Outcome: f.o})
		} else {
			fixed(f.p, 0, &GatewayError{Outcome: f.o})
		}
	}
	fixed(m.Hang, b.HangMax, &GatewayError{Outcome: behavior.OutcomeHang})
	if kept := 1 - out.Ignored; kept > 0 && out.Ignored > 0 {
		call.FastSuccess /= kept
		call.SlowSuccess /= kept
		call.FastFailure /= kept
		call.SlowFailure /= kept
	}
	out.Call = call
	out.Exact = exact
	return out
}

// classify applies the breaker's classifier (nil: every error is a failure).
func classify(cfg breaker.Config, err error) breaker.Outcome {
	if cfg.Classify == nil {
		return breaker.OutcomeFailure
	}
	return cfg.Classify(err)
}

// ClosedFormAttempts is the expected number of gateway attempts per request
// when each attempt fails (retryably) with probability p, independently, and at
// most n attempts are made: 1 + p + … + p^(n-1) = (1 − p^n)/(1 − p).
func ClosedFormAttempts(p float64, n int) float64 {
	if n < 1 {
		return 0
	}
	if p >= 1 {
		return float64(n)
	}
	return (1 - math.Pow(p, float64(n))) / (1 - p)
}
