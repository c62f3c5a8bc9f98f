package experiments

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/cbprobe/cbprobe/results"
)

// Latency and recovery expectations, part of the grammar in expect.go.
//
// latency-pNN (NN one of 50, 90, 95, 99) is the nearest-rank percentile of the
// latency of every request the arm sent (rejected and failed ones included),
// in milliseconds of service time; phase[N].latency-pNN is the same over the
// requests of phase N. It is inconclusive when no request was sent.
//
// Recovery metrics read the breaker's observed transitions; like cause and
// opens they are inconclusive when the arm's breaker was not observed, and
// also when the run holds no evidence for them:
//
//   - time-to-close: seconds from the first CLOSED→OPEN to the first later
//     transition into CLOSED. Inconclusive when the breaker never opened; when
//     it never closed, the expectation is decided only if the breaker was seen
//     not CLOSED for at least the compared number of seconds after opening
//     ("time-to-close<=30" fails once 30 s passed without closing), and
//     inconclusive otherwise (the run ended too soon to tell).
//   - time-in-open: seconds spent in OPEN during the observed part of the run
//     (an OPEN still in force counts until the last observation).
//   - half-open-trials: trials that finished (HALF_OPEN→CLOSED or →OPEN);
//     half-open-trials-passed: those that closed the breaker. Both are
//     inconclusive when no trial finished.
//
// Times may be written as Go durations ("30s", "1500ms") as well as numbers.

func latencyMetrics() []string {
	return []string{"latency-p50", "latency-p90", "latency-p95", "latency-p99"}
}

func recoveryMetrics() []string {
	return []string{"time-to-close", "time-in-open", "half-open-trials", "half-open-trials-passed"}
}

func isLatencyMetric(m string) bool { return contains(latencyMetrics(), m) }

// metricUnit is the unit of a metric's numbers: "ms", "s" or "".
func metricUnit(metric string) string {
	switch {
	case isLatencyMetric(metric):
		return "ms"
	case metric == "time-to-close" || metric == "time-in-open":
		return "s"
	}
	return ""
}

// parseNumber reads the right-hand side of a comparison on metric: a finite
// number in the metric's unit, or, for a metric measured in time, a Go
// duration converted to that unit.
func parseNumber(metric, s string) (float64, error) {
	if n, err := strconv.ParseFloat(s, 64); err == nil && !math.IsNaN(n) && !math.IsInf(n, 0) {
		return n, nil
	}
	unit := metricUnit(metric)
	if unit == "" {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a number or a duration (e.g. 1.5s, 250ms)", s)
	}
	if unit == "ms" {
		return float64(d) / float64(time.Millisecond), nil
	}
	return d.Seconds(), nil
}

// formatGot writes a measured value with its metric's unit.
func formatGot(metric string, v float64) string {
	s := strconv.FormatFloat(v, 'g', 6, 64)
	if u := metricUnit(metric); u != "" {
		s += " " + u
	}
	return s
}

// percentile picks the percentile a latency-pNN metric names, in ms.
func percentile(l results.LatencyStats, metric string) float64 {
	switch metric {
	case "latency-p50":
		return l.P50
	case "latency-p90":
		return l.P90
	case "latency-p95":
		return l.P95
	}
	return l.P99
}

func inconclusive(v Verdict, reason string) Verdict {
	v.OK, v.Inconclusive, v.Reason = false, true, "inconclusive: "+reason
	return v
}

// checkLatency checks a latency-pNN expectation on the arm or one of its phases.
func checkLatency(e Expectation, a ArmOutcome) Verdict {
	v := Verdict{Expectation: e, Arm: a.Name}
	lat, sent, where := a.Latency, a.total().Sent, "arm "+a.Name
	if e.Phase > 0 {
		if e.Phase > len(a.Phases) {
			v.Reason = fmt.Sprintf("arm %s has %d phases, not %d", a.Name, len(a.Phases), e.Phase)
			return v
		}
		p := a.Phases[e.Phase-1]
		lat, sent, where = p.Latency, p.Sent, fmt.Sprintf("phase %d of arm %s", e.Phase, a.Name)
	}
	if sent == 0 {
		return inconclusive(v, where+" sent no request: no latency was measured")
	}
	if lat == (results.LatencyStats{}) {
		return inconclusive(v, "the latency of "+where+" was not recorded")
	}
	got := percentile(lat, e.Metric)
	if e.Metric == "latency-p90" && got == 0 && lat.P50 > 0 {
		return inconclusive(v, "the record of "+where+" has no p90 (written by an older cbprobe)")
	}
	v.Got = formatGot(e.Metric, got)
	v.OK = compare(got, e.Op, e.Number)
	return v
}

