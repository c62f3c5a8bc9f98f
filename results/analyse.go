package results

import (
	"slices"
	"time"
)

// sentAt is when r was sent, or its intended send time when Sent is zero.
func (r Request) sentAt() time.Time {
	if r.Sent.IsZero() {
		return r.Intended
	}
	return r.Sent
}

// answeredAt is when the answer came: the send time plus the latency (nil-safe).
func (r *Request) answeredAt() time.Time {
	if r == nil {
		return time.Time{}
	}
	return r.sentAt().Add(r.Latency)
}

// FirstSentAtOrAfter returns the smallest Seq among the requests of arm sent
// at or after t (intended time when Sent is zero); 0 if there is none. An
// empty arm matches every request.
func FirstSentAtOrAfter(reqs []Request, arm string, t time.Time) int {
	first := 0
	for _, r := range reqs {
		if arm != "" && r.Arm != arm {
			continue
		}
		at := r.sentAt()
		if !at.Before(t) && r.Seq > 0 && (first == 0 || r.Seq < first) {
			first = r.Seq
		}
	}
	return first
}

// LastSentAtOrBefore returns the largest Seq among the requests of arm sent at
// or before t (intended time when Sent is zero): the request in flight at t in
// a sequential run. 0 if there is none. An empty arm matches every request.
func LastSentAtOrBefore(reqs []Request, arm string, t time.Time) int {
	last := 0
	for _, r := range reqs {
		if arm != "" && r.Arm != arm {
			continue
		}
		at := r.sentAt()
		if !at.After(t) && r.Seq > last {
			last = r.Seq
		}
	}
	return last
}

// MarkRequests sets FirstRejectedRequest, each transition's Request and
// FirstOpenRequest from the arm's requests in reqs, with one definition used
// everywhere (headline, transitions table, run.json):
//
// A transition's request is the last request sent at or before the moment the
// transition happened (in a sequential run, the request whose gateway call
// caused it; in open-model traffic, the last one to leave before it). The
// moment is the transition's estimated time, except that a breaker that
// refused a request was open when that request arrived: a transition into
// OPEN estimated after the first refusal that follows it is moved back to
// just before that refusal. So the first OPEN request is always smaller than
// the first rejected request, and FirstOpenRequest equals the Request of the
// first CLOSED→OPEN transition.
func (a *Arm) MarkRequests(reqs []Request) {
	a.FirstOpenRequest = 0
	var firstRej *Request
	for i := range reqs {
		r := &reqs[i]
		if r.Arm != a.Name && a.Name != "" || r.Outcome != OutcomeRejected || r.Seq <= 0 {
			continue
		}
		if firstRej == nil || r.Seq < firstRej.Seq {
			firstRej = r
		}
	}
	if firstRej != nil && (a.FirstRejectedRequest == 0 || firstRej.Seq < a.FirstRejectedRequest) {
		a.FirstRejectedRequest = firstRej.Seq
	}
	opened := false
	for i := range a.Transitions {
		tr := &a.Transitions[i]
		at := tr.At
		if tr.To == "OPEN" && !opened && firstRej != nil && !at.Before(firstRej.answeredAt()) {
			// Seen only after the first refusal was answered (a polled state): the
			// refusal proves the breaker was already open, so the OPEN goes before
			// that request. An OPEN seen before the refusal's answer keeps its time
			// even when the request was sent earlier: a retry of a request sent
			// while the breaker was closed can meet it open.
			at = firstRej.sentAt().Add(-time.Nanosecond)
		}
		if tr.To == "OPEN" {
			opened = true
		}
		tr.Request = LastSentAtOrBefore(reqs, a.Name, at)
		if tr.From == "CLOSED" && tr.To == "OPEN" && a.FirstOpenRequest == 0 {
			a.FirstOpenRequest = tr.Request
		}
	}
}

// FirstOpen returns the arm's first CLOSED→OPEN transition, nil when the
// breaker never went from CLOSED to OPEN. It is the one definition of "first
// OPEN": FirstOpenRequest is its Request (MarkRequests), and the summaries and
// expectations (cause=...) read its Cause through FirstOpenCause.
func (a *Arm) FirstOpen() *Transition {
	for i := range a.Transitions {
		if t := &a.Transitions[i]; t.From == "CLOSED" && t.To == "OPEN" {
			return t
		}
	}
	return nil
}

// FirstOpenCause is the first OPEN's cause: "unknown" when cbprobe could not
// label it, "" when the breaker never went from CLOSED to OPEN.
func (a *Arm) FirstOpenCause() string {
	t := a.FirstOpen()
	switch {
	case t == nil:
		return ""
	case t.Cause == "":
		return CauseUnknown
	}
	return t.Cause
}

// CauseUnknown labels an OPEN whose cause cbprobe did not see; the value of
// breaker.CauseUnknown (Transition.Cause holds breaker.OpenCause values).
const CauseUnknown = "unknown"

// LatencyOf returns the latency percentiles (nearest rank) and mean of the
// requests of arm in reqs, in milliseconds; zero when there are none. An
// empty arm takes every request.
func LatencyOf(reqs []Request, arm string) LatencyStats {
	var ms []float64
	sum := 0.0
	for _, r := range reqs {
		if arm != "" && r.Arm != arm {
			continue
		}
		v := float64(r.Latency) / float64(time.Millisecond)
		ms = append(ms, v)
		sum += v
	}
	if len(ms) == 0 {
		return LatencyStats{}
	}
	return latencyStats(ms, sum)
}

// latencyStats sorts ms (milliseconds) and returns its percentiles and mean.
func latencyStats(ms []float64, sum float64) LatencyStats {
	if len(ms) == 0 {
		return LatencyStats{}
	}
	slices.Sort(ms)
	return LatencyStats{P50: quantile(ms, 0.50), P90: quantile(ms, 0.90), P95: quantile(ms, 0.95), P99: quantile(ms, 0.99),
		Max: ms[len(ms)-1], Mean: sum / float64(len(ms))}
}

// SetLatency sets the arm's latency percentiles (LatencyOf) and each of its
// phases' from the arm's requests in reqs, matched to phases by name.
func (a *Arm) SetLatency(reqs []Request) {
	a.Latency = LatencyOf(reqs, a.Name)
	ms := map[string][]float64{}
	sum := map[string]float64{}
	for _, r := range reqs {
		if r.Arm != a.Name {
			continue
		}
		v := float64(r.Latency) / float64(time.Millisecond)
		ms[r.Phase] = append(ms[r.Phase], v)
		sum[r.Phase] += v
	}
	for i := range a.Phases {
		p := &a.Phases[i]
		p.Latency = latencyStats(ms[p.Name], sum[p.Name])
	}
}
