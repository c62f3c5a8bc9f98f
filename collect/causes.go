package collect

import (
	"fmt"
	"github.com/cbprobe/cbprobe/breaker"
	"math"
	"strings"
)

// rateVerdict is how a transition's evidence rates compare with its thresholds.
type rateVerdict struct {
	fail, slow bool   // the failure / slow-call rate reached its threshold
	known      bool   // both rates and thresholds are known, so both comparisons hold
	text       string // "failure rate X against Y, slow-call rate X against Y"
}

func compareRates(ev *Evidence) rateVerdict {
	f, fok := exceeds(ev.FailureRate, ev.FailureRateThreshold)
	sl, sok := exceeds(ev.SlowCallRate, ev.SlowCallRateThreshold)
	return rateVerdict{fail: f, slow: sl, known: fok && sok,
		text: fmt.Sprintf("failure rate %s against %s, slow-call rate %s against %s",
			fmtPct(ev.FailureRate), fmtPct(ev.FailureRateThreshold), fmtPct(ev.SlowCallRate), fmtPct(ev.SlowCallRateThreshold))}
}

// exceeds compares like Resilience4j: float32 values, rate >= threshold, -1 never.
func exceeds(rate, threshold float64) (bool, bool) {
	if math.IsNaN(rate) || math.IsNaN(threshold) {
		return false, false
	}
	if rate < 0 {
		return false, true
	}
	return float32(rate) >= float32(threshold), true
}

// causeOf names a CLOSED→OPEN by the rates that exceeded their thresholds
// (breaker.CauseOf, the one rule), "" when neither did.
func causeOf(fail, slow bool) breaker.OpenCause {
	if c := breaker.CauseOf(fail, slow); c != breaker.CauseUnknown {
		return c
	}
	return ""
}

// label sets the transition's Cause and Reason from its evidence (transitions
// into OPEN and FORCED_OPEN; others get none), taking the thresholds from
// smp or the configuration when the evidence has none yet.
func (t *Tracker) label(tr *Transition, smp *BreakerSample) {
	ev := tr.Evidence
	if math.IsNaN(ev.FailureRateThreshold) {
		t.thresholds(tr, smp)
	}
	rv := compareRates(ev)
	switch {
	case tr.To == "FORCED_OPEN":
		tr.Cause, tr.Reason = breaker.CauseForced, "forced open by an operator (FORCE_OPEN)"
	case tr.To != "OPEN":
		tr.Cause, tr.Reason = "", ""
	case tr.From == "HALF_OPEN":
		labelTrial(tr, rv)
	case tr.From == "FORCED_OPEN" || tr.From == "DISABLED" || tr.From == "METRICS_ONLY":
		tr.Cause, tr.Reason = breaker.CauseForced, "manual transition from "+tr.From
	case len(ev.ExceededEvents) > 0:
		labelFromEvents(tr, rv)
	case rv.known && causeOf(rv.fail, rv.slow) != "":
		tr.Cause = causeOf(rv.fail, rv.slow)
		tr.Reason = rv.text + " in the first OPEN sample"
		ev.Missing = appendOnce(ev.Missing, noThresholdEvents(tr))
	case rv.known:
		tr.Cause = breaker.CauseUnknown
		ev.Missing = appendOnce(ev.Missing, noThresholdEvents(tr))
		tr.Reason = noThresholdEvents(tr) + ", and the first OPEN sample is below both thresholds (" + rv.text + ")"
	default:
		tr.Cause = breaker.CauseUnknown
		noteMissingRates(ev)
		tr.Reason = noThresholdEvents(tr) + "; " + strings.Join(ev.Missing, "; ")
		if tr.lost {
			tr.Reason += "; events were possibly lost"
		}
	}
}

// labelTrial labels a HALF_OPEN to OPEN transition: a failed half-open trial.
func labelTrial(tr *Transition, rv rateVerdict) {
	ev := tr.Evidence
	tr.Cause = breaker.CauseHalfOpenTrial
	if c := causeOf(rv.fail, rv.slow); c != "" {
		ev.TrialExceeded = c
		tr.Reason = "the half-open trial calls exceeded the thresholds: " + rv.text
	} else if ev.FailureRate == -1 {
		tr.Reason = "the half-open trial did not complete (max-wait-duration-in-half-open-state expired?)"
	} else {
		noteMissingRates(ev)
		tr.Reason = "the half-open trial failed; trial rates unavailable"
		if rv.known {
			tr.Reason = "the half-open trial failed: " + rv.text
		}
	}
}

// labelFromEvents labels a CLOSED to OPEN transition by the threshold events
// published before it, noting when the first OPEN sample's rates disagree.
func labelFromEvents(tr *Transition, rv rateVerdict) {
	ev := tr.Evidence
	ef, es := false, false
	for _, x := range ev.ExceededEvents {
		ef = ef || x == "FAILURE_RATE_EXCEEDED"
		es = es || x == "SLOW_CALL_RATE_EXCEEDED"
	}
	tr.Cause = breaker.CauseOf(ef, es)
	tr.Reason = strings.Join(ev.ExceededEvents, " and ") + " published before the transition"
	if rv.known {
		tr.Reason += "; " + rv.text
		if causeOf(rv.fail, rv.slow) != tr.Cause {
			ev.Notes = append(ev.Notes, "the rates of the first OPEN sample point to "+orNone(string(causeOf(rv.fail, rv.slow)))+" (late calls or a sliding TIME_BASED window changed them)")
		}
	}
}

// noteMissingRates says why the rates could not be compared: no sample in the
// new state, or no thresholds.
func noteMissingRates(ev *Evidence) {
	if ev.SampleTime.IsZero() {
		ev.Missing = appendOnce(ev.Missing, "no sample in the new state (it lasted less than a poll interval)")
	} else if ev.ThresholdSource == "" {
		ev.Missing = appendOnce(ev.Missing, "thresholds unknown (the source does not export them; give the configuration)")
	}
}

// noThresholdEvents says why no FAILURE_RATE_EXCEEDED / SLOW_CALL_RATE_EXCEEDED
// event backs a transition: none was published, or no event was available.
func noThresholdEvents(tr *Transition) string {
	if tr.noEvents {
		return "breaker events unavailable (the source read none in the poll that found the transition)"
	}
	return "no threshold events"
}

func orNone(s string) string {
	if s == "" {
		return "neither threshold"
	}
	return s
}

func appendOnce(l []string, s string) []string {
	for _, x := range l {
		if x == s {
			return l
		}
	}
	return append(l, s)
}

func fmtPct(v float64) string {
	switch {
	case math.IsNaN(v):
		return "?"
	case v == -1:
		return "-1 (below minimum calls)"
	}
	return fmt.Sprintf("%.1f%%", v)
}
