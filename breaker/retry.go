package breaker

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"
)

// RetryEvent is a retry event.
type RetryEvent struct {
	// RetryName is the retry's name.
	RetryName string
	// Type is "RETRY", "SUCCESS", "ERROR" or "IGNORED_ERROR".
	Type string
	// NumberOfAttempts is the number of failed attempts so far (0 for IGNORED_ERROR).
	NumberOfAttempts int
	// CreationTime is the retry clock's time when the event was built.
	CreationTime time.Time
	// Err is the last error (nil only for a SUCCESS after no error, which cannot happen).
	Err error
	// WaitInterval is the wait before the next attempt, RETRY only.
	WaitInterval time.Duration
}

// RetryMetrics counts finished Execute calls (resilience4j_retry_calls_total by kind).
type RetryMetrics struct {
	// SuccessfulWithoutRetry: the first attempt succeeded.
	SuccessfulWithoutRetry int64
	// SuccessfulWithRetry: a later attempt succeeded.
	SuccessfulWithRetry int64
	// FailedWithoutRetry: the error was not retryable.
	FailedWithoutRetry int64
	// FailedWithRetry: every attempt failed (maxAttempts 1 included).
	FailedWithRetry int64
}

// Retry is Resilience4j's Retry (the synchronous Retry.Context).
type Retry struct {
	name  string
	cfg   RetryConfig
	clock Clock

	mu      sync.Mutex
	rng     *rand.Rand
	metrics RetryMetrics
	subs    []retrySub
	nextID  int
}

type retrySub struct {
	id int
	f  func(RetryEvent)
}

