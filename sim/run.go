package sim

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/cbprobe/cbprobe/breaker"
	"github.com/cbprobe/cbprobe/pgsim/behavior"
)

// Status is how a request ended for its client.
type Status uint8

const (
	// StatusSuccess: the payment went through (HTTP 200).
	StatusSuccess Status = iota
	// StatusFailed: the gateway attempts failed and the retries ran out (HTTP 503).
	StatusFailed
	// StatusRejected: the breaker refused the attempt (CIRCUIT_OPEN, HTTP 503).
	StatusRejected
)

// String returns "success", "failed" or "rejected".
func (s Status) String() string {
	switch s {
	case StatusSuccess:
		return "success"
	case StatusFailed:
		return "failed"
	}
	return "rejected"
}

// MarshalText implements encoding.TextMarshaler.
func (s Status) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Transition is one breaker state transition in a run.
type Transition struct {
	// At is the virtual time since the start of the run.
	At time.Duration `json:"atNs"`
	// Kind is the StateTransition name, e.g. "CLOSED_TO_OPEN".
	Kind string `json:"kind"`
	// From and To are the states.
	From breaker.State `json:"-"`
	To   breaker.State `json:"-"`
	// Cause labels transitions to OPEN: failure-rate, slow-call-rate, both
	// (from the *_EXCEEDED events just before CLOSED_TO_OPEN) or half-open-trial.
	Cause breaker.OpenCause `json:"cause,omitempty"`
	// Request is the 1-based number of the request whose attempt caused the
	// transition (0: a timer, e.g. the automatic OPEN to HALF_OPEN).
	Request int `json:"request,omitempty"`
	// FailureRate and SlowCallRate are the rates (percent) at a transition to
	// OPEN: the *_EXCEEDED events' values, or the tripping window's.
	FailureRate  float32 `json:"failureRate,omitempty"`
	SlowCallRate float32 `json:"slowCallRate,omitempty"`
	// Instance is the 1-based replica whose breaker made the transition in a
	// fleet run (Arm.Replicas > 1); 0 with a single instance.
	Instance int `json:"instance,omitempty"`
}

// RequestResult is one request of a run (Run only; Predict keeps none).
type RequestResult struct {
	// Seq is the 1-based request number in send order.
	Seq int `json:"seq"`
	// Phase is the 0-based index of the phase the request was sent in.
	Phase int `json:"phase"`
	// User is the 0-based user in the closed model, -1 in the open model.
	User int `json:"user"`
	// Sent and Ended are virtual times since the start of the run.
	Sent  time.Duration `json:"sentNs"`
	Ended time.Duration `json:"endedNs"`
	// Attempts is the number of gateway attempts the breaker permitted.
	Attempts int `json:"attempts"`
	// Rejections is the number of attempts the breaker refused.
	Rejections int `json:"rejections"`
	// Status is how the request ended.
	Status Status `json:"status"`
	// Last is the last attempt's outcome: success, error, reset, hang, timeout or rejected.
	Last string `json:"last"`
	// Instance is the 1-based replica the request was routed to in a fleet run
	// (Arm.Replicas > 1); 0 with a single instance.
	Instance int `json:"instance,omitempty"`
}

// InstanceResult is one replica's part of a fleet run (Arm.Replicas > 1).
// Request numbers are 1-based; "fleet" numbers count every request in the
// entry point's send order, "local" numbers only those routed to this replica.
type InstanceResult struct {
	// Instance is the 1-based replica.
	Instance int `json:"instance"`
	// Requests counts the requests routed to the replica; Succeeded, Failed and
	// Rejected split them by how they ended.
	Requests  int `json:"requests"`
	Succeeded int `json:"succeeded"`
	Failed    int `json:"failed"`
	Rejected  int `json:"rejected"`
	// GatewayAttempts and RejectedAttempts count the attempts the replica's
	// breaker permitted and refused.
	GatewayAttempts  int `json:"gatewayAttempts"`
	RejectedAttempts int `json:"rejectedAttempts"`
	// FirstOpenRequest is the fleet number of the last request sent (to any
	// replica) at or before this replica's breaker first went CLOSED -> OPEN, and
	// FirstOpenLocal the number of requests routed to this replica by then; 0:
	// it never opened. FirstOpenAt is when, since the start of the run.
	FirstOpenRequest int               `json:"firstOpenRequest"`
	FirstOpenLocal   int               `json:"firstOpenLocal"`
	FirstOpenAt      time.Duration     `json:"firstOpenAtNs"`
	FirstOpenCause   breaker.OpenCause `json:"firstOpenCause,omitempty"`
	// FirstRejectedRequest is the lowest fleet number of a request this replica
	// ended rejected, FirstRejectedLocal its local number (0: none).
	FirstRejectedRequest int `json:"firstRejectedRequest"`
	FirstRejectedLocal   int `json:"firstRejectedLocal"`
	// OpenTime is how long the replica's breaker was OPEN in the run, up to
	// FleetResult.Horizon.
	OpenTime time.Duration `json:"openTimeNs"`
}

