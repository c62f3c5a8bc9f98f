package breaker

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Option configures a CircuitBreaker built by New.
type Option func(*options)

type options struct {
	clock Clock
}

// WithClock sets the clock the breaker reads for the OPEN deadline, the TIME_BASED
// window buckets, event times, Execute's durations and its two timers. The
// default is SystemClock().
func WithClock(c Clock) Option {
	return func(o *options) {
		if c != nil {
			o.clock = c
		}
	}
}

// Metrics is a snapshot of a breaker's current metrics object (CircuitBreaker.Metrics).
type Metrics struct {
	// FailureRate and SlowCallRate are percentages, -1 while the window holds no
	// call or fewer calls than the minimum number of calls.
	FailureRate, SlowCallRate float32
	// BufferedCalls is the number of calls in the window; the other counts are
	// parts of it. SuccessfulCalls = BufferedCalls - FailedCalls (slow successes included).
	BufferedCalls, FailedCalls, SuccessfulCalls, SlowCalls, SlowSuccessfulCalls, SlowFailedCalls int
	// NotPermittedCalls counts refusals on the current metrics object (it resets
	// on most transitions, as the library's does).
	NotPermittedCalls int64
}

// cbState is one of the library's state objects. A legal transition always builds
// a new one. kind never changes after the state is published (CircuitBreaker.cur
// is read without the lock); the other fields are guarded by the breaker's mutex.
type cbState struct {
	kind       State
	m          *metrics
	attempts   int
	retryAfter time.Time // OPEN: refuse while now <= retryAfter
	permits    int       // HALF_OPEN
	active     bool      // isClosed / isOpen / isHalfOpen
	cancelled  bool      // preTransitionHook ran: the state's timer must not act
	timer      Timer
	// METRICS_ONLY: each *_EXCEEDED event is published once per state object.
	failurePublished, slowPublished bool
}

type subscriber struct {
	id int
	f  func(Event)
}

// CircuitBreaker is Resilience4j's CircuitBreakerStateMachine with the
// SYNCHRONIZED sliding window, rule for rule (see the README section on the breaker model).
//
// It is safe for concurrent use. Events are delivered to subscribers in
// publication order on the goroutine of a caller of the breaker, after the
// breaker's lock is released: with one goroutine every event of a call has been
// delivered when the call returns; under contention an event may be delivered by
// another caller's goroutine just after. A subscriber may call the breaker; the
// events that call publishes are queued behind the one being delivered.
//
// Two paths take no lock, so that goroutines on several cores do not queue on
// it: TryAcquirePermission in CLOSED, DISABLED and METRICS_ONLY, and a record
// that would change nothing: a fast success into a full COUNT_BASED window of
// fast successes in CLOSED or METRICS_ONLY, an ignored error outside
// HALF_OPEN, both with nobody subscribed, and any record in DISABLED or
// FORCED_OPEN.
type CircuitBreaker struct {
	// Set by New, then only read.
	name    string
	cfg     Config
	clock   Clock
	now     func() time.Time
	wait    time.Duration // OPEN wait, whole milliseconds
	maxWait time.Duration // HALF_OPEN max wait, whole milliseconds; < 1ms: none

	// Read without the lock on every call, written (rarely) under it: kept off
	// the cache line of mu and of the window, which every locked call writes.
	cur  atomic.Pointer[cbState] // == st, for lock-free reads of st.kind
	noop atomic.Uint32           // noop* bits: records that change nothing now (see noopBits)
	_    [64]byte

	// Guarded by mu. The fields every record reads or writes come first.
	mu         sync.Mutex
	st         *cbState // the current state; always stored through setState
	queue      []Event
	qhead      int
	noopShadow uint32 // the value last stored in noop
	delivering bool
	subs       []subscriber
	nextSubID  int
}

// New builds a breaker in cfg.InitialState (CLOSED unless set) after checking cfg
// with Config.Validate.
func New(name string, cfg Config, opts ...Option) (*CircuitBreaker, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("circuit breaker %q: %w", name, err)
	}
	o := options{clock: SystemClock()}
	for _, opt := range opts {
		opt(&o)
	}
	cb := &CircuitBreaker{
		name:    name,
		cfg:     cfg,
		clock:   o.clock,
		wait:    cfg.WaitDurationInOpenState.Truncate(time.Millisecond),
		maxWait: cfg.MaxWaitDurationInHalfOpenState.Truncate(time.Millisecond),
	}
	cb.now = cb.clock.Now
	cb.setState(cb.initialState())
	cb.noopShadow = cb.noopBits()
	cb.noop.Store(cb.noopShadow)
	return cb, nil
}

