package sim

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cbprobe/cbprobe/breaker"
)

// Band summarises one quantity over the runs in which it is defined: the
// nearest-rank 5th, 50th and 95th percentiles and the mean. A measurement
// outside [P5, P95] is outside the predicted 90 % band.
type Band struct {
	// P5, P50 and P95 are nearest-rank percentiles, in the quantity's unit.
	P5  float64 `json:"p5"`
	P50 float64 `json:"p50"`
	P95 float64 `json:"p95"`
	// Mean is the arithmetic mean over the N runs.
	Mean float64 `json:"mean"`
	// N is the number of runs in which the quantity is defined (for example runs
	// in which the breaker opened); Share is N divided by all runs.
	N     int     `json:"n"`
	Share float64 `json:"share"`
}

// Contains reports whether x lies inside the 5–95 % band.
func (b Band) Contains(x float64) bool { return b.N > 0 && x >= b.P5 && x <= b.P95 }

// newBand computes a Band from values (sorted in place) out of total runs.
func newBand(values []float64, total int) Band {
	b := Band{N: len(values)}
	if total > 0 {
		b.Share = float64(len(values)) / float64(total)
	}
	if len(values) == 0 {
		return b
	}
	slices.Sort(values)
	sum := 0.0
	for _, v := range values {
		sum += v
	}
	b.Mean = sum / float64(len(values))
	b.P5, b.P50, b.P95 = rank(values, 0.05), rank(values, 0.50), rank(values, 0.95)
	return b
}

// rank is the nearest-rank percentile of sorted values: the ceil(p·n)-th smallest.
func rank(sorted []float64, p float64) float64 {
	k := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[max(0, min(k, len(sorted)-1))]
}

// TransitionStat is how often and when one kind of transition happened.
type TransitionStat struct {
	// Kind is the StateTransition name, e.g. "HALF_OPEN_TO_OPEN".
	Kind string `json:"kind"`
	// Share is the share of runs with at least one such transition.
	Share float64 `json:"share"`
	// MedianFirstAt is the median time of the first such transition, over the runs that had one.
	MedianFirstAt time.Duration `json:"medianFirstAtNs"`
	// MeanCount is the mean number of such transitions per run (all runs).
	MeanCount float64 `json:"meanCount"`
}

// PhaseStat is one phase's rejected and success shares.
type PhaseStat struct {
	// Name is the phase's name ("sequential" in the closed model).
	Name string `json:"name"`
	// Requests is the number of requests the phase sends per run.
	Requests int `json:"requests"`
	// RejectedShare and SuccessShare are pooled over all runs: rejected (or
	// successful) requests of the phase divided by all its requests.
	RejectedShare float64 `json:"rejectedShare"`
	SuccessShare  float64 `json:"successShare"`
	// FailedShare is the pooled share of requests that failed after their
	// retries ran out (HTTP 503 without a rejection).
	FailedShare float64 `json:"failedShare"`
	// Rejected and Success are the per-run shares' bands.
	Rejected Band `json:"rejectedBand"`
	Success  Band `json:"successBand"`
}

// AttemptsStat compares simulated gateway attempts per request with the closed form.
type AttemptsStat struct {
	// Mean is gateway attempts (permitted) per request over all requests, what
	// pgsim's attempt log measures.
	Mean float64 `json:"mean"`
	// Unobstructed is the mean over requests none of whose attempts was refused:
	// the population the closed form describes.
	Unobstructed float64 `json:"unobstructed"`
	// UnobstructedBand is the spread over simulated runs of each run's own
	// attempts per unobstructed request (5–95 %), what one measured run is
	// compared with.
	UnobstructedBand Band `json:"unobstructedBand"`
	// ClosedForm is (1 − p^n)/(1 − p) with P the per-attempt retryable failure
	// probability (timeouts included) and n = MaxAttempts.
	ClosedForm  float64 `json:"closedForm"`
	P           float64 `json:"p"`
	MaxAttempts int     `json:"maxAttempts"`
}