// FleetPhase is the fleet's OPEN picture during one phase of a fleet run.
type FleetPhase struct {
	// Name is the phase's name.
	Name string `json:"name"`
	// Span is how long the phase lasted (the last phase until FleetResult.Horizon).
	Span time.Duration `json:"spanNs"`
	// OpenInstanceTime is the sum over replicas of the time each was OPEN in the
	// phase: divided by Span it is the time-weighted mean number of OPEN replicas.
	OpenInstanceTime time.Duration `json:"openInstanceTimeNs"`
	// AnyOpenTime is how long at least one replica was OPEN in the phase, and
	// AllOpenTime how long every replica was.
	AnyOpenTime time.Duration `json:"anyOpenTimeNs"`
	AllOpenTime time.Duration `json:"allOpenTimeNs"`
}

// FleetResult is the entry point's view of a fleet run (Arm.Replicas > 1).
// The fleet's refused share and first rejected request are RunResult's own
// Phases and FirstRejectedRequest: every request passes the entry point.
type FleetResult struct {
	// Replicas and Balance repeat the arm's.
	Replicas int     `json:"replicas"`
	Balance  Balance `json:"balance"`
	// Horizon is the end of the observed time: the later of the last request's
	// end and the last phase's end (RunResult.End in the closed model).
	Horizon time.Duration `json:"horizonNs"`
	// OpenTime[k] is how long exactly k replicas were OPEN, k = 0..Replicas,
	// over [0, Horizon].
	OpenTime []time.Duration `json:"openTimeNs"`
	// Phases is the OPEN picture per phase ("sequential" in the closed model).
	Phases []FleetPhase `json:"phases"`
	// InstancesOpened counts the replicas whose breaker went CLOSED -> OPEN at
	// least once.
	InstancesOpened int `json:"instancesOpened"`
}

// PhaseResult counts one phase's requests (by the phase they were sent in).
type PhaseResult struct {
	// Name is the phase's name ("sequential" in the closed model).
	Name string `json:"name"`
	// Requests counts the requests sent in the phase; Succeeded, Failed and
	// Rejected split them by how they ended.
	Requests  int `json:"requests"`
	Succeeded int `json:"succeeded"`
	Failed    int `json:"failed"`
	Rejected  int `json:"rejected"`
}

