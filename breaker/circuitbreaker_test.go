package breaker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestWorkedTrace replays the worked trace of resilience4j.md §4.3.
func TestWorkedTrace(t *testing.T) {
	cfg := DefaultConfig()
	cfg.SlidingWindowSize = 10
	cfg.MinimumNumberOfCalls = 5
	cfg.FailureRateThreshold = 50
	cfg.WaitDurationInOpenState = 10 * time.Second
	cfg.PermittedNumberOfCallsInHalfOpenState = 3
	cb, clk, rec := newTestBreaker(t, cfg)
	type step struct {
		at       time.Duration
		fail     bool
		rejected bool
		rate     float32
		events   []string
		state    State
	}
	steps := []step{
		{0, false, false, -1, []string{"SUCCESS"}, StateClosed},
		{0, true, false, -1, []string{"ERROR"}, StateClosed},
		{0, false, false, -1, []string{"SUCCESS"}, StateClosed},
		{0, true, false, -1, []string{"ERROR"}, StateClosed},
		{0, false, false, 40, []string{"SUCCESS"}, StateClosed},
		{0, true, false, 50, []string{"ERROR", "FAILURE_RATE_EXCEEDED", "STATE_TRANSITION CLOSED_TO_OPEN"}, StateOpen},
		{time.Second, false, true, 50, []string{"NOT_PERMITTED"}, StateOpen},
		{10*time.Second + time.Millisecond, false, false, -1, []string{"STATE_TRANSITION OPEN_TO_HALF_OPEN", "SUCCESS"}, StateHalfOpen},
		{10*time.Second + time.Millisecond, false, false, -1, []string{"SUCCESS"}, StateHalfOpen},
		{10*time.Second + time.Millisecond, true, false, -1, []string{"ERROR", "STATE_TRANSITION HALF_OPEN_TO_CLOSED"}, StateClosed},
	}
	for i, s := range steps {
		clk.AdvanceTo(t0().Add(s.at))
		ok := cb.TryAcquirePermission()
		if ok == s.rejected {
			t.Fatalf("step %d: permitted = %v", i+1, ok)
		}
		if ok {
			if s.fail {
				cb.OnError(10*time.Millisecond, boomError{})
			} else {
				cb.OnSuccess(10 * time.Millisecond)
			}
		}
		if got := rec.take(); !equalStrings(got, s.events) {
			t.Errorf("step %d: events %v, want %v", i+1, got, s.events)
		}
		if got := cb.State(); got != s.state {
			t.Errorf("step %d: state %v, want %v", i+1, got, s.state)
		}
		if got := cb.Metrics().FailureRate; got != s.rate {
			t.Errorf("step %d: failure rate %v, want %v", i+1, got, s.rate)
		}
	}
	if m := cb.Metrics(); m.BufferedCalls != 0 || m.FailureRate != -1 {
		t.Errorf("after HALF_OPEN_TO_CLOSED the window must be fresh: %+v", m)
	}
}

