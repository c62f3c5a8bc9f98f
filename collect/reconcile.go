package collect

import (
	"fmt"
	"github.com/cbprobe/cbprobe/breaker"
	"math"
	"sort"
	"strings"
	"time"
)

// Answer is one request of the load as the service answered it, for
// reconciliation: when it was sent and answered (on the sampler's clock) and
// whether the service refused it because a breaker was open (a CIRCUIT_OPEN
// or CallNotPermitted answer).
type Answer struct {
	// Sent is when the request left; Done when its answer (or error) arrived.
	Sent, Done time.Time
	// Refused is true for an answer naming the open breaker.
	Refused bool
}

// ReconcileInput is what Reconcile checks against each other. Every time is
// on the sampler's clock (the clock the samples' ObservedAt is on).
type ReconcileInput struct {
	// Breaker is the breaker the verdict is about.
	Breaker BreakerKey
	// Samples are every good sample (any breaker), in poll order.
	Samples []BreakerSample
	// Transitions are the breaker's detected transitions (AnalyzeRecording).
	Transitions []Transition
	// Gaps are the stretches of failed polls (Gap.To zero: failing at the end).
	Gaps []Gap
	// Answers are the load's requests.
	Answers []Answer
	// Start is when the load started: messages give times as +seconds from it.
	Start time.Time
	// Interval is the time between two fresh observations: the poll interval,
	// or the server's scrape interval for a Prometheus server.
	Interval time.Duration
}

// GapReport is one stretch in which the breaker was not observed.
type GapReport struct {
	// From is the last good observation before it, To the first after it (zero: none after).
	From, To time.Time
	// Polls is the number of failed polls (0 for a stretch after the last poll).
	Polls int
	// Reason is the first error in it, or why polling stopped.
	Reason string
	// Refusals counts refused answers inside it.
	Refusals int
	// Decisive is true when the breaker's state may have changed unobserved in
	// it (refusals, a counter jump, different states before and after).
	Decisive bool
	// Why says what made it decisive.
	Why string
}

// Reconciliation is the verdict of Reconcile on the evidence of one arm.
type Reconciliation struct {
	// Inconclusive is true when the evidence disagrees or the breaker went
	// unobserved while its state may have changed: transitions cannot be trusted.
	Inconclusive bool
	// Reasons say why, each with its evidence.
	Reasons []string
	// Fix says what to change.
	Fix []string
	// Notes are remarks that do not weaken the verdict.
	Notes []string
	// Gaps are every stretch without observation.
	Gaps []GapReport
	// Inferred are transitions no poll or event showed, deduced from counters
	// (calls recorded while every sample said OPEN mean a HALF_OPEN trial ran).
	Inferred []Transition
	// Refusals counts refused answers; Samples the breaker's samples.
	Refusals, Samples int
	// LastSample is the observation time of the breaker's last sample (zero: none).
	LastSample time.Time
	// LastAnswer is the latest Done of the answers.
	LastAnswer time.Time
}

// SlowPoll is how many observation intervals a directly read poll may take
// before the time it took counts as a stretch without observation.
const SlowPoll = 3

// observedAt is when a sample's values were read at the service.
func observedAt(s BreakerSample) time.Time {
	if !s.ObservedAt.IsZero() {
		return s.ObservedAt
	}
	return s.Received
}