// NewRetry builds a retry. A nil clock means SystemClock(); rng draws the
// randomised waits (nil: a generator seeded from the runtime). A MaxAttempts
// below 1 is treated as 1.
func NewRetry(name string, cfg RetryConfig, clock Clock, rng *rand.Rand) *Retry {
	if clock == nil {
		clock = SystemClock()
	}
	if rng == nil {
		rng = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	if cfg.MaxAttempts < 1 {
		cfg.MaxAttempts = 1
	}
	return &Retry{name: name, cfg: cfg, clock: clock, rng: rng}
}

// Name returns the retry's name.
func (r *Retry) Name() string { return r.name }

// Config returns the retry's configuration.
func (r *Retry) Config() RetryConfig { return r.cfg }

// ShouldRetry reports whether err is retried: Retryable(err), or true for
// every error when Retryable is nil (CallNotPermittedError included, as in the library).
func (c RetryConfig) ShouldRetry(err error) bool {
	if c.Retryable == nil {
		return true
	}
	return c.Retryable(err)
}

// Interval returns the wait before retry n (1-based: n = 1 is the wait after the
// first failed attempt), as IntervalFunction computes it in whole milliseconds:
// fixed WaitDuration; exponential WaitDuration*multiplier^(n-1) truncated at each
// step and capped by ExponentialMaxWaitDuration; randomised
// max(1, x-f*x + rnd()*(2*f*x+1)) truncated; both together randomise the
// exponential value, then cap it. rnd returns a number in [0, 1) (math.Random);
// it is called once per randomised interval and may be nil when no
// randomisation is configured.
func (c RetryConfig) Interval(n int, rnd func() float64) time.Duration {
	if n < 1 {
		n = 1
	}
	ms := c.WaitDuration.Milliseconds()
	if c.EnableExponentialBackoff {
		ms = exponentialMillis(ms, c.ExponentialBackoffMultiplier, n)
	}
	if c.EnableRandomizedWait && rnd != nil {
		ms = randomize(ms, c.RandomizedWaitFactor, rnd())
	}
	if c.EnableExponentialBackoff && c.ExponentialMaxWaitDuration > 0 {
		ms = min(ms, c.ExponentialMaxWaitDuration.Milliseconds())
	}
	return millis(ms)
}

// Execute calls fn until it succeeds, returns a non-retryable error, or has run
// MaxAttempts times, waiting Interval(n) on the retry's clock between attempts.
// attempt is 1-based. Events and counters follow the library exactly: a first
// success publishes nothing; a success after n failures publishes SUCCESS(n); a
// non-retryable error publishes IGNORED_ERROR(0); exhaustion publishes ERROR(n);
// each retry publishes RETRY(n) before its wait. When ctx ends during a wait the
// last error is returned joined with ctx's error, and nothing is counted.
func (r *Retry) Execute(ctx context.Context, fn func(ctx context.Context, attempt int) error) error {
	_, err := r.ExecuteResult(ctx, func(ctx context.Context, attempt int) (any, error) {
		return nil, fn(ctx, attempt)
	})
	return err
}

// ExecuteResult is Execute for a call that returns a result (Retry.decorateCallable
// with Retry.Context): a result for which RetryOnResult is true counts as a failed
// attempt and is retried after RETRY(n) with no error; when it was the last
// attempt, the result is returned after ERROR(n) carrying the last error, or
// *RetryResultExhaustedError when no attempt failed with an error, and the call
// counts as failed with retry. With FailAfterMaxAttempts the ERROR(n) carries
// *RetryResultExhaustedError and *MaxRetriesExceededError is then handled as one
// more attempt's error, as the library does: ERROR(n+1) and counted twice when
// it is retryable, IGNORED_ERROR otherwise.
func (r *Retry) ExecuteResult(ctx context.Context, fn func(ctx context.Context, attempt int) (any, error)) (any, error) {
	failed := 0
	var lastErr error
	for attempt := 1; ; attempt++ {
		res, err := fn(ctx, attempt)
		if err == nil {
			if r.cfg.RetryOnResult != nil && r.cfg.RetryOnResult(res) {
				failed++
				if failed < r.cfg.MaxAttempts {
					wait := r.interval(failed)
					r.publish(RetryEvent{Type: "RETRY", NumberOfAttempts: failed, WaitInterval: wait})
					if werr := r.sleep(ctx, wait); werr != nil {
						return res, errors.Join(lastErr, werr)
					}
					continue
				}
				r.count(func(m *RetryMetrics) { m.FailedWithRetry++ })
				ev := lastErr
				if ev == nil || r.cfg.FailAfterMaxAttempts {
					ev = &RetryResultExhaustedError{}
				}
				r.publish(RetryEvent{Type: "ERROR", NumberOfAttempts: failed, Err: ev})
				if !r.cfg.FailAfterMaxAttempts {
					return res, nil
				}
				// The library throws MaxRetriesExceededException from onComplete inside
				// the attempt's try block, so it is handled once more as an attempt's
				// error: counted and published again (ERROR(n+1), or IGNORED_ERROR when
				// not retryable).
				err = &MaxRetriesExceededError{Name: r.name, MaxAttempts: r.cfg.MaxAttempts}
			}
		}
		if err == nil {
			if failed == 0 {
				r.count(func(m *RetryMetrics) { m.SuccessfulWithoutRetry++ })
				return res, nil
			}
			r.count(func(m *RetryMetrics) { m.SuccessfulWithRetry++ })
			r.publish(RetryEvent{Type: "SUCCESS", NumberOfAttempts: failed, Err: lastErr})
			return res, nil
		}
		if !r.cfg.ShouldRetry(err) {
			r.count(func(m *RetryMetrics) { m.FailedWithoutRetry++ })
			r.publish(RetryEvent{Type: "IGNORED_ERROR", NumberOfAttempts: 0, Err: err})
			return res, err
		}
		lastErr = err
		failed++
		if failed >= r.cfg.MaxAttempts {
			r.count(func(m *RetryMetrics) { m.FailedWithRetry++ })
			r.publish(RetryEvent{Type: "ERROR", NumberOfAttempts: failed, Err: err})
			return res, err
		}
		wait := r.interval(failed)
		r.publish(RetryEvent{Type: "RETRY", NumberOfAttempts: failed, Err: err, WaitInterval: wait})
		if werr := r.sleep(ctx, wait); werr != nil {
			return res, errors.Join(err, werr)
		}
	}
}

// MaxRetriesExceededError is returned by ExecuteResult with FailAfterMaxAttempts
// when the last attempt's result still asked for a retry (MaxRetriesExceededException).
type MaxRetriesExceededError struct {
	// Name is the retry's name; MaxAttempts its configured attempts.
	Name        string
	MaxAttempts int
}

// Error returns the library's message.
func (e *MaxRetriesExceededError) Error() string {
	return fmt.Sprintf("Retry '%s' has exhausted all attempts (%d)", e.Name, e.MaxAttempts)
}

// JavaClass names the Java exception this error stands for (springconf matches
// exception lists against it).
func (e *MaxRetriesExceededError) JavaClass() string {
	return "io.github.resilience4j.retry.MaxRetriesExceededException"
}

// RetryResultExhaustedError is the error an ERROR retry event carries when the
// attempts ran out on results rather than errors (the library's MaxRetriesExceeded).
type RetryResultExhaustedError struct{}

// Error returns the library's message.
func (*RetryResultExhaustedError) Error() string {
	return "max retries is reached out for the result predicate check"
}

// JavaClass names the Java class this error stands for.
func (*RetryResultExhaustedError) JavaClass() string {
	return "io.github.resilience4j.retry.MaxRetriesExceeded"
}

func (r *Retry) interval(n int) time.Duration {
	if !r.cfg.EnableRandomizedWait {
		return r.cfg.Interval(n, nil)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cfg.Interval(n, r.rng.Float64)
}

func (r *Retry) sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d <= 0 {
		return nil
	}
	ch := make(chan struct{})
	t := r.clock.AfterFunc(d, func() { close(ch) })
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		t.Stop()
		return ctx.Err()
	}
}

