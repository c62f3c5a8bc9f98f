package breaker

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sony/gobreaker/v2"
)

func benchConfig() Config {
	cfg := DefaultConfig()
	cfg.SlidingWindowSize = 20
	cfg.FailureRateThreshold = 60
	cfg.SlowCallRateThreshold = 50
	cfg.SlowCallDurationThreshold = 100 * time.Millisecond
	return cfg
}

// BenchmarkAcquireRecord: one permit plus one recorded fast success on a CLOSED
// COUNT_BASED breaker (reference setting, window full), no subscriber.
func BenchmarkAcquireRecord(b *testing.B) {
	if cb := benchAcquireRecord(b, benchConfig()); cb.State() != StateClosed {
		b.Fatal("breaker left CLOSED")
	}
}

// benchAcquireRecord runs the acquire + record-fast-success loop on a new
// breaker with cfg and returns the breaker.
func benchAcquireRecord(b *testing.B, cfg Config) *CircuitBreaker {
	cb, err := New("bench", cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if cb.TryAcquirePermission() {
			cb.OnSuccess(10 * time.Millisecond)
		}
	}
	return cb
}

// BenchmarkAcquireRecordParallel is the same work from GOMAXPROCS goroutines on
// one breaker; calls/s is the throughput.
func BenchmarkAcquireRecordParallel(b *testing.B) {
	cb, err := New("bench", benchConfig())
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if cb.TryAcquirePermission() {
				cb.OnSuccess(10 * time.Millisecond)
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "calls/s")
}

// gobreakerWorkload is one row of BenchmarkVsGobreaker: the same calls made
// on cbprobe's breaker and on sony/gobreaker/v2's.
type gobreakerWorkload struct {
	name string
	// cbprobe makes call i on cb; gobreaker makes call i on the two-step
	// breaker (tb) or, for Execute, on the plain one (eb).
	cbprobe   func(cb *CircuitBreaker, i int)
	gobreaker func(tb *gobreaker.TwoStepCircuitBreaker[any], eb *gobreaker.CircuitBreaker[any], i int)
	subscribe bool // cbprobe has one (empty) event subscriber
}

// gobreakerWorkloads are the five workloads of issue 14, from cbprobe's best
// case to its worst:
//
//   - fast-success-const: every call a fast success, the duration passed as a
//     constant (10 ms). cbprobe takes its lock-free no-op path (a fast success
//     into a full window of fast successes, nobody subscribed); gobreaker takes
//     its mutex twice, reads the clock twice and allocates its done closure.
//   - caller-measures: the same, but the caller reads the clock around the call
//     for cbprobe (time.Now, time.Since), as gobreaker does inside; still the
//     lock-free path.
//   - 10pct-failures: every 10th call fails (constant 10 ms): each cbprobe record
//     changes the window (locked path); gobreaker counts consecutive failures.
//   - one-subscriber: fast successes with one event subscriber on cbprobe (each
//     success is published as an event, locked path); gobreaker has no per-call
//     events, so its work is the first row's.
//   - execute: both through Execute with a function returning nil (cbprobe reads
//     its clock twice; lock-free record).
func gobreakerWorkloads() []gobreakerWorkload {
	boom := errors.New("boom")
	const d = 10 * time.Millisecond
	twoStep := func(tb *gobreaker.TwoStepCircuitBreaker[any], _ *gobreaker.CircuitBreaker[any], i int) {
		if done, err := tb.Allow(); err == nil {
			done(nil)
		}
	}
	fast := func(cb *CircuitBreaker, _ int) {
		if cb.TryAcquirePermission() {
			cb.OnSuccess(d)
		}
	}
	ctx := context.Background()
	nop := func(context.Context) error { return nil }
	nopAny := func() (any, error) { return nil, nil }
	return []gobreakerWorkload{
		{name: "fast-success-const", cbprobe: fast, gobreaker: twoStep},
		{name: "caller-measures", cbprobe: func(cb *CircuitBreaker, _ int) {
			if cb.TryAcquirePermission() {
				t0 := time.Now()
				cb.OnSuccess(time.Since(t0))
			}
		}, gobreaker: twoStep},
		{name: "10pct-failures", cbprobe: func(cb *CircuitBreaker, i int) {
			if cb.TryAcquirePermission() {
				if i%10 == 9 {
					cb.OnError(d, boom)
				} else {
					cb.OnSuccess(d)
				}
			}
		}, gobreaker: func(tb *gobreaker.TwoStepCircuitBreaker[any], _ *gobreaker.CircuitBreaker[any], i int) {
			if done, err := tb.Allow(); err == nil {
				if i%10 == 9 {
					done(boom)
				} else {
					done(nil)
				}
			}
		}},
		{name: "one-subscriber", cbprobe: fast, gobreaker: twoStep, subscribe: true},
		{name: "execute", cbprobe: func(cb *CircuitBreaker, _ int) { _ = cb.Execute(ctx, nop) },
			gobreaker: func(_ *gobreaker.TwoStepCircuitBreaker[any], eb *gobreaker.CircuitBreaker[any], _ int) {
				_, _ = eb.Execute(nopAny)
			}},
	}
}