// RunResult is the outcome of one simulated run.
type RunResult struct {
	// Seed is the seed the run used.
	Seed uint64 `json:"seed"`
	// Requests is the number of requests sent.
	Requests int `json:"requests"`
	// GatewayAttempts counts the attempts the breaker permitted (what pgsim logs).
	GatewayAttempts int `json:"gatewayAttempts"`
	// RejectedAttempts counts the attempts the breaker refused.
	RejectedAttempts int `json:"rejectedAttempts"`
	// UnobstructedRequests counts requests none of whose attempts was refused,
	// and UnobstructedAttempts their gateway attempts: the closed form's population.
	UnobstructedRequests int `json:"unobstructedRequests"`
	UnobstructedAttempts int `json:"unobstructedAttempts"`
	// FirstOpenRequest is the 1-based number of the request in flight when the
	// breaker first opened: the last one sent at or before that instant (in a
	// sequential run, the request whose attempt opened it); 0: it never opened.
	// FirstOpenAt is when that happened.
	FirstOpenRequest int           `json:"firstOpenRequest"`
	FirstOpenAt      time.Duration `json:"firstOpenAtNs"`
	// FirstOpenCause is the cause of the first CLOSED_TO_OPEN ("" if none).
	FirstOpenCause breaker.OpenCause `json:"firstOpenCause,omitempty"`
	// FirstRejectedRequest is the lowest-numbered request that ended rejected (the
	// open breaker refused its last attempt; 0: none), the definition of
	// results.Arm.FirstRejectedRequest; FirstRejectedAt is when it was refused.
	FirstRejectedRequest int           `json:"firstRejectedRequest"`
	FirstRejectedAt      time.Duration `json:"firstRejectedAtNs"`
	// Transitions lists every state transition in order.
	Transitions []Transition `json:"transitions"`
	// Phases counts requests per phase (one "sequential" phase in the closed model).
	Phases []PhaseResult `json:"phases"`
	// End is the virtual time at which the last request ended.
	End time.Duration `json:"endNs"`
	// RequestLog has one entry per request, in send order; filled by Run only.
	RequestLog []RequestResult `json:"requestLog,omitempty"`
	// Instances has one entry per replica in a fleet run (Arm.Replicas > 1), nil
	// otherwise. The fields above are the fleet's: FirstOpenRequest is the first
	// OPEN of any replica, FirstRejectedRequest the first request any replica
	// refused, Transitions every replica's (Transition.Instance says whose).
	Instances []InstanceResult `json:"instances,omitempty"`
	// Fleet is the count of OPEN replicas over time in a fleet run, nil otherwise.
	Fleet *FleetResult `json:"fleet,omitempty"`
}

// RunSeed derives run i's seed from a prediction's seed (a SplitMix64 mix, so
// neighbouring runs get unrelated streams). Run(arm, RunSeed(seed, i)) replays
// run i of Predict(ctx, arm, runs, seed).
func RunSeed(seed uint64, i int) uint64 {
	return splitmix(seed ^ splitmix(uint64(i)+0x632be59bd9b4e019))
}

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// epoch is the virtual clock's origin: a whole wall-clock second. Each run
// starts at a random offset inside the following second, so TIME_BASED
// buckets (epoch seconds) are aligned with the traffic as by chance in a real run.
const epochSeconds = 1_700_000_000

// Run simulates one run of arm with the given seed. The same arm and seed give
// the same result. It returns an *ArmError for an invalid arm (one planning more
// than MaxRequestsPerRun requests included).
func Run(arm Arm, seed uint64) (RunResult, error) {
	return RunContext(context.Background(), arm, seed)
}

// RunContext is Run that stops with ctx's error when ctx is cancelled (it looks
// every ctxCheckEvents simulated events, a few milliseconds of work).
func RunContext(ctx context.Context, arm Arm, seed uint64) (RunResult, error) {
	if err := arm.Validate(); err != nil {
		return RunResult{}, err
	}
	return runArm(ctx, &arm, seed, true)
}

// ctxCheckEvents is how many events a run handles between two looks at its
// context: at about a microsecond an event, a cancelled run stops within a few
// milliseconds of work.
const ctxCheckEvents = 1 << 12

// request is the simulation's state of one request.
type request struct {
	seq        int
	phase      int
	user       int
	sent       time.Duration
	tries      int // attempts started (permitted or refused)
	attempts   int // attempts permitted
	rejections int
	shape      attemptShape
	outcome    behavior.Outcome
	status     Status
	last       string
	ended      time.Duration
	inst       int // 0-based replica
	local      int // 1-based number among the replica's requests
}

