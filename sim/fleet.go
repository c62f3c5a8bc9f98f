package sim

import (
	"fmt"
	"slices"
	"time"

	"github.com/cbprobe/cbprobe/breaker"
)

// InstancePrediction aggregates one replica of a fleet over the runs
// (Arm.Replicas > 1). Request numbers are 1-based: "fleet" numbers count every
// request in the entry point's send order, "local" numbers only those the
// balancer routed to this replica.
type InstancePrediction struct {
	// Instance is the 1-based replica.
	Instance int `json:"instance"`
	// Requests is the number of requests routed to the replica per run.
	Requests Band `json:"requests"`
	// FirstOpenRequest (fleet number) and FirstOpenLocal (local number) are the
	// requests sent by the replica's first CLOSED -> OPEN, over the runs in which
	// it opened (Band.Share says how many); FirstOpenSeconds is when, in seconds
	// since the start.
	FirstOpenRequest Band `json:"firstOpenRequest"`
	FirstOpenLocal   Band `json:"firstOpenLocal"`
	FirstOpenSeconds Band `json:"firstOpenSeconds"`
	// FirstRejectedRequest and FirstRejectedLocal are the first request the
	// replica ended rejected, by fleet and by local number.
	FirstRejectedRequest Band `json:"firstRejectedRequest"`
	FirstRejectedLocal   Band `json:"firstRejectedLocal"`
	// OpenCauses is the share of the replica's first OPENs by cause.
	OpenCauses map[breaker.OpenCause]float64 `json:"openCauses"`
	// Transitions are the replica's transitions, as Prediction.Transitions.
	Transitions []TransitionStat `json:"transitions"`
	// RejectedShare is the share of the replica's requests it rejected, pooled
	// over the runs; RejectedBand is the per-run band.
	RejectedShare float64 `json:"rejectedShare"`
	RejectedBand  Band    `json:"rejectedBand"`
	// OpenShare is the per-run share of the observed time (FleetResult.Horizon)
	// the replica's breaker spent OPEN.
	OpenShare Band `json:"openShare"`
}

// FleetPhaseStat is how many replicas were OPEN during one phase.
type FleetPhaseStat struct {
	// Name is the phase's name.
	Name string `json:"name"`
	// MeanOpen is the time-weighted mean number of OPEN replicas in the phase,
	// pooled over the runs; MeanOpenBand is the per-run band.
	MeanOpen     float64 `json:"meanOpen"`
	MeanOpenBand Band    `json:"meanOpenBand"`
	// AnyOpenShare and AllOpenShare are the pooled shares of the phase's time
	// in which at least one replica, and every replica, was OPEN.
	AnyOpenShare float64 `json:"anyOpenShare"`
	AllOpenShare float64 `json:"allOpenShare"`
}

// FleetPrediction is the entry point's view of a fleet over the runs
// (Arm.Replicas > 1). The fleet's refused share per phase and overall, with
// their bands, are Prediction.Phases and Prediction.RejectedShare /
// RejectedBand; the first request refused by any replica is
// Prediction.FirstRejectedRequest and the first OPEN of any replica
// Prediction.FirstOpenRequest.
type FleetPrediction struct {
	// Replicas and Balance repeat the arm's.
	Replicas int     `json:"replicas"`
	Balance  Balance `json:"balance"`
	// OpenCount[k] is the share of the observed time, pooled over the runs, in
	// which exactly k replicas were OPEN (k = 0..Replicas; the shares sum to 1).
	OpenCount []float64 `json:"openCount"`
	// MeanOpen is the time-weighted mean number of OPEN replicas over the whole
	// run, pooled; MeanOpenBand is the per-run band.
	MeanOpen     float64 `json:"meanOpen"`
	MeanOpenBand Band    `json:"meanOpenBand"`
	// Phases has one entry per phase.
	Phases []FleetPhaseStat `json:"phases"`
	// InstancesOpened is the per-run number of replicas that opened at least once.
	InstancesOpened Band `json:"instancesOpened"`
}

// aggregateFleet fills p.Instances and p.Fleet from fleet runs.
func aggregateFleet(arm *Arm, results []RunResult, p *Prediction) {
	n := len(results)
	nInst := arm.Instances()
	p.Instances = make([]InstancePrediction, nInst)
	for i := range nInst {
		p.Instances[i] = aggregateInstance(results, i, n)
	}
	f := &FleetPrediction{Replicas: nInst, Balance: arm.Balance, OpenCount: make([]float64, nInst+1)}
	openTime := make([]float64, nInst+1)
	var horizon, openInst float64
	var meanOpen, opened []float64
	phaseN := len(results[0].Fleet.Phases)
	type acc struct {
		span, open, anyOpen, allOpen float64
		band                         []float64
	}
	phases := make([]acc, phaseN)
	for _, r := range results {
		fr := r.Fleet
		runOpen := 0.0
		for k, d := range fr.OpenTime {
			openTime[k] += d.Seconds()
			runOpen += float64(k) * d.Seconds()
		}
		horizon += fr.Horizon.Seconds()
		openInst += runOpen
		if fr.Horizon > 0 {
			meanOpen = append(meanOpen, runOpen/fr.Horizon.Seconds())
		}
		opened = append(opened, float64(fr.InstancesOpened))
		for i, ph := range fr.Phases {
			a := &phases[i]
			a.span += ph.Span.Seconds()
			a.open += ph.OpenInstanceTime.Seconds()
			a.anyOpen += ph.AnyOpenTime.Seconds()
			a.allOpen += ph.AllOpenTime.Seconds()
			if ph.Span > 0 {
				a.band = append(a.band, ph.OpenInstanceTime.Seconds()/ph.Span.Seconds())
			}
		}
	}
	if horizon > 0 {
		for k := range openTime {
			f.OpenCount[k] = openTime[k] / horizon
		}
		f.MeanOpen = openInst / horizon
	}
	f.MeanOpenBand = newBand(meanOpen, n)
	f.InstancesOpened = newBand(opened, n)
	for i, a := range phases {
		st := FleetPhaseStat{Name: results[0].Fleet.Phases[i].Name, MeanOpenBand: newBand(a.band, n)}
		if a.span > 0 {
			st.MeanOpen, st.AnyOpenShare, st.AllOpenShare = a.open/a.span, a.anyOpen/a.span, a.allOpen/a.span
		}
		f.Phases = append(f.Phases, st)
	}
	p.Fleet = f
	p.Notes = append(p.Notes, fleetNotes(arm, p)...)
}