func (r *Retry) count(f func(*RetryMetrics)) {
	r.mu.Lock()
	f(&r.metrics)
	r.mu.Unlock()
}

func (r *Retry) publish(e RetryEvent) {
	r.mu.Lock()
	subs := r.subs
	r.mu.Unlock()
	if len(subs) == 0 {
		return
	}
	e.RetryName = r.name
	e.CreationTime = r.clock.Now()
	for _, s := range subs {
		s.f(e)
	}
}

// Metrics returns the call counters.
func (r *Retry) Metrics() RetryMetrics {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.metrics
}

// Subscribe registers f for every event, called synchronously on the caller's
// goroutine; it returns a function that removes f.
func (r *Retry) Subscribe(f func(RetryEvent)) func() {
	r.mu.Lock()
	r.nextID++
	id := r.nextID
	subs := make([]retrySub, len(r.subs), len(r.subs)+1)
	copy(subs, r.subs)
	r.subs = append(subs, retrySub{id: id, f: f})
	r.mu.Unlock()
	return func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		subs := make([]retrySub, 0, len(r.subs))
		for _, s := range r.subs {
			if s.id != id {
				subs = append(subs, s)
			}
		}
		r.subs = subs
	}
}

// Decorate returns Retry(CircuitBreaker(TimeLimiter(call))), Spring's default
// aspect order; any part may be nil. Each retry attempt is a separate breaker
// call, and a timeout reaches the breaker as *TimeoutError after about the
// timeout, so it is recorded as a failure, and as slow past the slow threshold.
func Decorate(r *Retry, cb *CircuitBreaker, tl *TimeLimiter, call func(context.Context) error) func(context.Context) error {
	f := call
	if tl != nil {
		inner := f
		f = func(ctx context.Context) error { return tl.Execute(ctx, inner) }
	}
	if cb != nil {
		inner := f
		f = func(ctx context.Context) error { return cb.Execute(ctx, inner) }
	}
	if r != nil {
		inner := f
		f = func(ctx context.Context) error {
			return r.Execute(ctx, func(ctx context.Context, _ int) error { return inner(ctx) })
		}
	}
	return f
}