// Name returns the breaker's name.
func (cb *CircuitBreaker) Name() string { return cb.name }

// Config returns the breaker's configuration.
func (cb *CircuitBreaker) Config() Config { return cb.cfg }

// Clock returns the clock the breaker reads.
func (cb *CircuitBreaker) Clock() Clock { return cb.clock }

// ---- state objects ----

func (cb *CircuitBreaker) closedWindow() *metrics {
	if cb.cfg.SlidingWindowType == TimeBased {
		return newTimeMetrics(cb.cfg.SlidingWindowSize, cb.cfg.MinimumNumberOfCalls, cb.now().Unix())
	}
	return newCountMetrics(cb.cfg.SlidingWindowSize, min(cb.cfg.MinimumNumberOfCalls, cb.cfg.SlidingWindowSize))
}

func (cb *CircuitBreaker) newClosed() *cbState {
	return &cbState{kind: StateClosed, m: cb.closedWindow(), active: true}
}

// initialState builds the state New starts in (getCircuitBreakerStateObjectFromState).
func (cb *CircuitBreaker) initialState() *cbState {
	switch cb.cfg.InitialState {
	case StateOpen:
		return cb.newOpen(1, cb.closedWindow())
	case StateHalfOpen:
		return cb.newHalfOpen(1)
	case StateForcedOpen:
		return &cbState{kind: StateForcedOpen, m: newCountMetrics(0, 0), attempts: 1}
	case StateDisabled:
		return &cbState{kind: StateDisabled, m: newCountMetrics(0, 0)}
	case StateMetricsOnly:
		return &cbState{kind: StateMetricsOnly, m: cb.closedWindow()}
	}
	return cb.newClosed()
}

// openWait is the OPEN wait for the attempts-th opening in a row, whole milliseconds.
func (cb *CircuitBreaker) openWait(attempts int) time.Duration {
	if f := cb.cfg.WaitIntervalFunctionInOpenState; f != nil {
		return max(f(max(attempts, 1)).Truncate(time.Millisecond), 0)
	}
	return cb.wait
}

func (cb *CircuitBreaker) newOpen(attempts int, m *metrics) *cbState {
	s := &cbState{kind: StateOpen, m: m, attempts: attempts, active: true}
	wait := cb.openWait(attempts)
	now := cb.now()
	s.retryAfter = now.Add(wait)
	if s.retryAfter.Before(now) { // saturated wait: never
		s.retryAfter = time.Unix(1<<62, 0)
	}
	if cb.cfg.AutomaticTransitionFromOpenToHalfOpenEnabled {
		s.timer = cb.clock.AfterFunc(wait, func() { cb.openTimerFired(s) })
	}
	return s
}

func (cb *CircuitBreaker) newHalfOpen(attempts int) *cbState {
	p := cb.cfg.PermittedNumberOfCallsInHalfOpenState
	s := &cbState{kind: StateHalfOpen, m: newCountMetrics(p, min(cb.cfg.MinimumNumberOfCalls, p)),
		attempts: attempts, permits: p, active: true}
	if cb.maxWait >= time.Millisecond {
		s.timer = cb.clock.AfterFunc(cb.maxWait, func() { cb.halfOpenTimerFired(s) })
	}
	return s
}

// openTimerFired is OpenState.toHalfOpenState run by the automatic-transition timer.
// reset() does not cancel it, so it may act on a later state (the library's quirk).
func (cb *CircuitBreaker) openTimerFired(s *cbState) {
	cb.lock()
	if s.active && !s.cancelled {
		s.active = false
		_ = cb.transitionLocked(StateHalfOpen) // an illegal transition is swallowed, as the scheduler does
	}
	cb.unlockAndDeliver()
}

// halfOpenTimerFired is HalfOpenState's max-wait task.
func (cb *CircuitBreaker) halfOpenTimerFired(s *cbState) {
	cb.lock()
	if s.active && !s.cancelled {
		s.active = false
		_ = cb.transitionLocked(cb.cfg.TransitionToStateAfterWaitDuration)
	}
	cb.unlockAndDeliver()
}

