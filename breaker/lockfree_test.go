package breaker

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"
)

// TestLockFreePathsMatchLockedPaths drives two breakers with the same random
// operations: "locked" always has a subscriber, so every record takes the lock
// (the path the 338 conformance vectors check, since their runner subscribes);
// "free" has none most of the time, so its CLOSED/DISABLED/METRICS_ONLY
// acquires and its no-op records (fast successes into a full window of fast
// successes, ignored outcomes, records in DISABLED/FORCED_OPEN) skip the lock.
// After every step the permit answers, states and metrics must be equal, and
// while "free" has a subscriber too, so must the events. The operations favour
// fast successes so that windows fill with them and then take failures, which
// checks that skipping a no-op record leaves later evictions unchanged.
func TestLockFreePathsMatchLockedPaths(t *testing.T) {
	rng := rand.New(rand.NewPCG(20261129, 7))
	for run := range 400 {
		cfg := DefaultConfig()
		cfg.SlidingWindowType = WindowType(rng.IntN(2))
		cfg.SlidingWindowSize = 1 + rng.IntN(6)
		cfg.MinimumNumberOfCalls = 1 + rng.IntN(6)
		cfg.FailureRateThreshold = []float32{20, 50, 100}[rng.IntN(3)]
		cfg.SlowCallRateThreshold = []float32{30, 100}[rng.IntN(2)]
		cfg.SlowCallDurationThreshold = 50 * time.Millisecond
		cfg.WaitDurationInOpenState = time.Duration(1+rng.IntN(3)) * time.Second
		cfg.PermittedNumberOfCallsInHalfOpenState = 1 + rng.IntN(4)
		cfg.AutomaticTransitionFromOpenToHalfOpenEnabled = rng.IntN(2) == 0
		if rng.IntN(3) == 0 {
			cfg.MaxWaitDurationInHalfOpenState = 2 * time.Second
		}
		cfg.Classify = func(err error) Outcome {
			if _, ok := err.(ignoredTestError); ok {
				return OutcomeIgnored
			}
			return OutcomeFailure
		}
		name := fmt.Sprintf("run %d (%+v)", run, cfg)
		lc, fc := NewVirtualClock(t0()), NewVirtualClock(t0())
		locked, err := New("x", cfg, WithClock(lc))
		if err != nil {
			t.Fatal(err)
		}
		free, err := New("x", cfg, WithClock(fc))
		if err != nil {
			t.Fatal(err)
		}
		lrec, frec := &recorder{}, &recorder{}
		locked.Subscribe(lrec.add)
		var unsubscribe func()
		pending := 0 // permits acquired on both and not yet recorded
		for step := range 300 {
			where := fmt.Sprintf("%s step %d", name, step)
			record := func() {
				d := 10 * time.Millisecond
				var err error
				switch k := rng.IntN(10); {
				case k < 6: // fast success
				case k == 6:
					d = 100 * time.Millisecond
				case k == 7:
					err = errors.New("boom")
				case k == 8:
					d, err = 100*time.Millisecond, errors.New("boom")
				default:
					err = ignoredTestError{}
				}
				if err == nil {
					locked.OnSuccess(d)
					free.OnSuccess(d)
				} else {
					locked.OnError(d, err)
					free.OnError(d, err)
				}
			}
			switch k := rng.IntN(100); {
			case k < 60: // call
				a, b := locked.TryAcquirePermission(), free.TryAcquirePermission()
				if a != b {
					t.Fatalf("%s: permitted %v (locked) vs %v (lock-free)", where, a, b)
				}
				if a {
					record()
				}
			case k < 66: // acquire only
				a, b := locked.TryAcquirePermission(), free.TryAcquirePermission()
				if a != b {
					t.Fatalf("%s: permitted %v (locked) vs %v (lock-free)", where, a, b)
				}
				if a {
					pending++
				}
			case k < 72: // record an earlier permit, maybe in another state
				if pending > 0 {
					pending--
					record()
				}
			case k < 84:
				d := time.Duration(rng.IntN(1500)) * time.Millisecond
				lc.Advance(d)
				fc.Advance(d)
			case k < 88:
				to := AllStates()[rng.IntN(6)]
				e1, e2 := locked.TransitionTo(to), free.TransitionTo(to)
				if (e1 == nil) != (e2 == nil) {
					t.Fatalf("%s: TransitionTo(%v) = %v vs %v", where, to, e1, e2)
				}
			case k < 90:
				locked.Reset()
				free.Reset()
			case k < 93:
				locked.ReleasePermission()
				free.ReleasePermission()
			default: // subscribe or unsubscribe "free"
				if unsubscribe == nil {
					unsubscribe = free.Subscribe(frec.add)
				} else {
					unsubscribe()
					unsubscribe = nil
				}
			}
			ls, lm := locked.Snapshot()
			fs, fm := free.Snapshot()
			if ls != fs || lm != fm {
				t.Fatalf("%s: locked %v %+v, lock-free %v %+v", where, ls, lm, fs, fm)
			}
			le, fe := lrec.take(), frec.take()
			if unsubscribe != nil && !equalStrings(le, fe) {
				t.Fatalf("%s: events %v (locked) vs %v (lock-free)", where, le, fe)
			}
		}
	}
}

