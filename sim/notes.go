package sim

import (
	"fmt"
	"math"
	"time"

	"github.com/cbprobe/cbprobe/breaker"
)

// notes explains, in sentences, the mechanisms behind a prediction's numbers.
func notes(arm *Arm, p *Prediction) []string {
	cfg := arm.Breaker
	g := p.Gateway
	a := p.AttemptsPerRequest.ClosedForm
	var out []string
	call := g.Call
	slowShare := call.SlowSuccess + call.SlowFailure
	failShare := call.FastFailure + call.SlowFailure
	out = append(out, fmt.Sprintf("per gateway attempt: %.1f%% failures (%.1f%% timeouts), %.1f%% slow calls (> %v); thresholds %v%% failures, %v%% slow calls",
		100*failShare, 100*g.Timeout, 100*slowShare, cfg.SlowCallDurationThreshold, cfg.FailureRateThreshold, cfg.SlowCallRateThreshold))
	if g.Timeout > 0 && arm.TimeLimiter != nil && arm.TimeLimiter.TimeoutDuration > cfg.SlowCallDurationThreshold {
		out = append(out, fmt.Sprintf("a call cut by the %v TimeLimiter is recorded as a failure and, being longer than %v, also as a slow call: timeouts raise both rates",
			arm.TimeLimiter.TimeoutDuration, cfg.SlowCallDurationThreshold))
	}
	if arm.Retry.MaxAttempts > 1 {
		out = append(out, fmt.Sprintf("with %d attempts the window fills per gateway attempt, not per request: (1 − p^n)/(1 − p) = %.2f attempts per request (p = %.2f)",
			arm.Retry.MaxAttempts, a, g.Retryable))
	}
	switch cfg.SlidingWindowType {
	case breaker.CountBased:
		minCalls := min(cfg.MinimumNumberOfCalls, cfg.SlidingWindowSize)
		out = append(out, fmt.Sprintf("COUNT_BASED window of %d: rates exist from the %dth recorded call, about request %.1f at %.2f attempts per request",
			cfg.SlidingWindowSize, minCalls, float64(minCalls)/a, a))
		if hasPause(arm) {
			out = append(out, "COUNT_BASED keeps its last outcomes through a pause: the window that tripped before the pause still holds them afterwards")
		}
	case breaker.TimeBased:
		w := time.Duration(cfg.SlidingWindowSize) * time.Second
		for _, ph := range arm.Phases {
			if ph.Rate <= 0 {
				continue
			}
			perSec := ph.Rate * a
			most := perSec * math.Min(ph.Duration.Seconds(), w.Seconds())
			if most >= float64(cfg.MinimumNumberOfCalls) {
				out = append(out, fmt.Sprintf("TIME_BASED window of %v: phase %s sends %.1f calls/s (%.4g req/s × %.2f attempts), so the minimum of %d calls is reached inside the window after about %.1f s of the phase: the breaker can open",
					w, ph.Name, perSec, ph.Rate, a, cfg.MinimumNumberOfCalls, float64(cfg.MinimumNumberOfCalls)/perSec))
			} else {
				out = append(out, fmt.Sprintf("TIME_BASED window of %v: phase %s brings at most %.0f calls into the window (%.1f calls/s for %v), below the minimum of %d: its calls alone cannot open the breaker (the minimum is not capped by the window size)",
					w, ph.Name, most, perSec, min(ph.Duration, w), cfg.MinimumNumberOfCalls))
			}
		}
		if hasPause(arm) {
			out = append(out, fmt.Sprintf("TIME_BASED forgets calls older than %v: a pause at least that long empties the window", w))
		}
	}
	if len(p.OpenCauses) > 0 && p.FirstOpenRequest.N > 0 {
		c, share := breaker.CauseSlowCallRate, p.OpenCauses[breaker.CauseSlowCallRate]
		if f := p.OpenCauses[breaker.CauseFailureRate]; f > share {
			c, share = breaker.CauseFailureRate, f
		}
		if b := p.OpenCauses[breaker.CauseBoth]; b > share {
			c, share = breaker.CauseBoth, b
		}
		out = append(out, fmt.Sprintf("the breaker opened in %.1f%% of runs, first by %s in %.1f%% of them", 100*p.FirstOpenRequest.Share, c, 100*share))
	} else if arm.StartOpen {
		out = append(out, "the breaker started OPEN (left open by an earlier run) and never went from CLOSED to OPEN")
	} else {
		out = append(out, "the breaker never went from CLOSED to OPEN in any run")
	}
	if p.HalfOpenPassProbability == 0 {
		out = append(out, fmt.Sprintf("%s; once open, it rejects for %v, lets %d trial calls through, and opens again",
			p.HalfOpenMeaning, cfg.WaitDurationInOpenState, cfg.PermittedNumberOfCallsInHalfOpenState))
	}
	if hasPause(arm) && !cfg.AutomaticTransitionFromOpenToHalfOpenEnabled {
		out = append(out, fmt.Sprintf("OPEN moves to HALF_OPEN only when a call asks for permission after the %v wait (lazily): a breaker open before a pause is still OPEN when traffic resumes, and the first requests after the pause are its half-open trial", cfg.WaitDurationInOpenState))
	}
	if !g.Exact {
		out = append(out, fmt.Sprintf("the outcome probabilities use a sampled CDF estimate (%d draws) for a latency distribution without a closed form", CDFSamples))
	}
	return out
}

func hasPause(arm *Arm) bool {
	if arm.Sequential() {
		return false
	}
	for _, ph := range arm.Phases {
		if ph.Rate == 0 {
			return true
		}
	}
	return false
}