type runner struct {
	arm     *Arm
	detail  bool // keep every request (for the request log); otherwise ended requests' slots are reused
	rng     *rand.Rand
	rnd     func() float64
	clock   *breaker.VirtualClock
	start   time.Time
	cbs     []*breaker.CircuitBreaker // one breaker per replica
	q       queue
	reqs    []request // request slots: index = seq-1 with detail, reused without
	free    []int32   // slots of ended requests, reused by newRequest (without detail)
	sent    int       // requests sent so far
	cur     int       // slot of the request whose breaker call is running, -1 for a timer
	timeout time.Duration
	res     RunResult
	// cause flags per replica: *_EXCEEDED events seen since its last transition
	exceeded     []exceededFlags
	pendingRates int         // index of a transition to OPEN whose rates are read after the breaker call, -1 none
	pendingInst  int         // the replica of pendingRates
	fleet        *fleetState // nil with a single instance
	phaseEnds    []time.Duration
	userLeft     []int
	// errors reused across attempts (the breaker and the retry only read them)
	gwErr      [4]error
	timeoutErr error
	rejectErr  error
}

type exceededFlags struct{ fail, slow bool }

// fleetState follows which replicas are OPEN over time in a fleet run.
type fleetState struct {
	n         int
	state     []breaker.State
	openSince []time.Duration
	sent      []int // requests routed to each replica so far
	openN     int
	last      time.Duration // accumulated up to here
	res       FleetResult
	inst      []InstanceResult
}

// runArm runs a validated arm; with detail it keeps the request log.
func runArm(ctx context.Context, arm *Arm, seed uint64, detail bool) (RunResult, error) {
	r, err := newRunner(arm, seed, detail)
	if err != nil {
		return RunResult{}, err
	}
	if err := r.loop(ctx); err != nil {
		return RunResult{}, err
	}
	return r.result(), nil
}

// newRunner prepares a run of a validated arm: the breaker, the first events.
func newRunner(arm *Arm, seed uint64, detail bool) (*runner, error) {
	r := &runner{arm: arm, detail: detail, cur: -1, pendingRates: -1, timeout: arm.timeout()}
	r.rng = rand.New(rand.NewPCG(seed, splitmix(seed)))
	r.rnd = r.rng.Float64
	r.start = time.Unix(epochSeconds, r.rng.Int64N(int64(time.Second)))
	clockStart := r.start
	if arm.StartOpen {
		clockStart = r.start.Add(-arm.Breaker.WaitDurationInOpenState - time.Second)
	}
	r.clock = breaker.NewVirtualClock(clockStart)
	name := arm.BreakerName
	if name == "" {
		name = "sim"
	}
	n := arm.Instances()
	r.cbs = make([]*breaker.CircuitBreaker, n)
	r.exceeded = make([]exceededFlags, n)
	for i := range n {
		cb, err := breaker.New(name, arm.Breaker, breaker.WithClock(r.clock))
		if err != nil {
			return nil, armErr("Breaker", "%v", err)
		}
		r.cbs[i] = cb
		if arm.StartOpen {
			if err := cb.TransitionTo(breaker.StateOpen); err != nil {
				return nil, armErr("StartOpen", "%v", err)
			}
		}
	}
	if arm.StartOpen {
		r.clock.AdvanceTo(r.start)
	}
	for i, cb := range r.cbs {
		cb.Subscribe(func(e breaker.Event) { r.onEvent(i, e) })
	}
	if arm.Fleet() {
		r.fleet = newFleetState(arm)
	}
	for _, o := range []behavior.Outcome{behavior.OutcomeError, behavior.OutcomeHang, behavior.OutcomeReset} {
		r.gwErr[o] = &GatewayError{Outcome: o}
	}
	r.timeoutErr = &breaker.TimeoutError{Name: name}
	r.rejectErr = &breaker.CallNotPermittedError{Name: name, State: breaker.StateOpen}
	r.res.Seed = seed
	if detail {
		// Validate bounds PlannedRequests by MaxRequestsPerRun.
		r.reqs = make([]request, 0, arm.PlannedRequests())
	}

	if arm.Sequential() {
		r.res.Phases = []PhaseResult{{Name: "sequential"}}
		r.userLeft = make([]int, arm.Users)
		for u := range arm.Users {
			r.userLeft[u] = arm.RequestsPerUser
			r.q.push(event{at: 0, kind: evUserStart, req: -1, a: int32(u)})
		}
	} else {
		r.res.Phases = make([]PhaseResult, len(arm.Phases))
		r.phaseEnds = make([]time.Duration, len(arm.Phases))
		var at time.Duration
		for i, p := range arm.Phases {
			r.res.Phases[i].Name = p.Name
			if p.Planned() > 0 {
				r.q.push(event{at: at, kind: evArrival, req: -1, a: int32(i), b: 0})
			}
			at += p.Duration
			r.phaseEnds[i] = at
		}
	}
	if r.fleet != nil {
		r.fleet.res.Phases = make([]FleetPhase, len(r.res.Phases))
		for i := range r.res.Phases {
			r.fleet.res.Phases[i].Name = r.res.Phases[i].Name
		}
	}
	return r, nil
}