// transitionLocked is stateTransition: check the pair, run the current state's
// preTransitionHook (cancel its timer), build the new state, publish.
func (cb *CircuitBreaker) transitionLocked(to State) error {
	from := cb.st
	if !legalTransition(from.kind, to) {
		return &IllegalTransitionError{Name: cb.name, From: from.kind, To: to}
	}
	if from.timer != nil {
		from.timer.Stop()
	}
	from.cancelled = true
	var next *cbState
	switch to {
	case StateClosed:
		next = cb.newClosed()
	case StateOpen:
		next = cb.newOpen(from.attempts+1, from.m)
	case StateHalfOpen:
		next = cb.newHalfOpen(from.attempts)
	case StateDisabled:
		next = &cbState{kind: StateDisabled, m: newCountMetrics(0, 0)}
	case StateForcedOpen:
		next = &cbState{kind: StateForcedOpen, m: newCountMetrics(0, 0), attempts: from.attempts + 1}
	case StateMetricsOnly:
		next = &cbState{kind: StateMetricsOnly, m: cb.closedWindow()}
	}
	cb.setState(next)
	if from.kind != to {
		cb.publishTransition(from.kind, to)
	}
	return nil
}

// ---- public operations ----

// TryAcquirePermission asks for a permit (tryAcquirePermission). A refusal
// publishes NOT_PERMITTED (subject to the publication filter) and is counted.
// In CLOSED, DISABLED and METRICS_ONLY it takes no lock: the answer is true
// and nothing changes.
func (cb *CircuitBreaker) TryAcquirePermission() bool {
	switch cb.cur.Load().kind {
	case StateClosed, StateDisabled, StateMetricsOnly:
		return true
	}
	cb.lock()
	ok := cb.acquireLocked()
	if !ok && cb.allowed(EventNotPermitted) {
		cb.emit(Event{Type: EventNotPermitted})
	}
	cb.unlockAndDeliver()
	return ok
}

func (cb *CircuitBreaker) acquireLocked() bool {
	st := cb.st
	switch st.kind {
	case StateClosed:
		return st.active
	case StateOpen:
		if !cb.now().After(st.retryAfter) {
			st.m.notPermitted++
			return false
		}
		if st.active {
			st.active = false
			_ = cb.transitionLocked(StateHalfOpen)
		}
		next := cb.st
		ok := false
		if next != st && next.kind == StateHalfOpen {
			ok = halfOpenAcquire(next)
		}
		if !ok {
			// OpenState publishes and counts on its own metrics, then the caller does too.
			if cb.allowed(EventNotPermitted) {
				cb.emit(Event{Type: EventNotPermitted})
			}
			st.m.notPermitted++
		}
		return ok
	case StateHalfOpen:
		return halfOpenAcquire(st)
	case StateForcedOpen:
		st.m.notPermitted++
		return false
	}
	return true // DISABLED, METRICS_ONLY
}

func halfOpenAcquire(st *cbState) bool {
	if st.permits > 0 {
		st.permits--
		return true
	}
	st.m.notPermitted++
	return false
}

// ReleasePermission gives a permit back (releasePermission): HALF_OPEN gains one
// permit, with no upper limit; every other state ignores it.
func (cb *CircuitBreaker) ReleasePermission() {
	cb.lock()
	if cb.st.kind == StateHalfOpen {
		cb.st.permits++
	}
	cb.unlock()
}

// OnSuccess records a successful call that took d (onSuccess).
func (cb *CircuitBreaker) OnSuccess(d time.Duration) {
	cb.OnResult(d, OutcomeSuccess, nil)
}

// OnError records a call that failed with err after d, classified by
// Config.Classify (nil Classify: a failure).
func (cb *CircuitBreaker) OnError(d time.Duration, err error) {
	o := OutcomeFailure
	if cb.cfg.Classify != nil {
		o = cb.cfg.Classify(err)
	}
	cb.OnResult(d, o, err)
}

// OnResult records a call of duration d whose outcome is already classified.
// err is carried by the ERROR / IGNORED_ERROR event.
//
// When the record cannot change anything (see noopBits), for example a fast
// success into a full window of fast successes with nobody subscribed, it
// returns without taking the lock.
func (cb *CircuitBreaker) OnResult(d time.Duration, o Outcome, err error) {
	code := codeOf(o, d > cb.cfg.SlowCallDurationThreshold)
	if cb.noop.Load()&noopBit(o, code) != 0 {
		return
	}
	// A TIME_BASED window needs the clock; read it before locking so that two
	// callers read it in parallel (see metrics.record for why this is exact).
	sec := noSecond
	if cb.cfg.SlidingWindowType == TimeBased && o != OutcomeIgnored {
		sec = cb.now().Unix()
	}
	cb.lock()
	cb.recordLocked(d, o, code, sec, err)
	cb.unlockAndDeliver()
}

