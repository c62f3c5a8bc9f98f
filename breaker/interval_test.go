package breaker

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

func TestExponentialInterval(t *testing.T) {
	tests := []struct {
		name    string
		initial time.Duration
		mult    float64
		max     time.Duration
		want    []time.Duration // attempts 1, 2, ...
	}{
		{"doubling", time.Second, 2, 0, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second}},
		{"default multiplier truncates each step", time.Second, 1.5, 0, []time.Duration{1000 * time.Millisecond, 1500 * time.Millisecond, 2250 * time.Millisecond, 3375 * time.Millisecond}},
		{"odd ms truncate", 333 * time.Millisecond, 1.5, 0, []time.Duration{333 * time.Millisecond, 499 * time.Millisecond, 748 * time.Millisecond}},
		{"capped", time.Second, 3, 5 * time.Second, []time.Duration{time.Second, 3 * time.Second, 5 * time.Second, 5 * time.Second}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := ExponentialInterval(tc.initial, tc.mult, tc.max)
			for i, w := range tc.want {
				if got := f(i + 1); got != w {
					t.Errorf("attempt %d: %v, want %v", i+1, got, w)
				}
			}
		})
	}
}

// TestExponentialIntervalSaturates: Java's (long) cast saturates, so a long run of
// openings never wraps to a negative or zero wait.
func TestExponentialIntervalSaturates(t *testing.T) {
	f := ExponentialInterval(time.Second, 10, 0)
	prev := time.Duration(0)
	for n := 1; n < 200; n++ {
		d := f(n)
		if d < prev {
			t.Fatalf("attempt %d: %v after %v", n, d, prev)
		}
		prev = d
	}
	if prev != time.Duration(math.MaxInt64) {
		t.Fatalf("attempt 199: %v, want the largest Duration", prev)
	}
}

// TestRandomizedIntervalRange draws 20000 waits with a fixed seed: each lies in
// RandomizedRange and both ends come within 2 % of the width (a uniform draw
// misses one end's 2 % 20000 times with probability 0.98^20000 ≈ 1e-175).
func TestRandomizedIntervalRange(t *testing.T) {
	tests := []struct {
		name   string
		wait   time.Duration
		factor float64
		lo, hi int64
	}{
		{"half of 10s", 10 * time.Second, 0.5, 5000, 15000},
		{"tenth of 1s", time.Second, 0.1, 900, 1100},
		{"factor zero is fixed", 2 * time.Second, 0, 2000, 2000},
		{"never below 1 ms", time.Millisecond, 0.9, 1, 2},
		{"fractional top", 15 * time.Millisecond, 0.1, 13, 17},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			lo, hi := RandomizedRange(tc.wait, tc.factor)
			if lo.Milliseconds() != tc.lo || hi.Milliseconds() != tc.hi {
				t.Fatalf("RandomizedRange = [%v, %v], want [%d, %d] ms", lo, hi, tc.lo, tc.hi)
			}
			f := RandomizedInterval(tc.wait, tc.factor, rand.New(rand.NewPCG(1, 2)))
			minMS, maxMS := int64(math.MaxInt64), int64(0)
			for range 20000 {
				ms := f(1).Milliseconds()
				minMS, maxMS = min(minMS, ms), max(maxMS, ms)
			}
			slack := max(1, (tc.hi-tc.lo)/50)
			if minMS < tc.lo || maxMS > tc.hi || minMS > tc.lo+slack || maxMS < tc.hi-slack {
				t.Fatalf("draws span [%d, %d] ms, want within [%d, %d] reaching both ends within %d", minMS, maxMS, tc.lo, tc.hi, slack)
			}
		})
	}
}

// TestExponentialOpenWaitFollowsAttempts: each failed HALF_OPEN trial doubles the
// OPEN wait; CLOSED starts again at the base wait.
func TestExponentialOpenWaitFollowsAttempts(t *testing.T) {
	cfg := DefaultConfig()
	cfg.SlidingWindowSize, cfg.MinimumNumberOfCalls, cfg.PermittedNumberOfCallsInHalfOpenState = 1, 1, 1
	cfg.WaitIntervalFunctionInOpenState = ExponentialInterval(time.Second, 2, 0)
	clk := NewVirtualClock(time.UnixMilli(0))
	cb, err := New("exp", cfg, WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	fail := func() { cb.OnError(time.Millisecond, errors.New("boom")) }
	fail() // OPEN, wait 1s
	for _, wait := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second} {
		clk.Advance(wait)
		if cb.TryAcquirePermission() {
			t.Fatalf("permitted at exactly the %v deadline", wait)
		}
		clk.Advance(time.Millisecond)
		if !cb.TryAcquirePermission() {
			t.Fatalf("refused 1 ms after the %v deadline", wait)
		}
		fail() // HALF_OPEN -> OPEN, next wait doubles
	}
	clk.Advance(8*time.Second + time.Millisecond)
	if !cb.TryAcquirePermission() {
		t.Fatal("refused after the 8s wait")
	}
	cb.OnSuccess(time.Millisecond) // CLOSED
	fail()                         // OPEN again: 1s
	clk.Advance(time.Second + time.Millisecond)
	if !cb.TryAcquirePermission() || cb.State() != StateHalfOpen {
		t.Fatalf("after CLOSED the wait should be 1s again; state %v", cb.State())
	}
}

func TestInitialState(t *testing.T) {
	for _, st := range AllStates() {
		t.Run(st.String(), func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.InitialState = st
			cfg.WaitDurationInOpenState = 5 * time.Second
			clk := NewVirtualClock(time.UnixMilli(0))
			cb, err := New("init", cfg, WithClock(clk))
			if err != nil {
				t.Fatal(err)
			}
			if cb.State() != st {
				t.Fatalf("starts %v, want %v", cb.State(), st)
			}
			want := st != StateOpen && st != StateForcedOpen
			if got := cb.TryAcquirePermission(); got != want {
				t.Fatalf("permitted %v, want %v", got, want)
			}
		})
	}
	cfg := DefaultConfig()
	cfg.InitialState = State(9)
	if _, err := New("bad", cfg); err == nil {
		t.Fatal("an unknown initial state was accepted")
	}
}