func TestRatesAndSlowCalls(t *testing.T) {
	tests := []struct {
		name  string
		cfg   func(*Config)
		calls []struct {
			fail bool
			d    time.Duration
		}
		want      Metrics
		wantState State
	}{
		{
			name: "float32 rate of one in three",
			cfg:  func(c *Config) { c.SlidingWindowSize = 3; c.FailureRateThreshold = 50 },
			calls: []struct {
				fail bool
				d    time.Duration
			}{{true, 0}, {false, 0}, {false, 0}},
			want:      Metrics{FailureRate: 33.333332, SlowCallRate: 0, BufferedCalls: 3, FailedCalls: 1, SuccessfulCalls: 2},
			wantState: StateClosed,
		},
		{
			name: "slow means strictly longer than the threshold",
			cfg: func(c *Config) {
				c.SlidingWindowSize = 2
				c.SlowCallDurationThreshold = 100 * time.Millisecond
			},
			calls: []struct {
				fail bool
				d    time.Duration
			}{{false, 100 * time.Millisecond}, {false, 100*time.Millisecond + time.Nanosecond}},
			want:      Metrics{FailureRate: 0, SlowCallRate: 50, BufferedCalls: 2, SuccessfulCalls: 2, SlowCalls: 1, SlowSuccessfulCalls: 1},
			wantState: StateClosed,
		},
		{
			name: "a slow failure counts as failed and slow and trips both",
			cfg: func(c *Config) {
				c.SlidingWindowSize = 2
				c.SlowCallDurationThreshold = 100 * time.Millisecond
				c.SlowCallRateThreshold = 50
			},
			calls: []struct {
				fail bool
				d    time.Duration
			}{{false, 0}, {true, time.Second}},
			want:      Metrics{FailureRate: 50, SlowCallRate: 50, BufferedCalls: 2, FailedCalls: 1, SuccessfulCalls: 1, SlowCalls: 1, SlowFailedCalls: 1},
			wantState: StateOpen,
		},
		{
			name: "minimum capped by COUNT_BASED window",
			cfg:  func(c *Config) { c.SlidingWindowSize = 4; c.MinimumNumberOfCalls = 100; c.FailureRateThreshold = 80 },
			calls: []struct {
				fail bool
				d    time.Duration
			}{{true, 0}, {false, 0}, {false, 0}, {false, 0}},
			want:      Metrics{FailureRate: 25, SlowCallRate: 0, BufferedCalls: 4, FailedCalls: 1, SuccessfulCalls: 3},
			wantState: StateClosed,
		},
		{
			name: "minimum not capped by TIME_BASED window",
			cfg: func(c *Config) {
				c.SlidingWindowType = TimeBased
				c.SlidingWindowSize = 4
				c.MinimumNumberOfCalls = 5
			},
			calls: []struct {
				fail bool
				d    time.Duration
			}{{true, 0}, {true, 0}, {true, 0}, {true, 0}},
			want:      Metrics{FailureRate: -1, SlowCallRate: -1, BufferedCalls: 4, FailedCalls: 4},
			wantState: StateClosed,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			tc.cfg(&cfg)
			cb, _, _ := newTestBreaker(t, cfg)
			for _, c := range tc.calls {
				if !cb.TryAcquirePermission() {
					t.Fatal("refused in CLOSED")
				}
				if c.fail {
					cb.OnError(c.d, boomError{})
				} else {
					cb.OnSuccess(c.d)
				}
			}
			if got := cb.Metrics(); got != tc.want {
				t.Errorf("metrics %+v, want %+v", got, tc.want)
			}
			if got := cb.State(); got != tc.wantState {
				t.Errorf("state %v, want %v", got, tc.wantState)
			}
		})
	}
}

func TestTimeBasedWindowForgets(t *testing.T) {
	cfg := DefaultConfig()
	cfg.SlidingWindowType = TimeBased
	cfg.SlidingWindowSize = 10
	cfg.MinimumNumberOfCalls = 1
	cfg.FailureRateThreshold = 100
	cb, clk, _ := newTestBreaker(t, cfg)
	clk.AdvanceTo(t0().Add(500 * time.Millisecond)) // second s
	cb.TryAcquirePermission()
	cb.OnSuccess(0)
	clk.AdvanceTo(t0().Add(9999 * time.Millisecond)) // second s+9: still inside
	if got := cb.Metrics().BufferedCalls; got != 1 {
		t.Fatalf("buffered at s+9 = %d, want 1", got)
	}
	clk.AdvanceTo(t0().Add(10 * time.Second)) // second s+10: the call leaves
	if got := cb.Metrics(); got.BufferedCalls != 0 || got.FailureRate != -1 {
		t.Fatalf("metrics at s+10 = %+v, want empty", got)
	}
}

func TestOpenDeadlineAndAutomaticTransition(t *testing.T) {
	for _, auto := range []bool{false, true} {
		t.Run(fmt.Sprintf("automatic=%v", auto), func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.SlidingWindowSize = 1
			cfg.WaitDurationInOpenState = 10 * time.Second
			cfg.AutomaticTransitionFromOpenToHalfOpenEnabled = auto
			cb, clk, _ := newTestBreaker(t, cfg)
			cb.TryAcquirePermission()
			cb.OnError(0, boomError{})
			if cb.State() != StateOpen {
				t.Fatalf("state %v, want OPEN", cb.State())
			}
			clk.AdvanceTo(t0().Add(10 * time.Second)) // exactly the deadline
			got := cb.TryAcquirePermission()
			if got != auto {
				t.Errorf("permitted at exactly entry+wait = %v, want %v (the timer runs first only when automatic)", got, auto)
			}
			if !auto {
				clk.AdvanceTo(t0().Add(10*time.Second + time.Nanosecond))
				if !cb.TryAcquirePermission() || cb.State() != StateHalfOpen {
					t.Errorf("strictly after the deadline: want a permit in HALF_OPEN, state %v", cb.State())
				}
			}
		})
	}
}