// Prediction aggregates many runs of one arm.
type Prediction struct {
	// Arm is the arm's name.
	Arm string `json:"arm,omitempty"`
	// Runs is the number of simulated runs and Seed the seed they derive from.
	Runs int    `json:"runs"`
	Seed uint64 `json:"seed"`
	// RequestedRuns is the number of runs asked for when MaxPredictRequests
	// capped it to Runs (0: not capped).
	RequestedRuns int `json:"requestedRuns,omitempty"`
	// Requests is the number of requests per run.
	Requests int `json:"requests"`
	// FirstOpenRequest and FirstRejectedRequest are 1-based request numbers over
	// the runs in which the breaker opened / rejected (Band.Share says how many).
	FirstOpenRequest     Band `json:"firstOpenRequest"`
	FirstRejectedRequest Band `json:"firstRejectedRequest"`
	// FirstOpenSeconds is the time of the first CLOSED_TO_OPEN, in seconds since the start.
	FirstOpenSeconds Band `json:"firstOpenSeconds"`
	// OpenCauses is the share of first OPENs by cause: failure-rate, slow-call-rate, both.
	OpenCauses map[breaker.OpenCause]float64 `json:"openCauses"`
	// Transitions has one entry per transition kind seen in any run, in a fixed order.
	Transitions []TransitionStat `json:"transitions"`
	// RejectedShare is the share of all requests the breaker rejected (pooled), with
	// RejectedBand the per-run band.
	RejectedShare float64 `json:"rejectedShare"`
	RejectedBand  Band    `json:"rejectedBand"`
	// Phases has one entry per phase.
	Phases []PhaseStat `json:"phases"`
	// AttemptsPerRequest compares attempts with the closed form.
	AttemptsPerRequest AttemptsStat `json:"attemptsPerRequest"`
	// Gateway is the exact per-attempt outcome picture (of the first phase's
	// behaviour when behaviours differ per phase).
	Gateway Probabilities `json:"gateway"`
	// HalfOpenPassProbability is breaker.HalfOpenPassProbability for Gateway.Call:
	// the probability that one HALF_OPEN trial closes the breaker.
	HalfOpenPassProbability float64 `json:"halfOpenPassProbability"`
	// HalfOpenMeaning says in words what HalfOpenPassProbability means.
	HalfOpenMeaning string `json:"halfOpenMeaning"`
	// Notes explain the mechanisms behind the numbers (window filling, minimum
	// number of calls, half-open trials).
	Notes []string `json:"notes"`
	// MedianRunIndex is the median run by first-open request, then time (runs that
	// never opened count as latest); MedianRun is that run replayed with its request log.
	MedianRunIndex int       `json:"medianRunIndex"`
	MedianRun      RunResult `json:"medianRun"`
	// Instances has one entry per replica in a fleet prediction (Arm.Replicas >
	// 1), nil otherwise. The fields above are then the fleet's (the entry point's):
	// FirstOpenRequest is the first OPEN of any replica, FirstRejectedRequest the
	// first request any replica refused, Transitions count every replica's,
	// RejectedShare and Phases are the refused shares at the entry point.
	Instances []InstancePrediction `json:"instances,omitempty"`
	// Fleet is how many replicas were OPEN over time in a fleet prediction, nil otherwise.
	Fleet *FleetPrediction `json:"fleet,omitempty"`
}

// transitionOrder fixes the order in which transition kinds are reported.
func transitionOrder() []string {
	return []string{"CLOSED_TO_OPEN", "OPEN_TO_HALF_OPEN", "HALF_OPEN_TO_OPEN", "HALF_OPEN_TO_CLOSED"}
}

// MaxPredictRequests is the most requests one prediction simulates over all
// its runs: Predict runs at most MaxPredictRequests / PlannedRequests runs (at
// least one), so a prediction takes seconds, not hours (a simulated request
// costs about a microsecond of CPU). Below the cap the runs asked for are kept.
const MaxPredictRequests = 20_000_000

// PredictRuns returns how many of runs Predict runs for a, after the
// MaxPredictRequests cap (at least 1).
func PredictRuns(a *Arm, runs int) int {
	per := max(a.PlannedRequests(), 1)
	return max(1, min(runs, MaxPredictRequests/per))
}

// Predict runs arm runs times (capped by PredictRuns; Prediction.RequestedRuns
// and a note then say so), run i with seed RunSeed(seed, i), across
// GOMAXPROCS workers, and aggregates the results in run order, so the same
// arguments give the same Prediction whatever GOMAXPROCS is. It stops within
// a few milliseconds of work with ctx's error when ctx is cancelled and returns
// an *ArmError for an invalid arm (more than MaxRequestsPerRun requests included).
func Predict(ctx context.Context, arm Arm, runs int, seed uint64) (Prediction, error) {
	return predictWithin(ctx, arm, runs, seed, MaxPredictRequests, runtime.GOMAXPROCS(0), false)
}

// PredictInBackground is Predict on a single worker that yields the processor
// after every simulated run (about a millisecond of work): the same Prediction,
// for a caller that runs it beside timing-sensitive work in the same process (an
// experiment predicts an arm while the arm's load, and often the service and the
// gateway, run), so that their goroutines wait for a run at most, never for a
// scheduler time slice (10 ms, 200 ms of service time at --speed 20).
func PredictInBackground(ctx context.Context, arm Arm, runs int, seed uint64) (Prediction, error) {
	return predictWithin(ctx, arm, runs, seed, MaxPredictRequests, 1, true)
}

