package breaker

import (
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