func TestHalfOpenPermitsAndIgnored(t *testing.T) {
	cfg := DefaultConfig()
	cfg.PermittedNumberOfCallsInHalfOpenState = 2
	cfg.Classify = ErrorClassifier(nil, ErrorOfType[*TimeoutError])
	cb, _, rec := newTestBreaker(t, cfg)
	if err := cb.TransitionTo(StateOpen); err != nil {
		t.Fatal(err)
	}
	if err := cb.TransitionTo(StateHalfOpen); err != nil {
		t.Fatal(err)
	}
	rec.take()
	first, second := cb.TryAcquirePermission(), cb.TryAcquirePermission()
	if !first || !second {
		t.Fatal("two permits expected")
	}
	if cb.TryAcquirePermission() {
		t.Fatal("third permit granted")
	}
	cb.OnError(time.Millisecond, fmt.Errorf("wrapped: %w", &TimeoutError{Name: "tl"}))
	if got := rec.take(); !equalStrings(got, []string{"NOT_PERMITTED", "IGNORED_ERROR"}) {
		t.Errorf("events %v", got)
	}
	if !cb.TryAcquirePermission() {
		t.Error("an ignored outcome must give a permit back")
	}
	if m := cb.Metrics(); m.NotPermittedCalls != 1 || m.BufferedCalls != 0 {
		t.Errorf("metrics %+v", m)
	}
}

func TestPublicationFilter(t *testing.T) {
	tests := []struct {
		name  string
		state State
		want  []string
	}{
		{"FORCED_OPEN counts refusals but publishes no NOT_PERMITTED", StateForcedOpen, []string{"STATE_TRANSITION CLOSED_TO_FORCED_OPEN"}},
		{"DISABLED records nothing and publishes no SUCCESS", StateDisabled, []string{"STATE_TRANSITION CLOSED_TO_DISABLED"}},
		{"METRICS_ONLY publishes SUCCESS", StateMetricsOnly, []string{"STATE_TRANSITION CLOSED_TO_METRICS_ONLY", "SUCCESS"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cb, _, rec := newTestBreaker(t, DefaultConfig())
			if err := cb.TransitionTo(tc.state); err != nil {
				t.Fatal(err)
			}
			if cb.TryAcquirePermission() {
				cb.OnSuccess(0)
			}
			if got := rec.take(); !equalStrings(got, tc.want) {
				t.Errorf("events %v, want %v", got, tc.want)
			}
			m := cb.Metrics()
			if tc.state == StateForcedOpen && m.NotPermittedCalls != 1 {
				t.Errorf("not permitted = %d, want 1", m.NotPermittedCalls)
			}
			if tc.state == StateDisabled && m.BufferedCalls != 0 {
				t.Errorf("DISABLED buffered %d calls", m.BufferedCalls)
			}
		})
	}
}

func TestTransitionLegality(t *testing.T) {
	illegal := map[[2]State]bool{
		{StateClosed, StateHalfOpen}:      true,
		{StateMetricsOnly, StateOpen}:     true,
		{StateMetricsOnly, StateHalfOpen}: true,
	}
	for _, from := range AllStates() {
		for _, to := range AllStates() {
			t.Run(from.String()+"_TO_"+to.String(), func(t *testing.T) {
				cb, _, rec := newTestBreaker(t, DefaultConfig())
				// Reach `from` legally.
				switch from {
				case StateHalfOpen:
					_ = cb.TransitionTo(StateOpen)
					_ = cb.TransitionTo(StateHalfOpen)
				case StateClosed:
				default:
					_ = cb.TransitionTo(from)
				}
				if cb.State() != from {
					t.Fatalf("setup reached %v", cb.State())
				}
				rec.take()
				err := cb.TransitionTo(to)
				var ie *IllegalTransitionError
				if illegal[[2]State{from, to}] {
					if !errors.As(err, &ie) || ie.From != from || ie.To != to {
						t.Fatalf("err = %v, want IllegalTransitionError", err)
					}
					if cb.State() != from || len(rec.take()) != 0 {
						t.Error("an illegal transition must change and publish nothing")
					}
					return
				}
				if err != nil {
					t.Fatalf("legal transition failed: %v", err)
				}
				got := rec.take()
				want := []string{"STATE_TRANSITION " + from.String() + "_TO_" + to.String()}
				if from == to {
					want = nil
				}
				if !equalStrings(got, want) || cb.State() != to {
					t.Errorf("events %v state %v, want %v %v", got, cb.State(), want, to)
				}
			})
		}
	}
}