// BenchmarkVsGobreaker runs each workload of gobreakerWorkloads on cbprobe's
// breaker (reference setting, COUNT_BASED window 20) and on sony/gobreaker/v2
// (MaxRequests 5, Timeout 10 s, default ReadyToTrip: 5 consecutive failures,
// which 10 % failures never reach), one goroutine, in one process: b.N calls
// each, in 16 rounds alternating which goes first (ABBA). Metrics:
// cbprobe_ns/call, gobreaker_ns/call (totals over the rounds),
// ratio_vs_gobreaker (the median over rounds of cbprobe's time / gobreaker's
// in the same round, so a stall of other work in one round does not decide
// it; below 1 is faster) and lockfree_path (1 when cbprobe's breaker ended
// with its no-op fast path armed: the workload's records skipped the lock).
// Neither breaker leaves CLOSED in any workload (checked).
func BenchmarkVsGobreaker(b *testing.B) {
	for _, w := range gobreakerWorkloads() {
		b.Run(w.name, func(b *testing.B) {
			cb, err := New("bench", benchConfig())
			if err != nil {
				b.Fatal(err)
			}
			if w.subscribe {
				defer cb.Subscribe(func(Event) {})()
			}
			st := gobreaker.Settings{Name: "bench", MaxRequests: 5, Timeout: 10 * time.Second}
			tb := gobreaker.NewTwoStepCircuitBreaker[any](st)
			eb := gobreaker.NewCircuitBreaker[any](st)
			const rounds = 16
			per := max(b.N/rounds, 1)
			var ours, theirs time.Duration
			ratios := make([]float64, 0, rounds)
			b.ResetTimer()
			for r := range rounds {
				var o, t time.Duration
				runOurs := func() {
					start := time.Now()
					for i := range per {
						w.cbprobe(cb, r*per+i)
					}
					o = time.Since(start)
				}
				runTheirs := func() {
					start := time.Now()
					for i := range per {
						w.gobreaker(tb, eb, r*per+i)
					}
					t = time.Since(start)
				}
				if r%4 == 0 || r%4 == 3 { // ABBA
					runOurs()
					runTheirs()
				} else {
					runTheirs()
					runOurs()
				}
				ours, theirs = ours+o, theirs+t
				ratios = append(ratios, float64(o)/float64(t))
			}
			b.StopTimer()
			if cb.State() != StateClosed || tb.State() != gobreaker.StateClosed || eb.State() != gobreaker.StateClosed {
				b.Fatalf("a breaker left CLOSED: cbprobe %v, gobreaker %v / %v", cb.State(), tb.State(), eb.State())
			}
			calls := float64(per * rounds)
			lockFree := 0.0
			if cb.noop.Load()&noopFastSuccess != 0 {
				lockFree = 1
			}
			b.ReportMetric(float64(ours.Nanoseconds())/calls, "cbprobe_ns/call")
			b.ReportMetric(float64(theirs.Nanoseconds())/calls, "gobreaker_ns/call")
			slices.Sort(ratios)
			b.ReportMetric((ratios[rounds/2-1]+ratios[rounds/2])/2, "ratio_vs_gobreaker")
			b.ReportMetric(lockFree, "lockfree_path")
		})
	}
}

// BenchmarkAcquireRecordTimeBased is the TIME_BASED variant (one clock read per record).
func BenchmarkAcquireRecordTimeBased(b *testing.B) {
	cfg := benchConfig()
	cfg.SlidingWindowType = TimeBased
	cfg.SlidingWindowSize = 10
	benchAcquireRecord(b, cfg)
}

