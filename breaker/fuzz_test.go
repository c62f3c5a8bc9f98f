package breaker

import (
	"testing"
	"time"
)

// FuzzBreakerOps drives a breaker with arbitrary operations and checks the
// invariants every state must keep: no panic, counts that add up, rates in
// range, and a chain of STATE_TRANSITION events that always starts where the
// breaker was.
func FuzzBreakerOps(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}, uint8(3), uint8(2), false)
	f.Add([]byte{1, 1, 1, 1, 1, 1, 200, 0, 0, 0, 9, 9, 9}, uint8(4), uint8(3), true)
	f.Fuzz(func(t *testing.T, ops []byte, size, permits uint8, timeBased bool) {
		if len(ops) > 500 {
			ops = ops[:500]
		}
		cfg := DefaultConfig()
		cfg.SlidingWindowSize = int(size%8) + 1
		cfg.MinimumNumberOfCalls = int(size%5) + 1
		cfg.PermittedNumberOfCallsInHalfOpenState = int(permits%4) + 1
		cfg.FailureRateThreshold = 50
		cfg.SlowCallRateThreshold = 60
		cfg.SlowCallDurationThreshold = 100 * time.Millisecond
		cfg.WaitDurationInOpenState = 2 * time.Second
		cfg.MaxWaitDurationInHalfOpenState = time.Duration(permits%3) * time.Second
		cfg.AutomaticTransitionFromOpenToHalfOpenEnabled = permits%2 == 0
		if timeBased {
			cfg.SlidingWindowType = TimeBased
		}
		clk := NewVirtualClock(t0())
		cb, err := New("fuzz", cfg, WithClock(clk))
		if err != nil {
			t.Fatal(err)
		}
		current := StateClosed
		cb.Subscribe(func(e Event) {
			if e.Type != EventStateTransition {
				return
			}
			if e.From != current {
				t.Fatalf("transition %s while the breaker was %v", e.Transition(), current)
			}
			current = e.To
		})
		for _, op := range ops {
			switch op % 16 {
			case 0, 1, 2, 3:
				if cb.TryAcquirePermission() {
					cb.OnResult(time.Duration(op)*time.Millisecond, Outcome(op%3), boomError{})
				}
			case 4:
				cb.OnSuccess(time.Duration(op) * time.Millisecond)
			case 5:
				cb.OnError(time.Duration(op)*time.Millisecond, boomError{})
			case 6, 7, 8:
				clk.Advance(time.Duration(op) * 10 * time.Millisecond)
			case 9:
				cb.Reset()
			case 10, 11:
				_ = cb.TransitionTo(State(op % 6))
			case 12:
				cb.ReleasePermission()
			default:
				cb.TryAcquirePermission()
			}
			st, m := cb.Snapshot()
			if st != current {
				t.Fatalf("State %v, but the events say %v", st, current)
			}
			if m.SuccessfulCalls != m.BufferedCalls-m.FailedCalls || m.SlowCalls != m.SlowSuccessfulCalls+m.SlowFailedCalls ||
				m.FailedCalls < 0 || m.SlowFailedCalls < 0 || m.SlowSuccessfulCalls < 0 || m.FailedCalls > m.BufferedCalls || m.SlowCalls > m.BufferedCalls {
				t.Fatalf("inconsistent metrics %+v", m)
			}
			// (An OPEN reached from FORCED_OPEN or DISABLED carries a zero-size window
			// that counts without bound, as the library's does before it throws.)
			if (st == StateClosed && !timeBased && m.BufferedCalls > cfg.SlidingWindowSize) ||
				(st == StateHalfOpen && m.BufferedCalls > cfg.PermittedNumberOfCallsInHalfOpenState) {
				t.Fatalf("COUNT_BASED window holds %d calls", m.BufferedCalls)
			}
			for _, r := range []float32{m.FailureRate, m.SlowCallRate} {
				if r != -1 && (r < 0 || r > 100) {
					t.Fatalf("rate %v out of range", r)
				}
			}
		}
	})
}