// loop handles events until none is left; it returns ctx's error when ctx is
// cancelled (looking every ctxCheckEvents events).
func (r *runner) loop(ctx context.Context) error {
	for n := 1; ; n++ {
		if n%ctxCheckEvents == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		e, ok := r.q.pop()
		if !ok {
			break
		}
		r.cur = -1
		if err := r.advanceTo(ctx, r.start.Add(e.at), &n); err != nil {
			return err
		}
		r.handle(e)
		if len(r.res.Transitions) > MaxTransitionsPerRun {
			return r.tooManyTransitions()
		}
	}
	r.cur = -1
	return nil
}

// MaxTransitionsPerRun is the most state transitions one simulated run may
// record. A breaker with automatic OPEN -> HALF_OPEN and a short
// max-wait-duration-in-half-open-state cycles on its own timers while no
// request comes (as Resilience4j's does): with 1 ms waits over a 100-hour
// think time that is billions of transitions, each kept in RunResult.
// The bound keeps a run's transitions under about 10 MB.
const MaxTransitionsPerRun = 100_000

// advanceTo moves the virtual clock to t one breaker timer at a time, so that
// a breaker cycling on its own timers through a long idle stretch counts as
// events (n): ctx is looked at every ctxCheckEvents of them and the run stops
// at MaxTransitionsPerRun transitions.
func (r *runner) advanceTo(ctx context.Context, t time.Time, n *int) error {
	for {
		due, ok := r.clock.NextDue()
		if !ok || due.After(t) {
			break
		}
		r.clock.AdvanceTo(due)
		*n++
		if *n%ctxCheckEvents == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		if len(r.res.Transitions) > MaxTransitionsPerRun {
			return r.tooManyTransitions()
		}
	}
	r.clock.AdvanceTo(t)
	return nil
}

// tooManyTransitions is the *ArmError of a run past MaxTransitionsPerRun.
func (r *runner) tooManyTransitions() error {
	return armErr("Breaker", "the breaker made more than %d state transitions in one run (the limit, see docs/limits.md) by %v of simulated time: "+
		"it keeps cycling OPEN -> HALF_OPEN -> OPEN (on its own timers through long pauses with automatic-transition-from-open-to-half-open-enabled, or through retried rejections); "+
		"lengthen wait-duration-in-open-state and max-wait-duration-in-half-open-state, shorten the pauses or lower the retry attempts",
		MaxTransitionsPerRun, r.clock.Now().Sub(r.start))
}

// result finishes the run's result after loop.
func (r *runner) result() RunResult {
	r.res.Requests = r.sent
	if r.fleet != nil {
		r.finishFleet()
	}
	if r.detail {
		r.res.RequestLog = make([]RequestResult, len(r.reqs))
		for i := range r.reqs {
			q := &r.reqs[i]
			r.res.RequestLog[i] = RequestResult{Seq: q.seq, Phase: q.phase, User: q.user, Sent: q.sent, Ended: q.ended,
				Attempts: q.attempts, Rejections: q.rejections, Status: q.status, Last: q.last}
			if r.fleet != nil {
				r.res.RequestLog[i].Instance = q.inst + 1
			}
		}
	}
	return r.res
}

