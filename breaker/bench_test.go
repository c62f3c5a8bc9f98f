package breaker

import (
	"errors"
	"runtime"
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

// BenchmarkVsGobreaker runs the same acquire+record loop on cbprobe's breaker and
// on sony/gobreaker/v2's TwoStepCircuitBreaker (Allow + done) in one process and
// reports both costs and their ratio (cbprobe / gobreaker; below 1 is faster).
func BenchmarkVsGobreaker(b *testing.B) {
	cb, err := New("bench", benchConfig())
	if err != nil {
		b.Fatal(err)
	}
	gb := gobreaker.NewTwoStepCircuitBreaker[any](gobreaker.Settings{Name: "bench", MaxRequests: 5, Timeout: 10 * time.Second})
	n := b.N
	b.ResetTimer()
	start := time.Now()
	for range n {
		if cb.TryAcquirePermission() {
			cb.OnSuccess(10 * time.Millisecond)
		}
	}
	ours := time.Since(start)
	start = time.Now()
	for range n {
		done, err := gb.Allow()
		if err == nil {
			done(nil)
		}
	}
	theirs := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(ours.Nanoseconds())/float64(n), "cbprobe_ns/call")
	b.ReportMetric(float64(theirs.Nanoseconds())/float64(n), "gobreaker_ns/call")
	b.ReportMetric(float64(ours)/float64(theirs), "ratio_vs_gobreaker")
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