// codeOf is the window code of a recorded call (codeEmpty for an ignored one).
// Any outcome other than failure and ignored counts as a success, as before.
func codeOf(o Outcome, slow bool) uint8 {
	switch {
	case o == OutcomeIgnored:
		return codeEmpty
	case o == OutcomeFailure && slow:
		return codeSlowError
	case o == OutcomeFailure:
		return codeError
	case slow:
		return codeSlowSuccess
	}
	return codeSuccess
}

// OnResultRecordedAsFailure records a call whose result (not an error) counts
// as a failure, with a *ResultRecordedAsFailureError naming result.
func (cb *CircuitBreaker) OnResultRecordedAsFailure(d time.Duration, result any) {
	cb.OnResult(d, OutcomeFailure, &ResultRecordedAsFailureError{Name: cb.name, Result: fmt.Sprint(result)})
}

// recordLocked applies one record; sec is a clock reading (epoch seconds) taken
// before the lock, or noSecond.
func (cb *CircuitBreaker) recordLocked(d time.Duration, o Outcome, code uint8, sec int64, err error) {
	switch o {
	case OutcomeIgnored:
		if cb.st.kind == StateHalfOpen {
			cb.st.permits++
		}
		if cb.allowed(EventIgnoredError) {
			cb.emit(Event{Type: EventIgnoredError, ElapsedDuration: d, Err: err})
		}
		return
	case OutcomeFailure:
		if cb.allowed(EventError) {
			cb.emit(Event{Type: EventError, ElapsedDuration: d, Err: err})
		}
	default:
		if cb.allowed(EventSuccess) {
			cb.emit(Event{Type: EventSuccess, ElapsedDuration: d})
		}
	}
	st := cb.st
	switch st.kind {
	case StateClosed:
		r := cb.recordAndCheck(st.m, code, sec)
		if r.exceeded() && st.active {
			st.active = false
			cb.publishExceeded(st, r)
			_ = cb.transitionLocked(StateOpen)
		}
	case StateOpen:
		st.m.record(code, sec, cb.now)
	case StateHalfOpen:
		r := cb.recordAndCheck(st.m, code, sec)
		if r.exceeded() && st.active {
			st.active = false
			_ = cb.transitionLocked(StateOpen)
		}
		if r == belowThresholds && st.active {
			st.active = false
			_ = cb.transitionLocked(StateClosed)
		}
	case StateMetricsOnly:
		r := cb.recordAndCheck(st.m, code, sec)
		if !r.exceeded() {
			return
		}
		if r.failureExceeded() && !st.failurePublished {
			st.failurePublished = true
			cb.publishRate(st, EventFailureRateExceeded)
		}
		if r.slowExceeded() && !st.slowPublished {
			st.slowPublished = true
			cb.publishRate(st, EventSlowCallRateExceeded)
		}
	}
	// DISABLED and FORCED_OPEN record nothing.
}

func (cb *CircuitBreaker) recordAndCheck(m *metrics, code uint8, sec int64) result {
	m.record(code, sec, cb.now)
	return m.check(m.total, cb.cfg.FailureRateThreshold, cb.cfg.SlowCallRateThreshold)
}

// publishExceeded publishes FAILURE_RATE_EXCEEDED then SLOW_CALL_RATE_EXCEEDED
// as the result says, with rates read afresh.
func (cb *CircuitBreaker) publishExceeded(st *cbState, r result) {
	if r.failureExceeded() {
		cb.publishRate(st, EventFailureRateExceeded)
	}
	if r.slowExceeded() {
		cb.publishRate(st, EventSlowCallRateExceeded)
	}
}

func (cb *CircuitBreaker) publishRate(st *cbState, t EventType) {
	if !cb.allowed(t) {
		return
	}
	a := st.m.snapshot(cb.now)
	e := Event{Type: t}
	if t == EventFailureRateExceeded {
		e.FailureRate = st.m.rate(a.failed, a.calls)
	} else {
		e.SlowCallRate = st.m.rate(a.slow, a.calls)
	}
	cb.emit(e)
}

func (cb *CircuitBreaker) publishTransition(from, to State) {
	if cb.allowed(EventStateTransition) {
		cb.emit(Event{Type: EventStateTransition, From: from, To: to})
	}
}

// State returns the current state.
func (cb *CircuitBreaker) State() State {
	cb.mu.Lock()
	s := cb.st.kind
	cb.mu.Unlock()
	return s
}

