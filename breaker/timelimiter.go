package breaker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// TimeoutError is returned by TimeLimiter.Execute when the call ran past the
// timeout (Java's TimeoutException from TimeLimiter).
type TimeoutError struct {
	// Name is the time limiter's name.
	Name string
}

// Error returns the library's message: "TimeLimiter 'x' recorded a timeout exception.".
func (e *TimeoutError) Error() string {
	return fmt.Sprintf("TimeLimiter '%s' recorded a timeout exception.", e.Name)
}

// Timeout reports true, so a *TimeoutError satisfies interface{ Timeout() bool }.
func (e *TimeoutError) Timeout() bool { return true }

// TimeLimiterEvent is a time limiter event.
type TimeLimiterEvent struct {
	// LimiterName is the time limiter's name.
	LimiterName string
	// Type is "SUCCESS", "TIMEOUT" or "ERROR".
	Type string
	// CreationTime is the limiter clock's time when the event was built.
	CreationTime time.Time
}

// TimeLimiterMetrics counts finished calls by kind (resilience4j_timelimiter_calls_total).
type TimeLimiterMetrics struct {
	// Successful, Failed and Timeout count calls that returned nil, returned an
	// error, and ran past the timeout.
	Successful, Failed, Timeout int64
}

// TimeLimiter is Resilience4j's TimeLimiter in its blocking Future form: the call
// runs in its own goroutine and the caller waits at most TimeoutDuration.
type TimeLimiter struct {
	name  string
	cfg   TimeLimiterConfig
	clock Clock

	mu      sync.Mutex
	metrics TimeLimiterMetrics
	subs    []tlSub
	nextID  int
}

type tlSub struct {
	id int
	f  func(TimeLimiterEvent)
}

// NewTimeLimiter builds a time limiter; a nil clock means SystemClock(). A
// negative timeout is treated as 0 (time out at once).
func NewTimeLimiter(name string, cfg TimeLimiterConfig, clock Clock) *TimeLimiter {
	if clock == nil {
		clock = SystemClock()
	}
	if cfg.TimeoutDuration < 0 {
		cfg.TimeoutDuration = 0
	}
	return &TimeLimiter{name: name, cfg: cfg, clock: clock}
}

// Name returns the time limiter's name.
func (t *TimeLimiter) Name() string { return t.name }

// Config returns the time limiter's configuration.
func (t *TimeLimiter) Config() TimeLimiterConfig { return t.cfg }

// Execute runs fn and waits for it at most TimeoutDuration of the limiter's
// clock. On timeout it publishes TIMEOUT, cancels fn's context when
// CancelRunningFuture is set (otherwise fn keeps running until it returns) and
// returns *TimeoutError. An error from fn publishes ERROR (TIMEOUT when it is or
// wraps a *TimeoutError) and is returned as is;
// nil publishes SUCCESS. When ctx ends first, fn's context is cancelled, ctx's
// error is returned and nothing is counted (the waiting thread was interrupted).
func (t *TimeLimiter) Execute(ctx context.Context, fn func(context.Context) error) error {
	callCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		err := fn(callCtx)
		done <- err
		if !t.cfg.CancelRunningFuture {
			cancel()
		}
	}()
	timedOut := make(chan struct{})
	timer := t.clock.AfterFunc(t.cfg.TimeoutDuration, func() { close(timedOut) })
	// completed records fn's own result: SUCCESS for nil; for an error, TIMEOUT
	// when it is a *TimeoutError (a nested limiter's timeout: the library's
	// onError treats any TimeoutException as a timeout), else ERROR.
	completed := func(err error) error {
		cancel()
		var te *TimeoutError
		if errors.As(err, &te) {
			t.finish("TIMEOUT", func(m *TimeLimiterMetrics) { m.Timeout++ })
			return err
		}
		if err != nil {
			t.finish("ERROR", func(m *TimeLimiterMetrics) { m.Failed++ })
			return err
		}
		t.finish("SUCCESS", func(m *TimeLimiterMetrics) { m.Successful++ })
		return nil
	}
	select {
	case err := <-done:
		timer.Stop()
		return completed(err)
	case <-timedOut:
		// A result that arrived at the same instant still wins, as future.get does.
		select {
		case err := <-done:
			return completed(err)
		default:
		}
		t.finish("TIMEOUT", func(m *TimeLimiterMetrics) { m.Timeout++ })
		if t.cfg.CancelRunningFuture {
			cancel()
		}
		return &TimeoutError{Name: t.name}
	case <-ctx.Done():
		timer.Stop()
		cancel()
		return fmt.Errorf("time limiter %s: %w", t.name, ctx.Err())
	}
}

func (t *TimeLimiter) finish(kind string, count func(*TimeLimiterMetrics)) {
	t.mu.Lock()
	count(&t.metrics)
	subs := t.subs
	t.mu.Unlock()
	if len(subs) == 0 {
		return
	}
	ev := TimeLimiterEvent{LimiterName: t.name, Type: kind, CreationTime: t.clock.Now()}
	for _, s := range subs {
		s.f(ev)
	}
}

// Metrics returns the call counters.
func (t *TimeLimiter) Metrics() TimeLimiterMetrics {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.metrics
}

// Subscribe registers f for every event, called synchronously on the caller's
// goroutine; it returns a function that removes f.
func (t *TimeLimiter) Subscribe(f func(TimeLimiterEvent)) func() {
	t.mu.Lock()
	t.nextID++
	id := t.nextID
	subs := make([]tlSub, len(t.subs), len(t.subs)+1)
	copy(subs, t.subs)
	t.subs = append(subs, tlSub{id: id, f: f})
	t.mu.Unlock()
	return func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		subs := make([]tlSub, 0, len(t.subs))
		for _, s := range t.subs {
			if s.id != id {
				subs = append(subs, s)
			}
		}
		t.subs = subs
	}
}