func TestResetKeepsPendingHalfOpenTimer(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxWaitDurationInHalfOpenState = 5 * time.Second
	cb, clk, rec := newTestBreaker(t, cfg)
	_ = cb.TransitionTo(StateOpen)
	_ = cb.TransitionTo(StateHalfOpen) // timer due at t0+5s
	cb.Reset()
	if got := rec.take(); !equalStrings(got, []string{"STATE_TRANSITION CLOSED_TO_OPEN", "STATE_TRANSITION OPEN_TO_HALF_OPEN", "STATE_TRANSITION HALF_OPEN_TO_CLOSED", "RESET"}) {
		t.Fatalf("events %v", got)
	}
	clk.AdvanceTo(t0().Add(5*time.Second - time.Nanosecond))
	if cb.State() != StateClosed {
		t.Fatal("timer fired early")
	}
	clk.AdvanceTo(t0().Add(5 * time.Second))
	if cb.State() != StateOpen {
		t.Fatalf("the stale half-open timer must move the fresh CLOSED breaker to OPEN, state %v", cb.State())
	}
	if got := rec.take(); !equalStrings(got, []string{"STATE_TRANSITION CLOSED_TO_OPEN"}) {
		t.Errorf("events %v", got)
	}
}

func TestExecuteAndClassification(t *testing.T) {
	errIgnored := errors.New("ignored")
	errRecorded := errors.New("recorded")
	cfg := DefaultConfig()
	cfg.SlidingWindowSize = 10
	cfg.Classify = ErrorClassifier(AnyError(errRecorded), AnyError(errIgnored))
	cb, clk, rec := newTestBreaker(t, cfg)
	run := func(err error) error {
		return cb.Execute(context.Background(), func(context.Context) error {
			clk.Advance(250 * time.Millisecond)
			return err
		})
	}
	_ = run(nil)
	_ = run(fmt.Errorf("x: %w", errRecorded))
	_ = run(errIgnored)
	_ = run(errors.New("other: counts as success"))
	if got := rec.take(); !equalStrings(got, []string{"SUCCESS", "ERROR", "IGNORED_ERROR", "SUCCESS"}) {
		t.Errorf("events %v", got)
	}
	m := cb.Metrics()
	if m.BufferedCalls != 3 || m.FailedCalls != 1 {
		t.Errorf("metrics %+v", m)
	}
	var seen []time.Duration
	cb.Subscribe(func(e Event) { seen = append(seen, e.ElapsedDuration) })
	cb.OnResultRecordedAsFailure(time.Millisecond, 42)
	if len(seen) != 1 || seen[0] != time.Millisecond {
		t.Errorf("elapsed durations %v", seen)
	}
	_ = cb.TransitionTo(StateForcedOpen)
	err := run(nil)
	var np *CallNotPermittedError
	if !errors.As(err, &np) || err.Error() != "CircuitBreaker 'test' is FORCED_OPEN and does not permit further calls" {
		t.Errorf("err = %v", err)
	}
	if !IsCallNotPermitted(fmt.Errorf("wrapped: %w", err)) {
		t.Error("IsCallNotPermitted must see through wrapping")
	}
}

