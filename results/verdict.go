package results

import "time"

// Verdicts of a run (Run.Verdict) and of an arm's observation.
const (
	// VerdictPassed: the run finished, the evidence agreed and every expectation held.
	VerdictPassed = "passed"
	// VerdictFailed: at least one expectation was decided and did not hold.
	VerdictFailed = "failed"
	// VerdictInconclusive: no expectation failed, but cbprobe could not see
	// enough to decide (an arm's evidence disagreed or had a gap): exit 3.
	VerdictInconclusive = "inconclusive"
	// VerdictIncomplete: the run did not finish (interrupted or killed).
	VerdictIncomplete = "incomplete"
	// ObservationConsistent: every source of evidence agreed.
	ObservationConsistent = "consistent"
)

// Observation is the reconciliation of one arm's evidence before any
// verdict: the service's refusals, the breaker's counters, state samples and
// events, and the polling record. Times are wall-clock UTC.
type Observation struct {
	// Verdict is ObservationConsistent or VerdictInconclusive.
	Verdict string `json:"verdict"`
	// Reasons say why the arm is inconclusive, each with its evidence, e.g.
	// "412 refusals, no OPEN seen: metrics unreachable from +2.1 s (…)".
	Reasons []string `json:"reasons,omitempty"`
	// Fix says what to change so that the next run can decide.
	Fix []string `json:"fix,omitempty"`
	// Notes are remarks that do not weaken the verdict (a short gap in which
	// nothing happened).
	Notes []string `json:"notes,omitempty"`
	// Refusals counts requests the service answered as refused by an open breaker.
	Refusals int `json:"refusals"`
	// Samples counts the polls in which the arm's breaker was read.
	Samples int `json:"samples"`
	// PollErrors counts failed polls.
	PollErrors int `json:"pollErrors"`
	// Gaps are the stretches without a good poll, wall-clock.
	Gaps []ObservedGap `json:"gaps,omitempty"`
	// LastSample is the observation time of the last good sample of the breaker.
	LastSample time.Time `json:"lastSample,omitzero"`
	// LastRequest is when the last request's answer arrived.
	LastRequest time.Time `json:"lastRequest,omitzero"`
}

// ObservedGap is a stretch in which the breaker was not observed.
type ObservedGap struct {
	// From is the last good observation before the gap; To the first after it
	// (zero: the gap lasted to the end of the arm).
	From time.Time `json:"from"`
	To   time.Time `json:"to,omitzero"`
	// Polls is the number of failed polls in it.
	Polls int `json:"polls"`
	// Reason is the first error seen in it.
	Reason string `json:"reason,omitempty"`
	// Refusals counts requests refused while the breaker was not observed.
	Refusals int `json:"refusals"`
	// Decisive is true when the state may have changed unobserved in it
	// (refusals or counter jumps), which makes the arm inconclusive.
	Decisive bool `json:"decisive"`
}

// Inconclusive reports whether the arm's evidence could not decide.
func (a *Arm) Inconclusive() bool {
	return a.Observation != nil && a.Observation.Verdict == VerdictInconclusive
}

// Decide computes the run's verdict from its content: VerdictIncomplete for a
// run that did not finish; VerdictFailed when an expectation was decided and
// did not hold (the breaker misbehaved whatever else was unseen) or a finding
// reached the FailOn severity (Run.FailingFindings);
// VerdictInconclusive when an expectation or an arm was inconclusive;
// VerdictPassed otherwise.
func (r *Run) Decide() string {
	if r.Interrupted {
		return VerdictIncomplete
	}
	inconclusive := false
	for _, e := range r.Expectations {
		switch {
		case e.Inconclusive:
			inconclusive = true
		case !e.OK:
			return VerdictFailed
		}
	}
	if len(r.FailingFindings()) > 0 {
		return VerdictFailed
	}
	for i := range r.Arms {
		if r.Arms[i].Inconclusive() {
			inconclusive = true
		}
	}
	if inconclusive {
		return VerdictInconclusive
	}
	return VerdictPassed
}

// ExitCode maps the verdict to cbprobe's exit code: 0 passed, 1 failed, 3
// inconclusive, 130 incomplete.
func (r *Run) ExitCode() int {
	switch r.Decide() {
	case VerdictFailed:
		return 1
	case VerdictInconclusive:
		return 3
	case VerdictIncomplete:
		return 130
	}
	return 0
}