// serviceSeconds turns a wall-clock duration into seconds of service time.
func (a ArmOutcome) serviceSeconds(d time.Duration) float64 {
	s := a.Speed
	if s <= 0 {
		s = 1
	}
	return d.Seconds() * s
}

// checkRecovery checks a recovery expectation (time-to-close, time-in-open,
// half-open-trials, half-open-trials-passed) on the arm's transitions.
func checkRecovery(e Expectation, a ArmOutcome) Verdict {
	v := Verdict{Expectation: e, Arm: a.Name}
	firstOpen := -1
	for i, t := range a.Transitions {
		if t.From == "CLOSED" && t.To == "OPEN" {
			firstOpen = i
			break
		}
	}
	switch e.Metric {
	case "time-to-close":
		if firstOpen < 0 {
			return inconclusive(v, "the breaker never opened: there was nothing to close")
		}
		opened := a.Transitions[firstOpen].At
		for _, t := range a.Transitions[firstOpen+1:] {
			if t.To == "CLOSED" {
				got := a.serviceSeconds(t.At.Sub(opened))
				v.Got, v.OK = formatGot(e.Metric, got), compare(got, e.Op, e.Number)
				return v
			}
		}
		// Never closed: the true value lies above the time it was seen not
		// closed. That decides the comparison only once it reaches the number.
		seen := 0.0
		if !a.ObservedUntil.IsZero() && a.ObservedUntil.After(opened) {
			seen = a.serviceSeconds(a.ObservedUntil.Sub(opened))
		}
		if seen < e.Number {
			return inconclusive(v, fmt.Sprintf("the breaker had not closed when it was last observed, %s after it opened: too soon to tell against %g s",
				formatGot(e.Metric, seen), e.Number))
		}
		v.Got = fmt.Sprintf("never (not closed %s after opening)", formatGot(e.Metric, seen))
		v.OK = compare(math.Inf(1), e.Op, e.Number)
		return v
	case "time-in-open":
		total := 0.0
		var since time.Time
		for _, t := range a.Transitions {
			if t.To == "OPEN" && since.IsZero() {
				since = t.At
			} else if t.To != "OPEN" && !since.IsZero() {
				total += a.serviceSeconds(t.At.Sub(since))
				since = time.Time{}
			}
		}
		if !since.IsZero() {
			if a.ObservedUntil.IsZero() {
				return inconclusive(v, "the breaker was OPEN at the end and the time of the last observation is unknown")
			}
			if a.ObservedUntil.After(since) {
				total += a.serviceSeconds(a.ObservedUntil.Sub(since))
			}
		}
		v.Got, v.OK = formatGot(e.Metric, total), compare(total, e.Op, e.Number)
		return v
	}
	trials, passed := 0, 0
	for _, t := range a.Transitions {
		if t.From == "HALF_OPEN" && (t.To == "CLOSED" || t.To == "OPEN") {
			trials++
			if t.To == "CLOSED" {
				passed++
			}
		}
	}
	if trials == 0 {
		reason := "no half-open trial finished before the run ended"
		if firstOpen < 0 {
			reason = "the breaker never opened, so it held no half-open trial"
		}
		return inconclusive(v, reason)
	}
	got := trials
	if e.Metric == "half-open-trials-passed" {
		got = passed
	}
	v.Got, v.OK = strconv.Itoa(got), compare(float64(got), e.Op, e.Number)
	return v
}

// withEvidence adds what the latency and recovery metrics read to o: the
// arm's and phases' latency, its transitions, when its breaker was last
// observed, and the run's speed.
func withEvidence(o ArmOutcome, a *results.Arm, speed float64) ArmOutcome {
	o.Latency = a.Latency
	for i := range o.Phases {
		if i < len(a.Phases) {
			o.Phases[i].Latency = a.Phases[i].Latency
		}
	}
	o.Transitions = a.Transitions
	if a.Observation != nil {
		o.ObservedUntil = a.Observation.LastSample
	}
	o.Speed = speed
	return o
}

// unitSuffix is " ms", " s" or "" for want's text.
func unitSuffix(metric string) string {
	if u := metricUnit(metric); u != "" {
		return " " + u
	}
	return ""
}