func TestEventFields(t *testing.T) {
	cfg := DefaultConfig()
	cfg.SlidingWindowSize = 2
	cfg.SlowCallDurationThreshold = time.Second
	cfg.SlowCallRateThreshold = 50
	cb, clk, _ := newTestBreaker(t, cfg)
	var evs []Event
	cb.Subscribe(func(e Event) { evs = append(evs, e) })
	clk.Advance(time.Second)
	cb.OnError(2*time.Second, boomError{})
	cb.OnError(2*time.Second, boomError{})
	if len(evs) != 5 {
		t.Fatalf("events %v", evs)
	}
	if evs[0].Type != EventError || evs[0].ElapsedDuration != 2*time.Second || !errors.Is(evs[0].Err, boomError{}) {
		t.Errorf("ERROR event %+v", evs[0])
	}
	if evs[2].Type != EventFailureRateExceeded || evs[2].FailureRate != 100 {
		t.Errorf("FAILURE_RATE_EXCEEDED %+v", evs[2])
	}
	if evs[3].Type != EventSlowCallRateExceeded || evs[3].SlowCallRate != 100 {
		t.Errorf("SLOW_CALL_RATE_EXCEEDED %+v", evs[3])
	}
	if evs[4].Transition() != "CLOSED_TO_OPEN" || evs[4].BreakerName != "test" || !evs[4].CreationTime.Equal(t0().Add(time.Second)) {
		t.Errorf("STATE_TRANSITION %+v", evs[4])
	}
	if evs[0].Transition() != "" {
		t.Error("Transition() of a non-transition event must be empty")
	}
}

// TestSubscriberMayCallBreaker checks that a subscriber calling back does not
// deadlock and that the events it causes come after the one being delivered.
func TestSubscriberMayCallBreaker(t *testing.T) {
	cfg := DefaultConfig()
	cfg.SlidingWindowSize = 1
	cb, _, rec := newTestBreaker(t, cfg)
	cb.Subscribe(func(e Event) {
		if e.Type == EventStateTransition && e.To == StateOpen {
			_ = cb.State()
			cb.TryAcquirePermission() // publishes NOT_PERMITTED
		}
	})
	cb.OnError(0, boomError{})
	want := []string{"ERROR", "FAILURE_RATE_EXCEEDED", "STATE_TRANSITION CLOSED_TO_OPEN", "NOT_PERMITTED"}
	if got := rec.take(); !equalStrings(got, want) {
		t.Errorf("events %v, want %v", got, want)
	}
}

func TestUnsubscribe(t *testing.T) {
	cb, _, _ := newTestBreaker(t, DefaultConfig())
	n := 0
	stop := cb.Subscribe(func(Event) { n++ })
	cb.OnSuccess(0)
	stop()
	cb.OnSuccess(0)
	if n != 1 {
		t.Errorf("delivered %d events, want 1", n)
	}
}

// TestConcurrentUse runs many goroutines through one breaker (meaningful with -race)
// and checks that no call and no event is lost.
func TestConcurrentUse(t *testing.T) {
	const goroutines, calls = 8, 500
	cfg := DefaultConfig()
	cfg.SlidingWindowSize = goroutines * calls
	cfg.FailureRateThreshold = 100
	cb, err := New("concurrent", cfg)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	events := 0
	cb.Subscribe(func(Event) { mu.Lock(); events++; mu.Unlock() })
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range calls {
				_ = cb.Execute(context.Background(), func(context.Context) error {
					if (g+i)%4 == 0 {
						return boomError{}
					}
					return nil
				})
				_ = cb.Metrics()
			}
		}()
	}
	wg.Wait()
	m := cb.Metrics()
	if m.BufferedCalls != goroutines*calls || m.FailedCalls != goroutines*calls/4 {
		t.Errorf("metrics %+v", m)
	}
	mu.Lock()
	defer mu.Unlock()
	if events != goroutines*calls {
		t.Errorf("%d events delivered, want %d", events, goroutines*calls)
	}
}

func TestNewValidates(t *testing.T) {
	cfg := DefaultConfig()
	cfg.SlidingWindowSize = 0
	_, err := New("bad", cfg)
	if err == nil || !strings.Contains(err.Error(), "slidingWindowSize") {
		t.Fatalf("New(slidingWindowSize 0) err = %v, want one naming slidingWindowSize", err)
	}
}

// TestZeroWindowRecord: a call recorded into an OPEN state that carries the
// zero-size window of FORCED_OPEN is counted (the library counts it, then throws
// "/ by zero"; cbprobe does not fail).
func TestZeroWindowRecord(t *testing.T) {
	cb, _, _ := newTestBreaker(t, DefaultConfig())
	_ = cb.TransitionTo(StateForcedOpen)
	_ = cb.TransitionTo(StateOpen)
	cb.OnError(time.Millisecond, boomError{})
	if m := cb.Metrics(); m.BufferedCalls != 1 || m.FailedCalls != 1 {
		t.Errorf("metrics %+v", m)
	}
}
