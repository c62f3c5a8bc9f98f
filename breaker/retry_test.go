package breaker

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"
)

// stepClock runs every AfterFunc at once and records the waits asked for.
type stepClock struct {
	mu    sync.Mutex
	now   time.Time
	waits []time.Duration
}

func (c *stepClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

func (c *stepClock) AfterFunc(d time.Duration, f func()) Timer {
	c.mu.Lock()
	c.waits = append(c.waits, d)
	c.now = c.now.Add(d)
	c.mu.Unlock()
	f()
	return stoppedTimer{}
}

type stoppedTimer struct{}

func (stoppedTimer) Stop() bool { return false }

func TestRetryAlgorithm(t *testing.T) {
	notRetryable := errors.New("not retryable")
	tests := []struct {
		name       string
		max        int
		results    []error // per attempt; the last repeats
		wantErr    error
		wantEvents []string
		wantCalls  int
		wantCounts RetryMetrics
	}{
		{"first try succeeds: no event", 3, []error{nil}, nil, nil, 1, RetryMetrics{SuccessfulWithoutRetry: 1}},
		{"second try succeeds", 3, []error{boomError{}, nil}, nil, []string{"RETRY(1)", "SUCCESS(1)"}, 2, RetryMetrics{SuccessfulWithRetry: 1}},
		{"always fails", 3, []error{boomError{}}, boomError{}, []string{"RETRY(1)", "RETRY(2)", "ERROR(3)"}, 3, RetryMetrics{FailedWithRetry: 1}},
		{"one attempt fails: failed with retry", 1, []error{boomError{}}, boomError{}, []string{"ERROR(1)"}, 1, RetryMetrics{FailedWithRetry: 1}},
		{"not retryable", 3, []error{notRetryable}, notRetryable, []string{"IGNORED_ERROR(0)"}, 1, RetryMetrics{FailedWithoutRetry: 1}},
		{"not retryable after a retry", 3, []error{boomError{}, notRetryable}, notRetryable, []string{"RETRY(1)", "IGNORED_ERROR(0)"}, 2, RetryMetrics{FailedWithoutRetry: 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultRetryConfig()
			cfg.MaxAttempts = tc.max
			cfg.Retryable = func(err error) bool { return !errors.Is(err, notRetryable) }
			clk := &stepClock{now: t0()}
			r := NewRetry("r", cfg, clk, nil)
			var events []string
			r.Subscribe(func(e RetryEvent) { events = append(events, fmt.Sprintf("%s(%d)", e.Type, e.NumberOfAttempts)) })
			calls := 0
			err := r.Execute(context.Background(), func(_ context.Context, attempt int) error {
				calls++
				if attempt != calls {
					t.Errorf("attempt %d on call %d", attempt, calls)
				}
				return tc.results[min(attempt-1, len(tc.results)-1)]
			})
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && err != nil) {
				t.Errorf("err = %v, want %v", err, tc.wantErr)
			}
			if calls != tc.wantCalls {
				t.Errorf("%d calls, want %d", calls, tc.wantCalls)
			}
			if !equalStrings(events, tc.wantEvents) {
				t.Errorf("events %v, want %v", events, tc.wantEvents)
			}
			if got := r.Metrics(); got != tc.wantCounts {
				t.Errorf("metrics %+v, want %+v", got, tc.wantCounts)
			}
			for _, w := range clk.waits {
				if w != 500*time.Millisecond {
					t.Errorf("wait %v, want the default 500ms", w)
				}
			}
		})
	}
}

func TestRetryInterval(t *testing.T) {
	zero := func() float64 { return 0 }
	almostOne := func() float64 { return 0.999999 }
	tests := []struct {
		name string
		cfg  RetryConfig
		rnd  func() float64
		want []time.Duration // for retries 1, 2, 3, 4
	}{
		{"fixed", RetryConfig{WaitDuration: 500 * time.Millisecond}, nil, []time.Duration{500, 500, 500, 500}},
		{"exponential truncates each step", RetryConfig{WaitDuration: 500 * time.Millisecond, EnableExponentialBackoff: true, ExponentialBackoffMultiplier: 1.5}, nil, []time.Duration{500, 750, 1125, 1687}},
		{"exponential capped", RetryConfig{WaitDuration: 500 * time.Millisecond, EnableExponentialBackoff: true, ExponentialBackoffMultiplier: 2, ExponentialMaxWaitDuration: 1500 * time.Millisecond}, nil, []time.Duration{500, 1000, 1500, 1500}},
		{"randomised low end", RetryConfig{WaitDuration: 500 * time.Millisecond, EnableRandomizedWait: true, RandomizedWaitFactor: 0.5}, zero, []time.Duration{250, 250, 250, 250}},
		{"randomised high end", RetryConfig{WaitDuration: 500 * time.Millisecond, EnableRandomizedWait: true, RandomizedWaitFactor: 0.5}, almostOne, []time.Duration{750, 750, 750, 750}},
		{"randomised never below 1ms", RetryConfig{WaitDuration: 0, EnableRandomizedWait: true, RandomizedWaitFactor: 0.5}, zero, []time.Duration{1, 1, 1, 1}},
		{"exponential random", RetryConfig{WaitDuration: 100 * time.Millisecond, EnableExponentialBackoff: true, ExponentialBackoffMultiplier: 2, EnableRandomizedWait: true, RandomizedWaitFactor: 0.5}, zero, []time.Duration{50, 100, 200, 400}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for i, w := range tc.want {
				if got := tc.cfg.Interval(i+1, tc.rnd); got != w*time.Millisecond {
					t.Errorf("retry %d: %v, want %v", i+1, got, w*time.Millisecond)
				}
			}
		})
	}
}

