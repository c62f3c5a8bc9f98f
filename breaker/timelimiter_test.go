package breaker

import (
	"context"
	"errors"
	"testing"
	"time"
)

// waitPending waits (real time) until the virtual clock holds n timers.
func waitPending(t *testing.T, c *VirtualClock, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for c.Pending() < n {
		if time.Now().After(deadline) {
			t.Fatalf("timer never scheduled (pending %d, want %d)", c.Pending(), n)
		}
		time.Sleep(100 * time.Microsecond)
	}
}

func TestTimeLimiter(t *testing.T) {
	tests := []struct {
		name       string
		cancel     bool
		result     error // returned by the call when it is not left hanging
		hang       bool
		wantErr    func(error) bool
		wantEvent  string
		wantCounts TimeLimiterMetrics
	}{
		{name: "success", result: nil, wantErr: func(e error) bool { return e == nil }, wantEvent: "SUCCESS", wantCounts: TimeLimiterMetrics{Successful: 1}},
		{name: "error passes through", result: boomError{}, wantErr: func(e error) bool { return errors.Is(e, boomError{}) }, wantEvent: "ERROR", wantCounts: TimeLimiterMetrics{Failed: 1}},
		{name: "timeout cancels the call", cancel: true, hang: true, wantErr: func(e error) bool { return ErrorOfType[*TimeoutError](e) }, wantEvent: "TIMEOUT", wantCounts: TimeLimiterMetrics{Timeout: 1}},
		{name: "timeout leaves the call running", cancel: false, hang: true, wantErr: func(e error) bool { return ErrorOfType[*TimeoutError](e) }, wantEvent: "TIMEOUT", wantCounts: TimeLimiterMetrics{Timeout: 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := NewVirtualClock(t0())
			tl := NewTimeLimiter("tl", TimeLimiterConfig{TimeoutDuration: 600 * time.Millisecond, CancelRunningFuture: tc.cancel}, clk)
			var events []string
			tl.Subscribe(func(e TimeLimiterEvent) { events = append(events, e.Type) })
			release := make(chan struct{})
			callCtx := make(chan context.Context, 1)
			done := make(chan error, 1)
			go func() {
				done <- tl.Execute(context.Background(), func(ctx context.Context) error {
					callCtx <- ctx
					if tc.hang {
						select {
						case <-ctx.Done():
						case <-release:
						}
						return ctx.Err()
					}
					return tc.result
				})
			}()
			ctx := <-callCtx
			if tc.hang {
				waitPending(t, clk, 1)
				clk.Advance(600 * time.Millisecond)
			}
			err := <-done
			if !tc.wantErr(err) {
				t.Fatalf("err = %v", err)
			}
			if tc.hang {
				if got := ctx.Err() != nil; got != tc.cancel {
					t.Errorf("call context cancelled = %v, want %v", got, tc.cancel)
				}
				if err.Error() != "TimeLimiter 'tl' recorded a timeout exception." {
					t.Errorf("message %q", err.Error())
				}
			}
			close(release)
			if !equalStrings(events, []string{tc.wantEvent}) {
				t.Errorf("events %v, want [%s]", events, tc.wantEvent)
			}
			if got := tl.Metrics(); got != tc.wantCounts {
				t.Errorf("metrics %+v, want %+v", got, tc.wantCounts)
			}
		})
	}
}

func TestTimeLimiterParentCancelled(t *testing.T) {
	tl := NewTimeLimiter("tl", TimeLimiterConfig{TimeoutDuration: time.Hour, CancelRunningFuture: true}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := tl.Execute(ctx, func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	if m := tl.Metrics(); m != (TimeLimiterMetrics{}) && m.Failed != 1 {
		// The call may have returned its ctx error first (counted as an ERROR) or
		// the limiter may have seen the parent first (nothing counted); never a timeout.
		t.Errorf("metrics %+v", m)
	}
	if tl.Metrics().Timeout != 0 {
		t.Error("a cancelled parent is not a timeout")
	}
}

// TestTimeoutRecordedAsSlowFailure: CircuitBreaker(TimeLimiter(call)) records a
// timeout as a failure lasting the timeout, hence slow past a 100 ms threshold.
func TestTimeoutRecordedAsSlowFailure(t *testing.T) {
	clk := NewVirtualClock(t0())
	cfg := DefaultConfig()
	cfg.SlowCallDurationThreshold = 100 * time.Millisecond
	cb, err := New("pg", cfg, WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	var ev []Event
	cb.Subscribe(func(e Event) { ev = append(ev, e) })
	tl := NewTimeLimiter("pg", TimeLimiterConfig{TimeoutDuration: 600 * time.Millisecond, CancelRunningFuture: true}, clk)
	call := Decorate(nil, cb, tl, func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() })
	done := make(chan error, 1)
	go func() { done <- call(context.Background()) }()
	waitPending(t, clk, 1)
	clk.Advance(600 * time.Millisecond)
	err = <-done
	if !ErrorOfType[*TimeoutError](err) {
		t.Fatalf("err = %v", err)
	}
	m := cb.Metrics()
	if m.FailedCalls != 1 || m.SlowFailedCalls != 1 || m.SlowCalls != 1 {
		t.Errorf("metrics %+v, want one slow failure", m)
	}
	if len(ev) != 1 || ev[0].Type != EventError || ev[0].ElapsedDuration != 600*time.Millisecond {
		t.Errorf("events %+v", ev)
	}
}
