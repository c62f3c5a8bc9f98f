package breaker

// OpenCause says why a breaker went to OPEN. Its values are the one vocabulary of
// causes: the simulator, the collector, run.json, the summaries, predictions and
// expectations (cause=...) all use these labels.
type OpenCause string

// The causes of an OPEN transition.
const (
	// CauseFailureRate: CLOSED→OPEN with only the failure rate at or above its threshold.
	CauseFailureRate OpenCause = "failure-rate"
	// CauseSlowCallRate: CLOSED→OPEN with only the slow-call rate at or above its threshold.
	CauseSlowCallRate OpenCause = "slow-call-rate"
	// CauseBoth: CLOSED→OPEN with both rates at or above their thresholds.
	CauseBoth OpenCause = "both"
	// CauseHalfOpenTrial: HALF_OPEN→OPEN, the trial calls failed the thresholds.
	CauseHalfOpenTrial OpenCause = "half-open-trial"
	// CauseForced: an operator forced the state (FORCED_OPEN, or a reset).
	CauseForced OpenCause = "forced"
	// CauseUnknown: an OPEN whose evidence cbprobe did not see.
	CauseUnknown OpenCause = "unknown"
)

// OpenCauses lists every cause, rate causes first.
func OpenCauses() []OpenCause {
	return []OpenCause{CauseFailureRate, CauseSlowCallRate, CauseBoth, CauseHalfOpenTrial, CauseForced, CauseUnknown}
}

// RateCauses lists the causes of a CLOSED→OPEN decided by the rates.
func RateCauses() []OpenCause {
	return []OpenCause{CauseFailureRate, CauseSlowCallRate, CauseBoth}
}

// CauseOf is the one rule naming a CLOSED→OPEN transition from which rates
// exceeded their thresholds: both, one of them, or CauseUnknown when neither is
// known to have.
func CauseOf(failureRateExceeded, slowCallRateExceeded bool) OpenCause {
	switch {
	case failureRateExceeded && slowCallRateExceeded:
		return CauseBoth
	case failureRateExceeded:
		return CauseFailureRate
	case slowCallRateExceeded:
		return CauseSlowCallRate
	}
	return CauseUnknown
}
