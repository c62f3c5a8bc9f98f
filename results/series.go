package results

import (
	"math"
	"slices"
	"sort"
	"time"
)

// StateBand is a span of time, in seconds from the run start, in one breaker state.
type StateBand struct {
	// From and To are seconds from the run start.
	From float64 `json:"from"`
	To   float64 `json:"to"`
	// State is the breaker state during the band.
	State string `json:"state"`
}

// RatePoint is one poll's failure and slow-call rate in percent (Unknown -1), at T seconds.
type RatePoint struct {
	// T is seconds from the run start.
	T float64 `json:"t"`
	// Fail and Slow are the failure and slow-call rates in percent.
	Fail float64 `json:"fail"`
	Slow float64 `json:"slow"`
}

// SecondBucket holds the requests sent during second T (from the run start):
// outcome counts and latency percentiles in milliseconds.
type SecondBucket struct {
	// T is the second from the run start.
	T int `json:"t"`
	// Succeeded, Rejected and Failed count the requests sent in that second.
	Succeeded int `json:"ok"`
	Rejected  int `json:"rej"`
	Failed    int `json:"fail"`
	// P50, P95 and P99 are their latency percentiles in milliseconds.
	P50 float64 `json:"p50"`
	P95 float64 `json:"p95"`
	P99 float64 `json:"p99"`
}

// OpenMark is one transition into OPEN for the charts, T seconds from the start.
type OpenMark struct {
	// T is seconds from the run start.
	T float64 `json:"t"`
	// From and To are the transition's states.
	From string `json:"from"`
	To   string `json:"to"`
	// Cause is the transition's cause label.
	Cause string `json:"cause"`
	// Evidence is the rates behind it as one line of text.
	Evidence string `json:"evidence"`
	// Uncertainty says what weakens the label.
	Uncertainty string `json:"uncertainty,omitempty"`
}

// ArmSeries is the time-series view of one arm, as the HTML report draws it.
type ArmSeries struct {
	// Name is the arm name; Breaker the breaker drawn.
	Name    string `json:"name"`
	Breaker string `json:"breaker,omitempty"`
	// Duration is the span drawn, in seconds from the run start.
	Duration float64 `json:"duration"`
	// Thresholds are the rate thresholds drawn as dashed lines (percent).
	Thresholds Thresholds `json:"thresholds"`
	// States are the breaker state bands.
	States []StateBand `json:"states"`
	// Rates are the polled failure and slow-call rates.
	Rates []RatePoint `json:"rates"`
	// Seconds are per-second request outcomes and latencies.
	Seconds []SecondBucket `json:"seconds"`
	// Opens are the transitions into OPEN with their causes.
	Opens []OpenMark `json:"opens"`
}

// Origin is the time the series count from: run.Started, else the earliest
// request or sample time.
func (r *Record) Origin() time.Time {
	if !r.Run.Started.IsZero() {
		return r.Run.Started
	}
	var t0 time.Time
	consider := func(t time.Time) {
		if !t.IsZero() && (t0.IsZero() || t.Before(t0)) {
			t0 = t
		}
	}
	for _, q := range r.Requests {
		consider(q.Intended)
		consider(q.Sent)
	}
	for _, s := range r.Samples {
		consider(s.Time)
	}
	return t0
}

// Series builds the time-series view of the arm at index i of r.Run.Arms.
func (r *Record) Series(i int) ArmSeries {
	arm := &r.Run.Arms[i]
	t0 := r.Origin()
	sec := func(t time.Time) float64 { return t.Sub(t0).Seconds() }
	s := ArmSeries{Name: arm.Name, Breaker: arm.Breaker, Thresholds: arm.Thresholds,
		States: []StateBand{}, Rates: []RatePoint{}, Seconds: []SecondBucket{}, Opens: []OpenMark{}}
	end := 0.0
	if !r.Run.Ended.IsZero() {
		end = sec(r.Run.Ended)
	}

	// Requests: per-second outcome counts and latency percentiles.
	buckets := map[int]*SecondBucket{}
	lat := map[int][]float64{}
	for _, q := range r.Requests {
		if q.Arm != arm.Name {
			continue
		}
		t := sec(q.sentAt())
		end = math.Max(end, t+q.Latency.Seconds())
		k := int(math.Floor(t))
		b := buckets[k]
		if b == nil {
			b = &SecondBucket{T: k}
			buckets[k] = b
		}
		switch q.Outcome {
		case OutcomeSucceeded:
			b.Succeeded++
		case OutcomeRejected:
			b.Rejected++
		default:
			b.Failed++
		}
		lat[k] = append(lat[k], float64(q.Latency)/float64(time.Millisecond))
	}
	for k, b := range buckets {
		l := lat[k]
		slices.Sort(l)
		b.P50, b.P95, b.P99 = quantile(l, 0.50), quantile(l, 0.95), quantile(l, 0.99)
		s.Seconds = append(s.Seconds, *b)
	}
	sort.Slice(s.Seconds, func(a, b int) bool { return s.Seconds[a].T < s.Seconds[b].T })

	// Samples of the arm's breaker (the first one seen when the arm names none).
	breaker := arm.Breaker
	type change struct {
		t     float64
		state string
	}
	var changes []change
	for _, p := range r.Samples {
		if p.Arm != arm.Name {
			continue
		}
		if breaker == "" {
			breaker = p.Breaker
		}
		if p.Breaker != breaker {
			continue
		}
		t := sec(p.Time)
		end = math.Max(end, t)
		s.Rates = append(s.Rates, RatePoint{T: t, Fail: p.FailureRate, Slow: p.SlowCallRate})
		changes = append(changes, change{t, p.State})
		if s.Thresholds == (Thresholds{}) || s.Thresholds.FailureRate < 0 && p.FailureRateThreshold >= 0 {
			s.Thresholds = Thresholds{FailureRate: p.FailureRateThreshold, SlowCallRate: p.SlowCallRateThreshold}
		}
	}
	s.Breaker = breaker
	for _, t := range arm.Transitions {
		at := sec(t.At)
		end = math.Max(end, at)
		changes = append(changes, change{at, t.To})
		if t.To == "OPEN" || t.To == "FORCED_OPEN" {
			s.Opens = append(s.Opens, OpenMark{T: at, From: t.From, To: t.To, Cause: t.Cause,
				Evidence: causeEvidence(t.Evidence), Uncertainty: t.Uncertainty})
		}
	}
	sort.SliceStable(changes, func(a, b int) bool { return changes[a].t < changes[b].t })
	for _, c := range changes {
		if c.state == "" {
			continue
		}
		if n := len(s.States); n > 0 && s.States[n-1].State == c.state {
			continue
		}
		if n := len(s.States); n > 0 {
			s.States[n-1].To = c.t
		}
		s.States = append(s.States, StateBand{From: c.t, To: c.t, State: c.state})
	}
	if n := len(s.States); n > 0 {
		s.States[n-1].To = math.Max(end, s.States[n-1].From)
	}
	s.Duration = math.Max(end, 1)
	return s
}

// quantile returns the q-quantile of sorted values (nearest rank), 0 when empty.
func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}
