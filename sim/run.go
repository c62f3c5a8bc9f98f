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
}

type runner struct {
	arm     *Arm
	detail  bool // keep every request (for the request log); otherwise ended requests' slots are reused
	rng     *rand.Rand
	rnd     func() float64
	clock   *breaker.VirtualClock
	start   time.Time
	cb      *breaker.CircuitBreaker
	q       queue
	reqs    []request // request slots: index = seq-1 with detail, reused without
	free    []int32   // slots of ended requests, reused by newRequest (without detail)
	sent    int       // requests sent so far
	cur     int       // slot of the request whose breaker call is running, -1 for a timer
	timeout time.Duration
	res     RunResult
	// cause flags: *_EXCEEDED events seen since the last transition
	failExceeded, slowExceeded bool
	pendingRates               int // index of a transition to OPEN whose rates are read after the breaker call, -1 none
	phaseEnds                  []time.Duration
	userLeft                   []int
	// errors reused across attempts (the breaker and the retry only read them)
	gwErr      [4]error
	timeoutErr error
	rejectErr  error
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
	cb, err := breaker.New(name, arm.Breaker, breaker.WithClock(r.clock))
	if err != nil {
		return nil, armErr("Breaker", "%v", err)
	}
	r.cb = cb
	if arm.StartOpen {
		if err := cb.TransitionTo(breaker.StateOpen); err != nil {
			return nil, armErr("StartOpen", "%v", err)
		}
		r.clock.AdvanceTo(r.start)
	}
	cb.Subscribe(r.onEvent)
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
	if r.detail {
		r.res.RequestLog = make([]RequestResult, len(r.reqs))
		for i := range r.reqs {
			q := &r.reqs[i]
			r.res.RequestLog[i] = RequestResult{Seq: q.seq, Phase: q.phase, User: q.user, Sent: q.sent, Ended: q.ended,
				Attempts: q.attempts, Rejections: q.rejections, Status: q.status, Last: q.last}
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
	q := request{seq: r.sent, phase: phase, user: user, sent: t}
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
	permitted := r.cb.TryAcquirePermission()
	r.afterBreakerCall()
	if !permitted {
		q.rejections++
		r.res.RejectedAttempts++
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
		r.finish(t, idx, StatusRejected)
		return
	}
	q.attempts++
	r.res.GatewayAttempts++
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
		r.cb.OnSuccess(q.shape.elapsed)
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
	r.cb.OnError(q.shape.elapsed, err)
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
	m := r.cb.Metrics()
	tr := &r.res.Transitions[r.pendingRates]
	tr.FailureRate, tr.SlowCallRate = m.FailureRate, m.SlowCallRate
	r.pendingRates = -1
}

// onEvent receives the breaker's events synchronously, in publication order.
func (r *runner) onEvent(e breaker.Event) {
	switch e.Type {
	case breaker.EventFailureRateExceeded:
		r.failExceeded = true
	case breaker.EventSlowCallRateExceeded:
		r.slowExceeded = true
	case breaker.EventStateTransition:
		tr := Transition{At: e.CreationTime.Sub(r.start), Kind: e.Transition(), From: e.From, To: e.To}
		if r.cur >= 0 {
			tr.Request = r.reqs[r.cur].seq
		}
		switch {
		case e.From == breaker.StateClosed && e.To == breaker.StateOpen:
			tr.Cause = breaker.CauseOf(r.failExceeded, r.slowExceeded)
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
		r.failExceeded, r.slowExceeded = false, false
		if e.To == breaker.StateOpen && r.cur >= 0 {
			r.pendingRates = len(r.res.Transitions)
		}
		r.res.Transitions = append(r.res.Transitions, tr)
	}
}