// Metrics returns the current metrics (getMetrics). Reading slides a TIME_BASED
// window to now, which never changes a later result.
func (cb *CircuitBreaker) Metrics() Metrics {
	_, m := cb.Snapshot()
	return m
}

// Snapshot returns the state and its metrics read together under one lock.
func (cb *CircuitBreaker) Snapshot() (State, Metrics) {
	cb.mu.Lock()
	defer cb.mu.Unlock()
	st := cb.st
	a := st.m.snapshot(cb.now)
	return st.kind, Metrics{
		FailureRate:         st.m.rate(a.failed, a.calls),
		SlowCallRate:        st.m.rate(a.slow, a.calls),
		BufferedCalls:       a.calls,
		FailedCalls:         a.failed,
		SuccessfulCalls:     a.calls - a.failed,
		SlowCalls:           a.slow,
		SlowSuccessfulCalls: a.slow - a.slowFailed,
		SlowFailedCalls:     a.slowFailed,
		NotPermittedCalls:   st.m.notPermitted,
	}
}

// TransitionTo performs a manual transition (transitionToClosedState, ...).
// A pair that StateTransition does not hold returns *IllegalTransitionError and
// changes nothing. X→X is legal: it builds a new state object and publishes nothing.
func (cb *CircuitBreaker) TransitionTo(s State) error {
	if s < StateClosed || s > StateMetricsOnly {
		return fmt.Errorf("circuit breaker %q: transition to %v: unknown state", cb.name, s)
	}
	cb.lock()
	err := cb.transitionLocked(s)
	cb.unlockAndDeliver()
	return err
}

// Reset replaces the state with a fresh CLOSED one (reset()): it publishes
// STATE_TRANSITION X_TO_CLOSED when X is not CLOSED, then RESET. Like the
// library it does not cancel the old state's pending timer, which may later act
// on the new state.
func (cb *CircuitBreaker) Reset() {
	cb.lock()
	prev := cb.st
	cb.setState(cb.newClosed())
	if prev.kind != StateClosed {
		cb.publishTransition(prev.kind, StateClosed)
	}
	if cb.allowed(EventReset) {
		cb.emit(Event{Type: EventReset})
	}
	cb.unlockAndDeliver()
}

// Execute runs fn when a permit is granted and records its outcome: the
// duration is measured with the breaker's clock and a non-nil error is
// classified by Config.Classify. A refusal returns *CallNotPermittedError
// without calling fn. fn's error is returned unchanged. If fn panics nothing is
// recorded (a HALF_OPEN permit is lost, as with a Java Error).
func (cb *CircuitBreaker) Execute(ctx context.Context, fn func(context.Context) error) error {
	if !cb.TryAcquirePermission() {
		return &CallNotPermittedError{Name: cb.name, State: cb.State()}
	}
	start := cb.clock.Now()
	err := fn(ctx)
	d := cb.clock.Now().Sub(start)
	if err == nil {
		cb.OnSuccess(d)
	} else {
		cb.OnError(d, err)
	}
	return err
}

// ---- events ----

// Subscribe registers f for every event that passes the publication filter, in
// publication order (see CircuitBreaker). It returns a function that removes f.
func (cb *CircuitBreaker) Subscribe(f func(Event)) (unsubscribe func()) {
	cb.lock()
	cb.nextSubID++
	id := cb.nextSubID
	subs := make([]subscriber, len(cb.subs), len(cb.subs)+1)
	copy(subs, cb.subs)
	cb.subs = append(subs, subscriber{id: id, f: f})
	cb.unlock()
	return func() {
		cb.lock()
		subs := make([]subscriber, 0, len(cb.subs))
		for _, s := range cb.subs {
			if s.id != id {
				subs = append(subs, s)
			}
		}
		cb.subs = subs
		cb.unlock()
	}
}

// allowed is the publication filter: nobody listening, nothing built; STATE_TRANSITION
// and RESET always; others only in CLOSED, OPEN, HALF_OPEN and METRICS_ONLY.
func (cb *CircuitBreaker) allowed(t EventType) bool {
	if len(cb.subs) == 0 {
		return false
	}
	if t.forcePublish() {
		return true
	}
	k := cb.st.kind
	return k != StateDisabled && k != StateForcedOpen
}

func (cb *CircuitBreaker) emit(e Event) {
	e.BreakerName = cb.name
	e.CreationTime = cb.now()
	cb.queue = append(cb.queue, e)
}