// ignoredTestError is the error TestLockFreePathsMatchLockedPaths classifies as ignored.
type ignoredTestError struct{}

func (ignoredTestError) Error() string { return "ignored" }

// TestLockFreeConcurrent hammers one breaker without subscribers from several
// goroutines (meaningful with -race): fast successes that skip the lock once
// the window is full of them, failures that take it, and transitions. Then it
// checks that the window still holds exactly the last N calls: N fast
// successes give 0 failures and then one failure gives exactly 1.
func TestLockFreeConcurrent(t *testing.T) {
	cfg := DefaultConfig()
	cfg.SlidingWindowSize = 16
	cfg.MinimumNumberOfCalls = 16
	cfg.FailureRateThreshold = 100
	cb, err := New("concurrent", cfg)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 3000 {
				if !cb.TryAcquirePermission() {
					continue
				}
				switch {
				case g == 0 && i%50 == 0:
					cb.OnError(time.Millisecond, errors.New("boom"))
				case g == 1 && i%500 == 0:
					_ = cb.TransitionTo([]State{StateMetricsOnly, StateClosed, StateDisabled, StateClosed}[i/500%4])
				default:
					cb.OnSuccess(time.Millisecond)
				}
			}
		}()
	}
	wg.Wait()
	if err := cb.TransitionTo(StateClosed); err != nil {
		t.Fatal(err)
	}
	for range 2 * cfg.SlidingWindowSize {
		cb.OnSuccess(time.Millisecond)
	}
	if m := cb.Metrics(); m.BufferedCalls != 16 || m.FailedCalls != 0 {
		t.Fatalf("after 32 fast successes: %+v, want 16 buffered, 0 failed", m)
	}
	cb.OnError(time.Millisecond, errors.New("boom"))
	for i := range cfg.SlidingWindowSize - 1 {
		cb.OnSuccess(time.Millisecond)
		if m := cb.Metrics(); m.FailedCalls != 1 {
			t.Fatalf("%d successes after the failure: %+v, want 1 failed", i+1, m)
		}
	}
	cb.OnSuccess(time.Millisecond)
	if m := cb.Metrics(); m.FailedCalls != 0 {
		t.Fatalf("16 successes after the failure: %+v, want it evicted", m)
	}
}

// TestTimeWindowEarlyClockReading checks metrics.record with a clock reading
// taken before the lock: a reading in or after the head second is used, an
// older one (or none) is replaced by a fresh reading.
func TestTimeWindowEarlyClockReading(t *testing.T) {
	const head = 1000
	fresh := func() time.Time { return time.Unix(head+1, 0) } // the clock "now", under the lock
	cases := []struct {
		name     string
		sec      int64
		wantHead int64 // head second after the record
	}{
		{"same second", head, head},
		{"newer", head + 2, head + 2},
		{"older: fresh reading", head - 1, head + 1},
		{"none: fresh reading", noSecond, head + 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := newTimeMetrics(3, 1, head)
			m.record(codeError, c.sec, fresh)
			if got := m.buckets[m.head].epochSecond; got != c.wantHead {
				t.Errorf("head second %d, want %d", got, c.wantHead)
			}
			if m.buckets[m.head].calls != 1 || m.total.calls != 1 || m.total.failed != 1 {
				t.Errorf("head bucket %+v, total %+v: want the call in the head bucket", m.buckets[m.head], m.total)
			}
		})
	}
}