func (r *runner) handle(e event) {
	switch e.kind {
	case evArrival:
		p := r.arm.Phases[e.a]
		if next := int(e.b) + 1; next < p.Planned() {
			r.q.push(event{at: r.phaseStart(int(e.a)) + arrivalOffset(p.Rate, next), kind: evArrival, req: -1, a: e.a, b: int32(next)})
		}
		r.newRequest(e.at, int(e.a), -1)
	case evUserStart:
		u := int(e.a)
		r.userLeft[u]--
		r.newRequest(e.at, 0, u)
	case evAttempt:
		r.attempt(e.at, int(e.req))
	case evAttemptEnd:
		r.attemptEnd(e.at, int(e.req))
	case evRequestEnd:
		r.requestEnd(e.at, int(e.req))
	}
}

// arrivalOffset is the i-th arrival's offset in a phase of the given rate: i/rate seconds.
func arrivalOffset(rate float64, i int) time.Duration {
	return time.Duration(float64(i) * float64(time.Second) / rate)
}

func (r *runner) phaseStart(i int) time.Duration {
	if i == 0 {
		return 0
	}
	return r.phaseEnds[i-1]
}

// phaseAt returns the index of the phase running at t (the last one after the end).
func (r *runner) phaseAt(t time.Duration) int {
	for i, end := range r.phaseEnds {
		if t < end {
			return i
		}
	}
	return len(r.phaseEnds) - 1
}

func (r *runner) db() time.Duration {
	if r.arm.DBLatency == nil {
		return 0
	}
	return r.arm.DBLatency.Sample(r.rng)
}

func (r *runner) newRequest(t time.Duration, phase, user int) {
	r.sent++
	q := request{seq: r.sent, phase: phase, user: user, sent: t, local: r.sent}
	if f := r.fleet; f != nil {
		// Routed at arrival; the random draw exists only in a fleet run, so a
		// single instance's random stream is the one it always was.
		if r.arm.Balance == BalanceRandom {
			q.inst = r.rng.IntN(f.n)
		} else {
			q.inst = (r.sent - 1) % f.n
		}
		f.sent[q.inst]++
		q.local = f.sent[q.inst]
		f.inst[q.inst].Requests++
	}
	idx := len(r.reqs)
	if n := len(r.free); n > 0 {
		idx = int(r.free[n-1])
		r.free = r.free[:n-1]
		r.reqs[idx] = q
	} else {
		r.reqs = append(r.reqs, q)
	}
	r.res.Phases[phase].Requests++
	// order creation, then the payment's own DB step before the gateway call.
	d := r.db()
	d += r.db()
	r.q.push(event{at: t + d, kind: evAttempt, req: int32(idx)})
}

func (r *runner) attempt(t time.Duration, idx int) {
	q := &r.reqs[idx]
	q.tries++
	r.cur = idx
	permitted := r.cbs[q.inst].TryAcquirePermission()
	r.afterBreakerCall()
	if !permitted {
		q.rejections++
		r.res.RejectedAttempts++
		if r.fleet != nil {
			r.fleet.inst[q.inst].RejectedAttempts++
		}
		q.last = "rejected"
		if r.arm.RetryOnRejection && q.tries < r.arm.Retry.MaxAttempts && r.arm.Retry.ShouldRetry(r.rejectErr) {
			r.q.push(event{at: t + r.arm.Retry.Interval(q.tries, r.rnd), kind: evAttempt, req: int32(idx)})
			return
		}
		if r.res.FirstRejectedRequest == 0 || q.seq < r.res.FirstRejectedRequest {
			// The lowest-numbered request that ends rejected, as the measurement
			// (results.Arm.FirstRejectedRequest) counts it: a request sent earlier can
			// be rejected later, on a retry, and one refused on an attempt that a later
			// attempt (retry on rejection) gets through is not rejected.
			r.res.FirstRejectedRequest = q.seq
			r.res.FirstRejectedAt = t
		}
		if r.fleet != nil {
			if in := &r.fleet.inst[q.inst]; in.FirstRejectedRequest == 0 || q.seq < in.FirstRejectedRequest {
				in.FirstRejectedRequest, in.FirstRejectedLocal = q.seq, q.local
			}
		}
		r.finish(t, idx, StatusRejected)
		return
	}
	q.attempts++
	r.res.GatewayAttempts++
	if r.fleet != nil {
		r.fleet.inst[q.inst].GatewayAttempts++
	}
	gw := &r.arm.Gateway
	if r.arm.PhaseGateways != nil {
		gw = &r.arm.PhaseGateways[r.phaseAt(t)]
	}
	d := gw.Decide(r.rng)
	q.outcome = d.Outcome
	q.shape = shape(d, r.arm.CallOverhead, r.timeout)
	r.q.push(event{at: t + q.shape.elapsed, kind: evAttemptEnd, req: int32(idx)})
}