// predictWithin is Predict with budget simulated requests in all, on at most
// workers goroutines, yielding after each run when yield is set.
func predictWithin(ctx context.Context, arm Arm, runs int, seed uint64, budget, workers int, yield bool) (Prediction, error) {
	if err := arm.Validate(); err != nil {
		return Prediction{}, err
	}
	if runs < 1 {
		return Prediction{}, armErr("runs", "%d must be at least 1", runs)
	}
	requested := runs
	runs = max(1, min(runs, budget/max(arm.PlannedRequests(), 1)))
	results := make([]RunResult, runs)
	workers = max(1, min(workers, runs))
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= runs {
					return
				}
				if ctx.Err() != nil {
					errs[w] = ctx.Err()
					return
				}
				res, err := runArm(ctx, &arm, RunSeed(seed, i), false)
				if err != nil {
					errs[w] = err
					return
				}
				results[i] = res
				if yield {
					runtime.Gosched()
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return Prediction{}, fmt.Errorf("predict %d runs: %w", runs, err)
		}
	}
	p := aggregate(&arm, results, seed)
	median, err := runArm(ctx, &arm, RunSeed(seed, p.MedianRunIndex), true)
	if err != nil {
		return Prediction{}, fmt.Errorf("predict: median run: %w", err)
	}
	p.MedianRun = median
	if runs < requested {
		p.RequestedRuns = requested
		p.Notes = append([]string{fmt.Sprintf("ran %d of the %d runs asked for: each run plans %d requests and one prediction simulates at most %d (see docs/limits.md); the bands are coarser", runs, requested, arm.PlannedRequests(), budget)}, p.Notes...)
	}
	return p, nil
}

func aggregate(arm *Arm, results []RunResult, seed uint64) Prediction {
	n := len(results)
	p := Prediction{Arm: arm.Name, Runs: n, Seed: seed, Requests: arm.PlannedRequests()}
	var firstOpen, firstRej, firstOpenAt, rejShare []float64
	causes := map[breaker.OpenCause]int{}
	kinds := map[string]*struct {
		runs, count int
		first       []float64
	}{}
	var totalReq, totalRej, attempts, unobReq, unobAtt int
	var unobPerRun []float64 // each run's attempts per unobstructed request
	phaseN := len(results[0].Phases)
	type acc struct {
		req, rej, ok, fail int
		rejB, okB          []float64
	}
	phases := make([]acc, phaseN)
	for _, r := range results {
		if r.FirstOpenRequest > 0 || r.FirstOpenCause != "" {
			firstOpen = append(firstOpen, float64(r.FirstOpenRequest))
			firstOpenAt = append(firstOpenAt, r.FirstOpenAt.Seconds())
			causes[r.FirstOpenCause]++
		}
		if r.FirstRejectedRequest > 0 {
			firstRej = append(firstRej, float64(r.FirstRejectedRequest))
		}
		seen := map[string]bool{}
		for _, t := range r.Transitions {
			k := kinds[t.Kind]
			if k == nil {
				k = &struct {
					runs, count int
					first       []float64
				}{}
				kinds[t.Kind] = k
			}
			k.count++
			if !seen[t.Kind] {
				seen[t.Kind] = true
				k.runs++
				k.first = append(k.first, float64(t.At))
			}
		}
		rej := 0
		for i, ph := range r.Phases {
			a := &phases[i]
			a.req += ph.Requests
			a.rej += ph.Rejected
			a.ok += ph.Succeeded
			a.fail += ph.Failed
			rej += ph.Rejected
			if ph.Requests > 0 {
				a.rejB = append(a.rejB, float64(ph.Rejected)/float64(ph.Requests))
				a.okB = append(a.okB, float64(ph.Succeeded)/float64(ph.Requests))
			}
		}
		totalReq += r.Requests
		totalRej += rej
		if r.Requests > 0 {
			rejShare = append(rejShare, float64(rej)/float64(r.Requests))
		}
		attempts += r.GatewayAttempts
		unobReq += r.UnobstructedRequests
		if r.UnobstructedRequests > 0 {
			unobPerRun = append(unobPerRun, float64(r.UnobstructedAttempts)/float64(r.UnobstructedRequests))
		}
		unobAtt += r.UnobstructedAttempts
	}
	p.FirstOpenRequest = newBand(firstOpen, n)
	p.FirstRejectedRequest = newBand(firstRej, n)
	p.FirstOpenSeconds = newBand(firstOpenAt, n)
	p.OpenCauses = map[breaker.OpenCause]float64{}
	for _, c := range breaker.RateCauses() {
		p.OpenCauses[c] = 0
	}
	for c, k := range causes {
		p.OpenCauses[c] = float64(k) / float64(len(firstOpen))
	}
	order := transitionOrder()
	for k := range kinds {
		if !slices.Contains(order, k) {
			order = append(order, k)
		}
	}
	for _, kind := range order {
		k := kinds[kind]
		if k == nil {
			continue
		}
		b := newBand(k.first, n)
		p.Transitions = append(p.Transitions, TransitionStat{Kind: kind, Share: float64(k.runs) / float64(n),
			MedianFirstAt: time.Duration(b.P50), MeanCount: float64(k.count) / float64(n)})
	}
	if totalReq > 0 {
		p.RejectedShare = float64(totalRej) / float64(totalReq)
	}
	p.RejectedBand = newBand(rejShare, n)
	for i, a := range phases {
		st := PhaseStat{Name: results[0].Phases[i].Name, Rejected: newBand(a.rejB, n), Success: newBand(a.okB, n)}
		if n > 0 {
			st.Requests = a.req / n
		}
		if a.req > 0 {
			st.RejectedShare = float64(a.rej) / float64(a.req)
			st.SuccessShare = float64(a.ok) / float64(a.req)
			st.FailedShare = float64(a.fail) / float64(a.req)
		}
		p.Phases = append(p.Phases, st)
	}
	gw := arm.Gateway
	if arm.PhaseGateways != nil {
		gw = arm.PhaseGateways[0]
	}
	p.Gateway = OutcomeProbabilities(gw, arm.Breaker, arm.Retry, arm.timeout(), arm.CallOverhead)
	p.AttemptsPerRequest = AttemptsStat{P: p.Gateway.Retryable, MaxAttempts: arm.Retry.MaxAttempts,
		ClosedForm: ClosedFormAttempts(p.Gateway.Retryable, arm.Retry.MaxAttempts)}
	if totalReq > 0 {
		p.AttemptsPerRequest.Mean = float64(attempts) / float64(totalReq)
	}
	if unobReq > 0 {
		p.AttemptsPerRequest.Unobstructed = float64(unobAtt) / float64(unobReq)
	}
	p.AttemptsPerRequest.UnobstructedBand = newBand(unobPerRun, n)
	p.HalfOpenPassProbability = breaker.HalfOpenPassProbability(arm.Breaker, p.Gateway.Call)
	p.HalfOpenMeaning = halfOpenMeaning(arm.Breaker, p.HalfOpenPassProbability)
	p.MedianRunIndex = medianRun(results)
	p.Notes = notes(arm, &p)
	if arm.Fleet() {
		aggregateFleet(arm, results, &p)
	}
	return p
}