// TestRetryRandomisedSpread: with factor 0.5 around 500 ms every wait lies in
// [250, 750] ms, and a seeded generator gives the same waits twice.
func TestRetryRandomisedSpread(t *testing.T) {
	cfg := DefaultRetryConfig()
	cfg.MaxAttempts = 50
	cfg.EnableRandomizedWait = true
	run := func() []time.Duration {
		clk := &stepClock{now: t0()}
		r := NewRetry("r", cfg, clk, rand.New(rand.NewPCG(1, 2)))
		_ = r.Execute(context.Background(), func(context.Context, int) error { return boomError{} })
		return clk.waits
	}
	a, b := run(), run()
	if len(a) != 49 {
		t.Fatalf("%d waits, want 49", len(a))
	}
	distinct := map[time.Duration]bool{}
	for i := range a {
		if a[i] != b[i] {
			t.Fatal("same seed, different waits")
		}
		if a[i] < 250*time.Millisecond || a[i] > 750*time.Millisecond {
			t.Errorf("wait %v outside [250ms, 750ms]", a[i])
		}
		distinct[a[i]] = true
	}
	// 49 draws from ~500 values: all equal would mean the generator is unused.
	if len(distinct) < 10 {
		t.Errorf("only %d distinct waits", len(distinct))
	}
}

// TestRetryRetriesRejections: with the default policy Retry retries
// CallNotPermitted; every attempt is refused and counted by the breaker.
func TestRetryRetriesRejections(t *testing.T) {
	clk := &stepClock{now: t0()}
	cb, err := New("pg", DefaultConfig(), WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	_ = cb.TransitionTo(StateOpen)
	r := NewRetry("pg", DefaultRetryConfig(), clk, nil)
	calls := 0
	err = Decorate(r, cb, nil, func(context.Context) error { calls++; return nil })(context.Background())
	if !IsCallNotPermitted(err) || calls != 0 {
		t.Fatalf("err = %v, calls %d", err, calls)
	}
	if got := cb.Metrics().NotPermittedCalls; got != 3 {
		t.Errorf("not permitted %d, want 3", got)
	}
	if got := r.Metrics(); got != (RetryMetrics{FailedWithRetry: 1}) {
		t.Errorf("retry metrics %+v", got)
	}
	// Ignoring rejections: one attempt, failed without retry.
	cfg := DefaultRetryConfig()
	cfg.Retryable = func(err error) bool { return !IsCallNotPermitted(err) }
	r2 := NewRetry("pg", cfg, clk, nil)
	_ = Decorate(r2, cb, nil, func(context.Context) error { return nil })(context.Background())
	if got := r2.Metrics(); got != (RetryMetrics{FailedWithoutRetry: 1}) {
		t.Errorf("retry metrics %+v", got)
	}
}

func TestRetryWaitHonoursContext(t *testing.T) {
	clk := NewVirtualClock(t0())
	r := NewRetry("r", DefaultRetryConfig(), clk, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- r.Execute(ctx, func(context.Context, int) error { return boomError{} })
	}()
	waitPending(t, clk, 1) // waiting before retry 1
	cancel()
	err := <-done
	if !errors.Is(err, context.Canceled) || !errors.Is(err, boomError{}) {
		t.Fatalf("err = %v, want the last error joined with context.Canceled", err)
	}
	if got := r.Metrics(); got != (RetryMetrics{}) {
		t.Errorf("an interrupted wait counts nothing: %+v", got)
	}
}

func TestDecorateNil(t *testing.T) {
	called := false
	f := Decorate(nil, nil, nil, func(context.Context) error { called = true; return nil })
	if err := f(context.Background()); err != nil || !called {
		t.Fatalf("err %v called %v", err, called)
	}
}
