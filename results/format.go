package results

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// pct formats a fraction as a percentage with one decimal, e.g. "94.9%".
func pct(f float64) string { return strconv.FormatFloat(f*100, 'f', 1, 64) + "%" }

// rate formats a percent value read from a breaker; Unknown reads "?".
func rate(v float64) string {
	if v < 0 || math.IsNaN(v) {
		return "?"
	}
	return strconv.FormatFloat(v, 'f', 1, 64) + "%"
}

// num formats a float with at most two decimals and no trailing zeros.
func num(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "?"
	}
	return strconv.FormatFloat(math.Round(v*100)/100, 'f', -1, 64)
}

// seconds formats d as seconds with one decimal, e.g. "12.5s".
func seconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + "s"
}

// reqRate formats requests per second: "15/s", or "pause" for 0.
func reqRate(r float64) string {
	if r == 0 {
		return "pause"
	}
	return num(r) + "/s"
}

// phaseRate is the rate column of a phase row: empty for the total row and for
// sequential traffic, which has no rate and no duration.
func phaseRate(p PhaseStats, total bool) string {
	if total || (p.Rate == 0 && p.Duration == 0) {
		return ""
	}
	return reqRate(p.Rate)
}

// countShare formats n and its share of total: "40 (20.0%)".
func countShare(n, total int) string {
	if total == 0 {
		return strconv.Itoa(n)
	}
	return fmt.Sprintf("%d (%s)", n, pct(float64(n)/float64(total)))
}

// seqOrNone formats a 1-based request number; 0 reads "never".
func seqOrNone(n int) string {
	if n <= 0 {
		return "never"
	}
	return "#" + strconv.Itoa(n)
}

// relTime formats t relative to t0: "+12.3s"; absolute UTC when t0 is zero.
func relTime(t, t0 time.Time) string {
	if t.IsZero() {
		return "?"
	}
	if t0.IsZero() {
		return t.UTC().Format("15:04:05.000")
	}
	if d := t.Sub(t0); d < 0 {
		return "-" + seconds(-d)
	}
	return "+" + seconds(t.Sub(t0))
}

// causeEvidence is one line on the rates behind a transition, e.g.
// "failure 40.0% (threshold 60.0%), slow 62.5% (threshold 50.0%) from events".
func causeEvidence(e Evidence) string {
	parts := []string{}
	if e.FailureRate >= 0 || e.FailureRateThreshold >= 0 {
		parts = append(parts, fmt.Sprintf("failure %s (threshold %s)", rate(e.FailureRate), rate(e.FailureRateThreshold)))
	}
	if e.SlowCallRate >= 0 || e.SlowCallRateThreshold >= 0 {
		parts = append(parts, fmt.Sprintf("slow %s (threshold %s)", rate(e.SlowCallRate), rate(e.SlowCallRateThreshold)))
	}
	s := strings.Join(parts, ", ")
	if e.Source != "" && e.Source != "none" {
		if s != "" {
			s += " "
		}
		s += "from " + e.Source
	}
	return s
}

// runStatus is "complete", "interrupted: reason" or "partial: reason".
func runStatus(r *Run) string {
	switch {
	case r.Complete && r.Decide() == VerdictInconclusive:
		return "inconclusive (the run finished, but cbprobe could not observe enough to decide)"
	case r.Complete:
		return "complete"
	case r.Interrupted:
		return strings.TrimSpace("interrupted " + paren(r.Reason))
	default:
		return strings.TrimSpace("partial " + paren(r.Reason))
	}
}

func paren(s string) string {
	if s == "" {
		return ""
	}
	return "(" + s + ")"
}

// runDuration is Ended-Started, 0 when either is unknown.
func runDuration(r *Run) time.Duration {
	if r.Started.IsZero() || r.Ended.IsZero() {
		return 0
	}
	return r.Ended.Sub(r.Started)
}

// observationLines are an inconclusive arm's reasons and fixes, one a line.
func observationLines(a *Arm) []string {
	if !a.Inconclusive() {
		return nil
	}
	var out []string
	for _, r := range a.Observation.Reasons {
		out = append(out, "inconclusive: "+r)
	}
	for _, f := range a.Observation.Fix {
		out = append(out, "fix: "+f)
	}
	return out
}

// expectationDetail is "got X, want Y: message" with empty parts left out.
func expectationDetail(e Expectation) string {
	var parts []string
	if e.Got != "" {
		parts = append(parts, "got "+e.Got)
	}
	if e.Want != "" {
		parts = append(parts, "want "+e.Want)
	}
	s := strings.Join(parts, ", ")
	if e.Message != "" {
		if s != "" {
			s += ": "
		}
		s += e.Message
	}
	return s
}

// firstOpenText is "first OPEN at request #N" or "never opened".
func firstOpenText(a *Arm) string {
	if a.FirstOpenRequest <= 0 {
		return "never opened"
	}
	return "first OPEN at request " + seqOrNone(a.FirstOpenRequest)
}

// firstRejectedText is "first rejected request #N" or "no request rejected".
func firstRejectedText(a *Arm) string {
	if a.FirstRejectedRequest <= 0 {
		return "no request rejected"
	}
	return "first rejected request " + seqOrNone(a.FirstRejectedRequest)
}
