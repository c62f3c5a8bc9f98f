package breaker

import "math"

// CallOutcomeProbabilities are the chances that one trial call ends in each of
// four ways; they should sum to 1. Slow means strictly longer than the slow-call
// duration threshold.
type CallOutcomeProbabilities struct {
	FastSuccess, SlowSuccess, FastFailure, SlowFailure float64
}

// HalfOpenPassProbability is the exact probability that a HALF_OPEN trial ends
// in CLOSED, for independent calls with outcome probabilities p (ignored calls
// left out: they give their permit back and decide nothing).
//
// The trial window is COUNT_BASED with room for PermittedNumberOfCallsInHalfOpenState
// calls and decides at the m-th recorded call, m = min(MinimumNumberOfCalls,
// permitted). It passes when both rates, computed in float32 as count*100/m,
// are below their thresholds (>= trips). The sum runs over every count of
// failures f and, given f, the slow failures (Binomial(f, SlowFailure/failure))
// and slow successes (Binomial(m-f, SlowSuccess/success)); the result is exactly
// 0 when no combination of counts passes.
func HalfOpenPassProbability(cfg Config, p CallOutcomeProbabilities) float64 {
	m := min(cfg.MinimumNumberOfCalls, cfg.PermittedNumberOfCallsInHalfOpenState)
	if m < 1 {
		return 0
	}
	// Smallest counts that reach the thresholds; rates grow with the count.
	fc := firstTripping(m, cfg.FailureRateThreshold)
	sc := firstTripping(m, cfg.SlowCallRateThreshold)
	if fc == 0 || sc == 0 {
		return 0
	}
	pf := p.FastFailure + p.SlowFailure
	ps := p.FastSuccess + p.SlowSuccess
	total := pf + ps
	if !(total > 0) {
		return 0
	}
	pf /= total
	qf := ratio(p.SlowFailure, p.FastFailure+p.SlowFailure) // P(slow | failure)
	qs := ratio(p.SlowSuccess, p.FastSuccess+p.SlowSuccess) // P(slow | success)
	failures := binomialPMF(m, pf)
	pass := 0.0
	for f := 0; f < fc && f <= m; f++ {
		if failures[f] == 0 {
			continue
		}
		slowF := binomialPMF(f, qf)
		slowS := binomialPMF(m-f, qs)
		// P(slowF + slowS < sc)
		cdfS := make([]float64, len(slowS))
		acc := 0.0
		for i, v := range slowS {
			acc += v
			cdfS[i] = acc
		}
		cond := 0.0
		for i, v := range slowF {
			if i >= sc || v == 0 {
				continue
			}
			j := min(sc-1-i, len(cdfS)-1)
			cond += v * cdfS[j]
		}
		pass += failures[f] * cond
	}
	return pass
}

// firstTripping returns the smallest count c in [0, m] whose float32 rate
// c*100/m reaches threshold, or m+1 when none does.
func firstTripping(m int, threshold float32) int {
	for c := 0; c <= m; c++ {
		if float32(float32(c)*100)/float32(m) >= threshold {
			return c
		}
	}
	return m + 1
}

func ratio(a, b float64) float64 {
	if !(b > 0) {
		return 0
	}
	return a / b
}

// binomialPMF returns P(X = k) for k = 0..n, X ~ Binomial(n, q). Impossible
// counts are exactly 0 when q is 0 or 1.
func binomialPMF(n int, q float64) []float64 {
	out := make([]float64, n+1)
	switch {
	case q <= 0:
		out[0] = 1
		return out
	case q >= 1:
		out[n] = 1
		return out
	}
	lq, l1q := math.Log(q), math.Log1p(-q)
	ln, _ := math.Lgamma(float64(n + 1))
	for k := 0; k <= n; k++ {
		lk, _ := math.Lgamma(float64(k + 1))
		lnk, _ := math.Lgamma(float64(n - k + 1))
		out[k] = math.Exp(ln - lk - lnk + float64(k)*lq + float64(n-k)*l1q)
	}
	return out
}