// Reconcile checks the service's answers, the breaker's counters, its state
// samples and transitions, and the polling record against each other. It is
// pure, and cheap enough to call after every poll (watch calls it on each pair
// of consecutive samples). The rules:
//   - a breaker never observed while requests ran is inconclusive, with the
//     polling errors as the cause; when no breaker was seen at all, the failed
//     polls are judged as gaps too (refusals in them are named with the time
//     the metrics went away);
//   - a gap without observation (failed polls, a direct poll slower than
//     SlowPoll intervals, or the stretch after the last sample up to the last
//     answer plus one Interval) is decisive when refusals
//     fall in it while the last state seen was CLOSED (or the state before and
//     after differ with no event timing the change, or the not-permitted
//     counter jumped): the arm is inconclusive; other gaps are only noted;
//   - refusals answered while every nearby sample (±Interval) said CLOSED
//     disagree with the samples: inconclusive (another breaker refused, or the
//     metrics lag);
//   - calls counted while two consecutive samples said OPEN mean an unseen
//     HALF_OPEN trial: the trial is inferred and the arm inconclusive.
func Reconcile(in ReconcileInput) Reconciliation {
	var r Reconciliation
	if in.Interval <= 0 {
		in.Interval = DefaultInterval
	}
	answers := append([]Answer(nil), in.Answers...)
	sort.Slice(answers, func(i, j int) bool { return answers[i].Sent.Before(answers[j].Sent) })
	for _, a := range answers {
		if a.Refused {
			r.Refusals++
		}
		if a.Done.After(r.LastAnswer) {
			r.LastAnswer = a.Done
		}
	}
	var own []BreakerSample
	seen := map[string]bool{}
	for _, s := range in.Samples {
		seen[s.Key().String()] = true
		if s.Key() == in.Breaker || in.Breaker.Instance == "" && s.Name == in.Breaker.Name {
			own = append(own, s)
		}
	}
	sort.SliceStable(own, func(i, j int) bool { return observedAt(own[i]).Before(observedAt(own[j])) })
	r.Samples = len(own)
	rel := func(t time.Time) string {
		if in.Start.IsZero() || t.IsZero() {
			return t.Format("15:04:05.000")
		}
		return fmt.Sprintf("+%.1f s", t.Sub(in.Start).Seconds())
	}
	inconclusive := func(reason, fix string) {
		r.Inconclusive = true
		r.Reasons = append(r.Reasons, reason)
		if fix != "" {
			r.Fix = appendOnce(r.Fix, fix)
		}
	}
	stateAt := func(t time.Time) (before, after *BreakerSample) {
		i := sort.Search(len(own), func(i int) bool { return observedAt(own[i]).After(t) })
		if i > 0 {
			before = &own[i-1]
		}
		if i < len(own) {
			after = &own[i]
		}
		return before, after
	}
	eventIn := func(from, to time.Time) bool {
		for _, t := range in.Transitions {
			if t.TimeSource == TimeFromEvent && !t.Time.Before(from) && (to.IsZero() || !t.Time.After(to)) {
				return true
			}
		}
		return false
	}
	// Stretches without observation: failed polls, and the tail after the last sample.
	var stretches []stretch
	for _, g := range in.Gaps {
		from := g.From
		if from.IsZero() {
			from = in.Start
		}
		reason := ""
		if len(g.Reasons) > 0 {
			reason = g.Reasons[0]
		}
		stretches = append(stretches, stretch{from: from, to: g.To, polls: g.Polls, reason: reason})
	}
	// openSeen reports whether the breaker was seen away from CLOSED at some
	// time in [from, to]: a transition whose bounds meet the span, or a sample in it.
	openSeen := func(from, to time.Time) bool {
		for _, t := range in.Transitions {
			if t.To != "CLOSED" && !t.Latest.Before(from) && !t.Earliest.After(to) {
				return true
			}
		}
		for i := range own {
			if t := observedAt(own[i]); !t.Before(from) && !t.After(to) && own[i].State != "CLOSED" && own[i].State != "" {
				return true
			}
		}
		return false
	}
	// judge reports one stretch: decisive (the arm is inconclusive) when the
	// breaker's state may have changed in it, else only noted. A refusal counts
	// in a stretch only if nothing outside it explains it: a request sent in the
	// gap but refused after an OPEN was seen (its retry met the open breaker)
	// is not evidence of an unseen transition.
	judge := func(s stretch) {
		g := GapReport{From: s.from, To: s.to, Polls: s.polls, Reason: s.reason}
		end := s.to
		if end.IsZero() {
			end = r.LastAnswer.Add(time.Nanosecond)
		}
		successes := 0
		for _, a := range answers {
			if a.Done.After(s.from) && a.Sent.Before(end) {
				if a.Refused {
					if !openSeen(a.Sent, a.Done) {
						g.Refusals++
					}
				} else {
					successes++
				}
			}
		}
		before, after := stateAt(s.from)
		if before == nil {
			before = after
		}
		if !s.to.IsZero() {
			_, after = stateAt(s.to.Add(-time.Nanosecond))
		} else {
			after = nil
		}
		closedBefore := before == nil || before.State == "CLOSED" || before.State == ""
		// The sample before the stretch read its values somewhere between its
		// poll's start and its answer: an event from that span also times the
		// change (a poll that read HALF_OPEN, then answered after the OPEN event).
		lo := s.from
		if before != nil && !before.Sent.IsZero() && before.Sent.Before(lo) {
			lo = before.Sent
		}
		switch {
		case eventIn(lo, s.to) && g.Refusals > 0:
			// the service's events timed what the polls missed
		case g.Refusals > 0 && closedBefore:
			g.Decisive, g.Why = true, fmt.Sprintf("%d refusals, no OPEN seen", g.Refusals)
		case after != nil && before != nil && after.State != before.State && !eventIn(lo, s.to):
			g.Decisive, g.Why = true, fmt.Sprintf("the state went from %s to %s unobserved", before.State, after.State)
		case after != nil && before != nil && counterJump(before, after):
			g.Decisive, g.Why = true, fmt.Sprintf("the not-permitted counter rose by %.0f unobserved", after.NotPermittedTotal-before.NotPermittedTotal)
		case after == nil && before != nil && before.State == "OPEN" && successes > 0 && !eventIn(lo, s.to):
			g.Decisive, g.Why = true, fmt.Sprintf("%d calls answered after the last sample said OPEN: a HALF_OPEN trial went unobserved", successes)
		}
		r.Gaps = append(r.Gaps, g)
		where := "metrics unreachable from " + rel(s.from)
		if s.polls == 0 {
			where = "polling ended at " + rel(s.from)
		} else if !s.to.IsZero() {
			where += " to " + rel(s.to)
		}
		if s.reason != "" {
			where += " (" + s.reason + ")"
		}
		if g.Decisive {
			inconclusive(g.Why+": "+where, fixFor([]string{s.reason}, false))
		} else if s.polls > 0 || g.Refusals > 0 {
			r.Notes = append(r.Notes, fmt.Sprintf("%s; nothing that could change the state happened in it", where))
		}
	}
	if len(own) == 0 {
		if len(answers) == 0 {
			return r
		}
		// Polls that failed while requests ran are judged like any gap, so
		// refusals in them are named with the time the metrics went away
		// (the breaker may never have been seen because the metrics went
		// away before the first poll answered).
		if len(seen) == 0 {
			for _, s := range stretches {
				judge(s)
			}
		}
		decisive := r.Inconclusive
		cause := fmt.Sprintf("breaker %s was never observed", in.Breaker)
		if in.Breaker == (BreakerKey{}) {
			cause = "no breaker was ever observed"
		}
		var errs []string
		for _, g := range in.Gaps {
			errs = append(errs, g.Reasons...)
		}
		switch {
		case len(errs) > 0 && len(seen) == 0 && decisive:
			cause += " (found: no breaker at all)" // the gap above names the errors
		case len(errs) > 0 && len(seen) == 0:
			cause += " (found: no breaker at all): every poll failed (" + strings.Join(firstN(errs, 3), "; ") + ")"
		case len(seen) > 0:
			names := make([]string, 0, len(seen))
			for n := range seen {
				names = append(names, n)
			}
			sort.Strings(names)
			cause += " (found: " + strings.Join(names, ", ") + "; set --breaker)"
		default:
			cause += " (found: no breaker at all)"
		}
		if r.Refusals > 0 && !decisive {
			cause += fmt.Sprintf("; the service refused %d requests as CIRCUIT_OPEN meanwhile", r.Refusals)
		}
		inconclusive(cause, fixFor(errs, len(seen) > 0))
		return r
	}
	r.LastSample = observedAt(own[len(own)-1])
	// A poll read directly (not stamped by a server) that took more than
	// SlowPoll observation intervals to answer read its values at an unknown
	// moment between its start and its answer: from the sample before it to
	// its answer the breaker went unobserved (a metrics endpoint that answers
	// part of a poll and hangs on the rest).
	for i, s := range own {
		d := s.Received.Sub(s.Sent)
		if s.Sent.IsZero() || !observedAt(s).Equal(s.Received) || d <= SlowPoll*in.Interval {
			continue
		}
		reason := fmt.Sprintf("a poll took %.1f s to answer", d.Seconds())
		merged := false
		for j := range stretches { // the failed polls just before it
			if stretches[j].to.Equal(s.Sent) {
				stretches[j].to, merged = s.Received, true
				stretches[j].reason = strings.TrimPrefix(stretches[j].reason+"; "+reason, "; ")
			}
		}
		if merged {
			continue
		}
		from := in.Start
		if i > 0 {
			from = observedAt(own[i-1])
		}
		stretches = append(stretches, stretch{from: from, to: s.Received, polls: 1, reason: reason})
	}
	if need := r.LastAnswer.Add(in.Interval); r.LastSample.Before(need) && !r.LastAnswer.IsZero() {
		covered := false
		for _, s := range stretches {
			if s.to.IsZero() {
				covered = true
			}
		}
		if !covered {
			stretches = append(stretches, stretch{from: r.LastSample, reason: fmt.Sprintf(
				"no sample newer than the last answer (%s) plus one observation interval (%s): the last was at %s",
				rel(r.LastAnswer), in.Interval, rel(r.LastSample))})
		}
	}
	for _, s := range stretches {
		judge(s)
	}
	// Refusals while the samples around them said CLOSED. A refusal after a
	// transition away from CLOSED (the latest one up to its answer, plus one
	// Interval) is explained by it, whatever a stale sample around it says
	// (a slow poll reads CLOSED before the transition and answers after it).
	trs := append([]Transition(nil), in.Transitions...)
	sort.SliceStable(trs, func(i, j int) bool { return trs[i].Time.Before(trs[j].Time) })
	unexplained, firstAt := 0, time.Time{}
	for _, a := range answers {
		if !a.Refused || inAny(r.Gaps, a) {
			continue
		}
		i := sort.Search(len(trs), func(i int) bool { return trs[i].Time.After(a.Done.Add(in.Interval)) })
		open := i > 0 && trs[i-1].To != "CLOSED"
		for i := range own {
			t := observedAt(own[i])
			if t.Before(a.Sent.Add(-in.Interval)) || t.After(a.Done.Add(in.Interval)) {
				continue
			}
			if st := own[i].State; st != "CLOSED" && st != "" {
				open = true
				break
			}
		}
		for _, t := range in.Transitions {
			if t.To != "CLOSED" && !t.Latest.Before(a.Sent.Add(-in.Interval)) && !t.Earliest.After(a.Done.Add(in.Interval)) {
				open = true
			}
		}
		if !open {
			if unexplained == 0 {
				firstAt = a.Sent
			}
			unexplained++
		}
	}
	if unexplained > 0 {
		inconclusive(fmt.Sprintf("%d refusals from %s while every sample of %s around them said CLOSED: the refusals come from another breaker, or the metrics lag the service",
			unexplained, rel(firstAt), in.Breaker),
			"check --breaker names the breaker that refuses (the service's CIRCUIT_OPEN answers name it), and that the metrics source reads the same service")
	}
	// Calls recorded between two samples that both said OPEN: an unseen trial.
	for i := 1; i < len(own); i++ {
		p, c := own[i-1], own[i]
		if p.State != "OPEN" || c.State != "OPEN" || eventIn(observedAt(p), observedAt(c)) {
			continue
		}
		calls := func(s BreakerSample) float64 { return s.CallsSuccessful + s.CallsFailed }
		if d := calls(c) - calls(p); d > 0 && !math.IsNaN(d) {
			tr := Transition{Breaker: in.Breaker, From: "OPEN", To: "HALF_OPEN", Earliest: observedAt(p), Latest: observedAt(c),
				TimeSource: TimeFromPoll, Inferred: true, Reason: fmt.Sprintf("%.0f calls were recorded while both samples said OPEN", d)}
			tr.Time = tr.Earliest.Add(tr.Latest.Sub(tr.Earliest) / 2)
			back := tr
			back.From, back.To, back.Cause = "HALF_OPEN", "OPEN", breaker.CauseHalfOpenTrial
			r.Inferred = append(r.Inferred, tr, back)
			inconclusive(fmt.Sprintf("%.0f calls recorded between %s and %s while every sample said OPEN: a HALF_OPEN trial (or more) ran unobserved",
				d, rel(observedAt(p)), rel(observedAt(c))),
				"observe more often than the breaker's half-open trials last (a shorter --poll-interval, or Prometheus' scrape_interval)")
		}
	}
	return r
}