// aggregateInstance aggregates replica i (0-based) over n runs.
func aggregateInstance(results []RunResult, i, n int) InstancePrediction {
	var reqs, firstOpen, firstLocal, firstAt, firstRej, firstRejLocal, rejShare, openShare []float64
	causes := map[breaker.OpenCause]int{}
	var totalReq, totalRej int
	type kindAcc struct {
		runs, count int
		first       []float64
	}
	kinds := map[string]*kindAcc{}
	for _, r := range results {
		in := r.Instances[i]
		reqs = append(reqs, float64(in.Requests))
		if in.FirstOpenCause != "" {
			firstOpen = append(firstOpen, float64(in.FirstOpenRequest))
			firstLocal = append(firstLocal, float64(in.FirstOpenLocal))
			firstAt = append(firstAt, in.FirstOpenAt.Seconds())
			causes[in.FirstOpenCause]++
		}
		if in.FirstRejectedRequest > 0 {
			firstRej = append(firstRej, float64(in.FirstRejectedRequest))
			firstRejLocal = append(firstRejLocal, float64(in.FirstRejectedLocal))
		}
		totalReq += in.Requests
		totalRej += in.Rejected
		if in.Requests > 0 {
			rejShare = append(rejShare, float64(in.Rejected)/float64(in.Requests))
		}
		if h := r.Fleet.Horizon; h > 0 {
			openShare = append(openShare, in.OpenTime.Seconds()/h.Seconds())
		}
		seen := map[string]bool{}
		for _, t := range r.Transitions {
			if t.Instance != i+1 {
				continue
			}
			k := kinds[t.Kind]
			if k == nil {
				k = &kindAcc{}
				kinds[t.Kind] = k
			}
			k.count++
			if !seen[t.Kind] {
				seen[t.Kind] = true
				k.runs++
				k.first = append(k.first, float64(t.At))
			}
		}
	}
	ip := InstancePrediction{Instance: i + 1, Requests: newBand(reqs, n),
		FirstOpenRequest: newBand(firstOpen, n), FirstOpenLocal: newBand(firstLocal, n), FirstOpenSeconds: newBand(firstAt, n),
		FirstRejectedRequest: newBand(firstRej, n), FirstRejectedLocal: newBand(firstRejLocal, n),
		RejectedBand: newBand(rejShare, n), OpenShare: newBand(openShare, n), OpenCauses: map[breaker.OpenCause]float64{}}
	for _, c := range breaker.RateCauses() {
		ip.OpenCauses[c] = 0
	}
	for c, k := range causes {
		ip.OpenCauses[c] = float64(k) / float64(len(firstOpen))
	}
	if totalReq > 0 {
		ip.RejectedShare = float64(totalRej) / float64(totalReq)
	}
	order := transitionOrder()
	for k := range kinds {
		if !slices.Contains(order, k) {
			order = append(order, k)
		}
	}
	slices.Sort(order[len(transitionOrder()):]) // map order must not leak into the output
	for _, kind := range order {
		k := kinds[kind]
		if k == nil {
			continue
		}
		b := newBand(k.first, n)
		ip.Transitions = append(ip.Transitions, TransitionStat{Kind: kind, Share: float64(k.runs) / float64(n),
			MedianFirstAt: time.Duration(b.P50), MeanCount: float64(k.count) / float64(n)})
	}
	return ip
}

// fleetNotes explains a fleet prediction's mechanisms.
func fleetNotes(arm *Arm, p *Prediction) []string {
	n := arm.Instances()
	a := p.AttemptsPerRequest.ClosedForm
	out := []string{fmt.Sprintf("%d replicas behind %s balancing: each has its own breaker and window, and each window sees about 1/%d of the requests", n, arm.Balance, n)}
	if cfg := arm.Breaker; cfg.SlidingWindowType == breaker.CountBased && a > 0 {
		minCalls := min(cfg.MinimumNumberOfCalls, cfg.SlidingWindowSize)
		out = append(out, fmt.Sprintf("a replica's COUNT_BASED window reaches %d calls after about %.1f of its own requests, about fleet request %.1f: %d times later than one instance",
			minCalls, float64(minCalls)/a, float64(n*minCalls)/a, n))
	}
	if arm.Breaker.SlidingWindowType == breaker.TimeBased {
		out = append(out, fmt.Sprintf("a replica's TIME_BASED window receives about 1/%d of the fleet's calls per second: its minimum number of calls is %d times harder to reach than one instance's", n, n))
	}
	if f := p.Fleet; f != nil {
		out = append(out, fmt.Sprintf("over the runs %.2f of %d replicas were OPEN on average (time-weighted); the refused share at the entry point is the fleet's, not any one breaker's", f.MeanOpen, n))
	}
	return out
}