func (r *runner) attemptEnd(t time.Duration, idx int) {
	q := &r.reqs[idx]
	r.cur = idx
	if !q.shape.failed {
		r.cbs[q.inst].OnSuccess(q.shape.elapsed)
		r.afterBreakerCall()
		q.last = "success"
		r.finish(t, idx, StatusSuccess)
		return
	}
	err := r.gwErr[q.outcome]
	q.last = q.outcome.String()
	if q.shape.timeout {
		err = r.timeoutErr
		q.last = "timeout"
	}
	r.cbs[q.inst].OnError(q.shape.elapsed, err)
	r.afterBreakerCall()
	if q.tries < r.arm.Retry.MaxAttempts && r.arm.Retry.ShouldRetry(err) {
		r.q.push(event{at: t + r.arm.Retry.Interval(q.tries, r.rnd), kind: evAttempt, req: int32(idx)})
		return
	}
	r.finish(t, idx, StatusFailed)
}

// finish runs the request's last DB step (success or failure path) and then ends it.
func (r *runner) finish(t time.Duration, idx int, s Status) {
	r.reqs[idx].status = s
	r.q.push(event{at: t + r.db(), kind: evRequestEnd, req: int32(idx)})
}

func (r *runner) requestEnd(t time.Duration, idx int) {
	q := &r.reqs[idx]
	ph := &r.res.Phases[q.phase]
	switch q.status {
	case StatusSuccess:
		ph.Succeeded++
	case StatusFailed:
		ph.Failed++
	case StatusRejected:
		ph.Rejected++
	}
	if r.fleet != nil {
		in := &r.fleet.inst[q.inst]
		switch q.status {
		case StatusSuccess:
			in.Succeeded++
		case StatusFailed:
			in.Failed++
		case StatusRejected:
			in.Rejected++
		}
	}
	if t > r.res.End {
		r.res.End = t
	}
	q.ended = t
	if q.rejections == 0 {
		r.res.UnobstructedRequests++
		r.res.UnobstructedAttempts += q.attempts
	}
	if q.user >= 0 && r.userLeft[q.user] > 0 {
		r.q.push(event{at: t + r.arm.Think, kind: evUserStart, req: -1, a: int32(q.user)})
	}
	if !r.detail {
		r.free = append(r.free, int32(idx))
	}
}

// afterBreakerCall fills in the window's rates of a transition to OPEN that
// the breaker call just made: OPEN keeps the tripping window, so its metrics are
// the rates that tripped (for HALF_OPEN_TO_OPEN, those of the trial calls).
func (r *runner) afterBreakerCall() {
	if r.pendingRates < 0 {
		return
	}
	m := r.cbs[r.pendingInst].Metrics()
	tr := &r.res.Transitions[r.pendingRates]
	tr.FailureRate, tr.SlowCallRate = m.FailureRate, m.SlowCallRate
	r.pendingRates = -1
}