// BenchmarkParallelScaling measures total acquire + record throughput on one
// CLOSED COUNT_BASED breaker (reference setting, window 20) with GOMAXPROCS=1 and
// one goroutine, then GOMAXPROCS=2 and two goroutines, in the same process. The
// two runs alternate in rounds so that a change of machine load hits both alike;
// each goroutine of a round makes b.N/rounds/goroutines calls. It reports
// calls_per_s_1g, calls_per_s_2g (total over both goroutines) and
// ratio_2g_vs_1g = calls_per_s_2g / calls_per_s_1g (1 or more: two cores do at
// least as much as one).
//
// Control, in the same rounds: the same two goroutines on two breakers, one
// each, so that nothing is shared. ratio_unshared (its 2-goroutine rate over
// calls_per_s_1g) is what the machine gives two goroutines at that moment: 2
// on an idle 2-core machine, about 1 when other processes hold a core. It is
// the ceiling for ratio_2g_vs_1g; efficiency = ratio_2g_vs_1g / ratio_unshared.
//
// Workloads: fast-success (every call a fast success, the window stays full of
// them); mixed (every 10th call of a goroutine fails, every 7th is slow: 10 %
// failures and 14 % slow calls, below the 60 % and 50 % thresholds, so each
// record changes the window); time-based (fast successes into a 10-second
// TIME_BASED window: each record counts into the current bucket).
func BenchmarkParallelScaling(b *testing.B) {
	boom := errors.New("boom")
	timeBased := benchConfig()
	timeBased.SlidingWindowType = TimeBased
	timeBased.SlidingWindowSize = 10
	timeBased.MinimumNumberOfCalls = 10
	mixed := func(cb *CircuitBreaker, i int) {
		if !cb.TryAcquirePermission() {
			return
		}
		d := 10 * time.Millisecond
		if i%7 == 0 {
			d = 200 * time.Millisecond
		}
		if i%10 == 0 {
			cb.OnError(d, boom)
		} else {
			cb.OnSuccess(d)
		}
	}
	cases := []struct {
		name string
		cfg  Config
		call func(cb *CircuitBreaker, i int)
	}{
		{"fast-success", benchConfig(), func(cb *CircuitBreaker, _ int) {
			if cb.TryAcquirePermission() {
				cb.OnSuccess(10 * time.Millisecond)
			}
		}},
		{"mixed", benchConfig(), mixed},
		{"time-based", timeBased, func(cb *CircuitBreaker, _ int) {
			if cb.TryAcquirePermission() {
				cb.OnSuccess(10 * time.Millisecond)
			}
		}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			// cbs[0] is shared by both goroutines; cbs[1:3] are the control's.
			cbs := make([]*CircuitBreaker, 3)
			for i := range cbs {
				cb, err := New("bench", c.cfg)
				if err != nil {
					b.Fatal(err)
				}
				cbs[i] = cb
			}
			shared := []*CircuitBreaker{cbs[0], cbs[0]}
			b.ReportAllocs()
			prev := runtime.GOMAXPROCS(0)
			defer runtime.GOMAXPROCS(prev)
			const rounds = 4
			per := max(b.N/rounds, 2)
			var t1, t2, tu time.Duration
			b.ResetTimer()
			for range rounds {
				t1 += timedCalls(cbs[:1], per, c.call)
				t2 += timedCalls(shared, per, c.call)
				tu += timedCalls(cbs[1:], per, c.call)
			}
			b.StopTimer()
			for _, cb := range cbs {
				if s := cb.State(); s != StateClosed {
					b.Fatalf("breaker left CLOSED: %v", s)
				}
			}
			calls := float64(rounds * per)
			r1 := calls / t1.Seconds()
			r2 := calls / t2.Seconds()
			ru := calls / tu.Seconds()
			b.ReportMetric(r1, "calls_per_s_1g")
			b.ReportMetric(r2, "calls_per_s_2g")
			b.ReportMetric(r2/r1, "ratio_2g_vs_1g")
			b.ReportMetric(ru/r1, "ratio_unshared")
			b.ReportMetric(r2/ru, "efficiency")
		})
	}
}

// timedCalls sets GOMAXPROCS to g = len(cbs), starts g goroutines, the k-th
// making n/g calls of call on cbs[k], and returns the time from the start
// signal until the last goroutine finished.
func timedCalls(cbs []*CircuitBreaker, n int, call func(*CircuitBreaker, int)) time.Duration {
	g := len(cbs)
	runtime.GOMAXPROCS(g)
	var ready, done sync.WaitGroup
	start := make(chan struct{})
	for _, cb := range cbs {
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			ready.Done()
			<-start
			for i := range n / g {
				call(cb, i)
			}
		}()
	}
	ready.Wait()
	t0 := time.Now()
	close(start)
	done.Wait()
	return time.Since(t0)
}
