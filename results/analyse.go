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

// MarkRequests sets each transition's Request (the first request sent at or
// after it) and FirstOpenRequest (the request in flight when the breaker first
// went from CLOSED to OPEN: the last one sent at or before that transition,
// which in a sequential run is the request whose gateway call opened it) from
// the arm's requests in reqs.
func (a *Arm) MarkRequests(reqs []Request) {
	a.FirstOpenRequest = 0
	for i := range a.Transitions {
		tr := &a.Transitions[i]
		tr.Request = FirstSentAtOrAfter(reqs, a.Name, tr.At)
		if tr.From == "CLOSED" && tr.To == "OPEN" && a.FirstOpenRequest == 0 {
			a.FirstOpenRequest = LastSentAtOrBefore(reqs, a.Name, tr.At)
		}
	}
}

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
	slices.Sort(ms)
	return LatencyStats{P50: quantile(ms, 0.50), P95: quantile(ms, 0.95), P99: quantile(ms, 0.99),
		Max: ms[len(ms)-1], Mean: sum / float64(len(ms))}
}