// onEvent receives replica inst's breaker events synchronously, in publication order.
func (r *runner) onEvent(inst int, e breaker.Event) {
	x := &r.exceeded[inst]
	switch e.Type {
	case breaker.EventFailureRateExceeded:
		x.fail = true
	case breaker.EventSlowCallRateExceeded:
		x.slow = true
	case breaker.EventStateTransition:
		tr := Transition{At: e.CreationTime.Sub(r.start), Kind: e.Transition(), From: e.From, To: e.To}
		if r.cur >= 0 {
			tr.Request = r.reqs[r.cur].seq
		}
		if r.fleet != nil {
			tr.Instance = inst + 1
			r.fleet.transition(r, inst, &tr)
		}
		switch {
		case e.From == breaker.StateClosed && e.To == breaker.StateOpen:
			tr.Cause = breaker.CauseOf(x.fail, x.slow)
			if r.fleet != nil {
				if in := &r.fleet.inst[inst]; in.FirstOpenRequest == 0 && in.FirstOpenCause == "" {
					in.FirstOpenRequest, in.FirstOpenLocal = r.sent, r.fleet.sent[inst]
					in.FirstOpenAt, in.FirstOpenCause = tr.At, tr.Cause
				}
			}
			if r.res.FirstOpenRequest == 0 && r.res.FirstOpenCause == "" {
				// The request in flight when the breaker opened: the last one sent
				// at or before that instant, as the measurement counts it.
				r.res.FirstOpenRequest = r.sent
				r.res.FirstOpenAt = tr.At
				r.res.FirstOpenCause = tr.Cause
			}
		case e.From == breaker.StateHalfOpen && e.To == breaker.StateOpen:
			tr.Cause = breaker.CauseHalfOpenTrial
		}
		*x = exceededFlags{}
		if e.To == breaker.StateOpen && r.cur >= 0 {
			r.pendingRates = len(r.res.Transitions)
			r.pendingInst = inst
		}
		r.res.Transitions = append(r.res.Transitions, tr)
	}
}

// newFleetState starts following a fleet arm's replicas (all CLOSED, or all
// OPEN with StartOpen).
func newFleetState(arm *Arm) *fleetState {
	n := arm.Instances()
	f := &fleetState{n: n, state: make([]breaker.State, n), openSince: make([]time.Duration, n), sent: make([]int, n),
		inst: make([]InstanceResult, n)}
	f.res = FleetResult{Replicas: n, Balance: arm.Balance, OpenTime: make([]time.Duration, n+1)}
	for i := range f.inst {
		f.inst[i].Instance = i + 1
		if arm.StartOpen {
			f.state[i] = breaker.StateOpen
		}
	}
	if arm.StartOpen {
		f.openN = n
	}
	return f
}

// advance adds the time from f.last to t to the OPEN counts, split at phase
// ends (the last phase, or the one sequential phase, takes everything after).
func (f *fleetState) advance(r *runner, t time.Duration) {
	for f.last < t {
		ph, end := 0, t
		if r.phaseEnds != nil {
			ph = r.phaseAt(f.last)
			if ph < len(r.phaseEnds)-1 && r.phaseEnds[ph] < end {
				end = r.phaseEnds[ph]
			}
		}
		d := end - f.last
		f.res.OpenTime[f.openN] += d
		p := &f.res.Phases[ph]
		p.Span += d
		p.OpenInstanceTime += time.Duration(f.openN) * d
		if f.openN > 0 {
			p.AnyOpenTime += d
		}
		if f.openN == f.n {
			p.AllOpenTime += d
		}
		f.last = end
	}
}

// transition records replica inst's transition tr (At set) in the OPEN counts.
func (f *fleetState) transition(r *runner, inst int, tr *Transition) {
	f.advance(r, tr.At)
	at := max(tr.At, f.last)
	if f.state[inst] == breaker.StateOpen && tr.To != breaker.StateOpen {
		f.openN--
		f.inst[inst].OpenTime += at - f.openSince[inst]
	}
	if f.state[inst] != breaker.StateOpen && tr.To == breaker.StateOpen {
		f.openN++
		f.openSince[inst] = at
	}
	f.state[inst] = tr.To
}

// finishFleet closes the OPEN counts at the horizon and fills the result.
func (r *runner) finishFleet() {
	f := r.fleet
	h := r.res.End
	if n := len(r.phaseEnds); n > 0 {
		h = max(h, r.phaseEnds[n-1])
	}
	f.advance(r, h)
	for i := range f.inst {
		if f.state[i] == breaker.StateOpen {
			f.inst[i].OpenTime += h - f.openSince[i]
			f.openSince[i] = h
		}
	}
	opened := 0
	for i := range f.inst {
		if f.inst[i].FirstOpenCause != "" {
			opened++
		}
	}
	f.res.Horizon = h
	f.res.InstancesOpened = opened
	res := f.res
	r.res.Fleet = &res
	r.res.Instances = f.inst
}