// unlockAndDeliver publishes the noop bits of the state the critical section
// leaves, releases the lock and delivers queued events in order unless another
// goroutine (or an outer frame of this one) is already delivering.
func (cb *CircuitBreaker) unlockAndDeliver() {
	cb.publishNoop()
	if cb.delivering || cb.qhead == len(cb.queue) {
		cb.mu.Unlock()
		return
	}
	cb.delivering = true
	cb.deliverLoop()
}

func (cb *CircuitBreaker) deliverLoop() {
	finished := false
	defer func() {
		if !finished { // a subscriber panicked: let the next caller deliver the rest
			cb.mu.Lock()
			cb.delivering = false
			cb.mu.Unlock()
		}
	}()
	for {
		if cb.qhead == len(cb.queue) {
			clear(cb.queue)
			cb.queue = cb.queue[:0]
			cb.qhead = 0
			cb.delivering = false
			finished = true
			cb.mu.Unlock()
			return
		}
		ev := cb.queue[cb.qhead]
		cb.qhead++
		subs := cb.subs
		cb.mu.Unlock()
		for _, s := range subs {
			s.f(ev)
		}
		cb.mu.Lock()
	}
}

// ---- lock-free paths ----

// Bits of CircuitBreaker.noop. A set bit says that a record of that kind,
// applied now, would change nothing observable: no window, counter, permit or
// state change and no event. Such a record returns without the lock and is
// linearized at its load of noop.
//
// Exactness: every critical section that may change the state takes the lock
// with lock(), which clears noop before anything changes, and publishes the
// bits of the state it leaves in unlock or unlockAndDeliver. So a set bit read
// by a recorder holds for a state no critical section has started to change,
// and the record is linearized before that critical section. (State, Snapshot
// and event delivery take the mutex without lock(): they change no state.)
const (
	// noopFastSuccess: a fast success (duration <= the slow-call threshold) in
	// CLOSED or METRICS_ONLY whose COUNT_BASED window is full of fast successes,
	// nobody subscribed. The window is "the last N calls"; all N are fast
	// successes before and after, so its contents, totals and threshold check
	// (rates 0 %, thresholds > 0 %: below) are the same; only the ring's head
	// would move, and no later result depends on where a ring of equal codes
	// starts.
	noopFastSuccess uint32 = 1 << iota
	// noopIgnored: an ignored outcome outside HALF_OPEN with nobody subscribed
	// (it only publishes IGNORED_ERROR and gives a HALF_OPEN permit back).
	noopIgnored
	// noopOther: any other record (slow success, failure) in DISABLED or
	// FORCED_OPEN, which record nothing and publish no call event.
	noopOther
)

// noopBit is the bit of noop that lets a record with outcome o and code skip the lock.
func noopBit(o Outcome, code uint8) uint32 {
	switch {
	case o == OutcomeIgnored:
		return noopIgnored
	case code == codeSuccess:
		return noopFastSuccess
	}
	return noopOther
}

// noopBits computes the noop bits of the current state (lock held).
func (cb *CircuitBreaker) noopBits() uint32 {
	st := cb.st
	switch st.kind {
	case StateDisabled, StateForcedOpen:
		// The publication filter drops SUCCESS, ERROR and IGNORED_ERROR here.
		return noopFastSuccess | noopIgnored | noopOther
	}
	if len(cb.subs) != 0 {
		return 0
	}
	var w uint32
	if st.kind != StateHalfOpen {
		w |= noopIgnored
	}
	m := st.m
	if (st.kind == StateClosed || st.kind == StateMetricsOnly) && !m.timeBased && m.size > 0 &&
		m.total.calls == m.size && m.total.failed == 0 && m.total.slow == 0 {
		w |= noopFastSuccess
	}
	return w
}

// lock takes the mutex for a critical section that may change the state and
// clears noop first (see noopBits); unlock or unlockAndDeliver publishes it again.
func (cb *CircuitBreaker) lock() {
	cb.mu.Lock()
	if cb.noopShadow != 0 {
		cb.noopShadow = 0
		cb.noop.Store(0)
	}
}

// publishNoop stores the noop bits of the current state (lock held).
func (cb *CircuitBreaker) publishNoop() {
	if w := cb.noopBits(); w != cb.noopShadow {
		cb.noopShadow = w
		cb.noop.Store(w)
	}
}

// unlock ends a critical section begun with lock without delivering events.
func (cb *CircuitBreaker) unlock() {
	cb.publishNoop()
	cb.mu.Unlock()
}

// setState makes s the current state (lock held).
func (cb *CircuitBreaker) setState(s *cbState) {
	cb.st = s
	cb.cur.Store(s)
}