// medianRun picks the median run: runs sorted by (never opened last, first-open
// request, first-open time, run index), the element at (n-1)/2.
func medianRun(results []RunResult) int {
	idx := make([]int, len(results))
	for i := range idx {
		idx[i] = i
	}
	never := func(r *RunResult) bool { return r.FirstOpenRequest == 0 && r.FirstOpenCause == "" }
	sort.SliceStable(idx, func(a, b int) bool {
		x, y := &results[idx[a]], &results[idx[b]]
		if never(x) != never(y) {
			return !never(x)
		}
		if x.FirstOpenRequest != y.FirstOpenRequest {
			return x.FirstOpenRequest < y.FirstOpenRequest
		}
		return x.FirstOpenAt < y.FirstOpenAt
	})
	return idx[(len(idx)-1)/2]
}

// halfOpenMeaning explains a half-open pass probability.
func halfOpenMeaning(cfg breaker.Config, pass float64) string {
	trial := min(cfg.MinimumNumberOfCalls, cfg.PermittedNumberOfCallsInHalfOpenState)
	switch {
	case pass == 0:
		return fmt.Sprintf("this breaker cannot close while the gateway behaves so: no outcome of the %d trial calls keeps both the failure rate below %v%% and the slow-call rate below %v%%, so every HALF_OPEN goes back to OPEN", trial, cfg.FailureRateThreshold, cfg.SlowCallRateThreshold)
	case pass < 0.05:
		return fmt.Sprintf("this breaker rarely closes: a HALF_OPEN trial of %d calls passes with probability %.3g, so on average %.0f trials (each followed by %v in OPEN) before it closes", trial, pass, 1/pass, cfg.WaitDurationInOpenState)
	case pass >= 1:
		return fmt.Sprintf("every HALF_OPEN trial of %d calls closes the breaker", trial)
	}
	return fmt.Sprintf("a HALF_OPEN trial of %d calls closes the breaker with probability %.3g (%.1f trials on average)", trial, pass, 1/pass)
}