// stretch is a span in which the breaker was not observed: failed polls
// (polls > 0), or the time after the last sample (polls 0).
type stretch struct {
	from, to time.Time
	polls    int
	reason   string
}

// counterJump reports whether the monotonic not-permitted counter rose
// between two samples that both said CLOSED (refusals nobody saw).
func counterJump(before, after *BreakerSample) bool {
	d := after.NotPermittedTotal - before.NotPermittedTotal
	return before.State == "CLOSED" && after.State == "CLOSED" && d > 0 && !math.IsNaN(d)
}

func inAny(gaps []GapReport, a Answer) bool {
	for _, g := range gaps {
		if a.Done.After(g.From) && (g.To.IsZero() || a.Sent.Before(g.To)) {
			return true
		}
	}
	return false
}

func firstN(l []string, n int) []string {
	out := []string{}
	for _, s := range l {
		if !contains(out, s) {
			out = append(out, s)
		}
		if len(out) == n {
			break
		}
	}
	return out
}

// fixFor names the fix of the polling errors seen, or the generic one.
func fixFor(errs []string, otherBreakers bool) string {
	all := strings.Join(errs, " ")
	switch {
	case strings.Contains(all, "show-details"):
		return "set management.endpoint.health.show-details=always (or expose /actuator/circuitbreakers) on the service"
	case strings.Contains(all, "HTML"), strings.Contains(all, "not JSON"):
		return "point the metrics URL at the actuator (…/actuator), not at a page or a login form"
	case strings.Contains(all, "unexpected end"), strings.Contains(all, "truncated"), strings.Contains(all, "EOF"):
		return "the metrics endpoint cut its answers short: check the proxy or server in front of it"
	case strings.Contains(all, "refused"), strings.Contains(all, "timeout"), strings.Contains(all, "deadline"):
		return "keep the metrics endpoint reachable for the whole run (and a while after the last request)"
	case otherBreakers:
		return "set --breaker to the breaker the service uses"
	case len(errs) > 0:
		return "make the metrics endpoint answer for the whole run"
	}
	return "read the metrics until a sample newer than the last request arrives (a Prometheus server needs one scrape interval more)"
}
