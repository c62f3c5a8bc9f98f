package collect

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// exposition builds a simpleclient-style page with n series: the twelve
// resilience4j series of each of n/12 breakers (the worst case: every line is
// parsed and mapped) when all is true, else ~30 breaker series among JVM noise.
func exposition(n int, all bool) []byte {
	var b bytes.Buffer
	breakers := n / 12
	if !all {
		breakers = 3
		b.WriteString("# HELP jvm_memory_used_bytes The amount of used memory\n# TYPE jvm_memory_used_bytes gauge\n")
		for i := 0; i < n-36; i++ {
			fmt.Fprintf(&b, "jvm_memory_used_bytes{area=\"heap\",id=\"pool-%d\",} %d.0\n", i, i*1024)
		}
	}
	fam := func(name, typ string, f func(i int)) {
		fmt.Fprintf(&b, "# HELP %s x\n# TYPE %s %s\n", name, name, typ)
		for i := 0; i < breakers; i++ {
			f(i)
		}
	}
	fam("resilience4j_circuitbreaker_state", "gauge", func(i int) {
		for _, s := range []string{"closed", "open", "half_open", "forced_open", "disabled", "metrics_only"} {
			v := 0
			if s == "closed" {
				v = 1
			}
			fmt.Fprintf(&b, "resilience4j_circuitbreaker_state{name=\"cb%d\",state=\"%s\",} %d.0\n", i, s, v)
		}
	})
	fam("resilience4j_circuitbreaker_failure_rate", "gauge", func(i int) {
		fmt.Fprintf(&b, "resilience4j_circuitbreaker_failure_rate{name=\"cb%d\",} 33.33333206176758\n", i)
	})
	fam("resilience4j_circuitbreaker_slow_call_rate", "gauge", func(i int) {
		fmt.Fprintf(&b, "resilience4j_circuitbreaker_slow_call_rate{name=\"cb%d\",} -1.0\n", i)
	})
	fam("resilience4j_circuitbreaker_buffered_calls", "gauge", func(i int) {
		fmt.Fprintf(&b, "resilience4j_circuitbreaker_buffered_calls{kind=\"failed\",name=\"cb%d\",} 3.0\nresilience4j_circuitbreaker_buffered_calls{kind=\"successful\",name=\"cb%d\",} 6.0\n", i, i)
	})
	fam("resilience4j_circuitbreaker_not_permitted_calls_total", "counter", func(i int) {
		fmt.Fprintf(&b, "resilience4j_circuitbreaker_not_permitted_calls_total{kind=\"not_permitted\",name=\"cb%d\",} 7.0\n", i)
	})
	fam("resilience4j_circuitbreaker_slow_calls", "gauge", func(i int) {
		fmt.Fprintf(&b, "resilience4j_circuitbreaker_slow_calls{kind=\"failed\",name=\"cb%d\",} 0.0\n", i)
	})
	return b.Bytes()
}

func benchParse(b *testing.B, all bool) {
	body := exposition(2000, all)
	lines := bytes.Count(body, []byte("\n"))
	base := func() {
		p := expfmt.NewTextParser(model.UTF8Validation)
		if _, err := p.TextToMetricFamilies(bytes.NewReader(body)); err != nil {
			b.Fatal(err)
		}
	}
	ours := func() {
		if _, err := ParsePrometheusText(body); err != nil {
			b.Fatal(err)
		}
	}
	// Baseline and ours alternate in one loop, so both see the same machine
	// state, and swap places every iteration, so neither always runs right
	// after the other's garbage; ns/op covers the pair, x-expfmt is the ratio
	// of the two totals.
	var baseT, oursT time.Duration
	first := true
	for b.Loop() {
		if first {
			t0 := time.Now()
			base()
			t1 := time.Now()
			ours()
			baseT, oursT = baseT+t1.Sub(t0), oursT+time.Since(t1)
		} else {
			t0 := time.Now()
			ours()
			t1 := time.Now()
			base()
			oursT, baseT = oursT+t1.Sub(t0), baseT+time.Since(t1)
		}
		first = !first
	}
	b.ReportMetric(float64(baseT.Nanoseconds())/float64(b.N), "expfmt-ns/op")
	b.ReportMetric(float64(oursT.Nanoseconds())/float64(b.N), "collect-ns/op")
	b.ReportMetric(float64(oursT)/float64(baseT), "x-expfmt")
	b.ReportMetric(float64(lines), "lines")
}

// BenchmarkParsePrometheus2000 parses a 2,000-series page of resilience4j
// series only (every line parsed and mapped); x-expfmt is the cost ratio
// against expfmt's TextParser alone on the same page (budget 1.2).
func BenchmarkParsePrometheus2000(b *testing.B) { benchParse(b, true) }

// BenchmarkParsePrometheus2000Mixed is a realistic page: 36 breaker series
// among 1,964 JVM series, which the line filter skips.
func BenchmarkParsePrometheus2000Mixed(b *testing.B) { benchParse(b, false) }

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkSamplerCPU runs the sampler (actuator source, 50 ms interval) for
// 2 s an iteration against the demo service, idle after a warm-up burst
// (unchanged bodies), served by a child process, and reports the benchmark
// process's CPU time (getrusage RUSAGE_SELF: the sampler alone) as a
// percentage of one core. Budget: 2 %.
func BenchmarkSamplerCPU(b *testing.B) { benchSamplerCPU(b, "idle") }

// BenchmarkSamplerCPUBusy is BenchmarkSamplerCPU with the demo under an
// open-model load of busyRate order-and-pay flows a second, so new breaker,
// time limiter and retry events arrive between polls.
func BenchmarkSamplerCPUBusy(b *testing.B) { benchSamplerCPU(b, "busy") }

func benchSamplerCPU(b *testing.B, mode string) {
	url, stop := startDemoChild(b, mode)
	defer stop()
	// One source for every iteration, primed by one poll outside the
	// measurement: the steady state is measured, not the one-off first poll
	// (a new connection and up to 300 ring events decoded in full).
	src := NewActuator(url, HTTPOptions{})
	if _, err := src.Poll(context.Background()); err != nil {
		b.Fatal(err)
	}
	var cpu, wall time.Duration
	polls, failed, events := 0, 0, 0
	for b.Loop() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		s, err := NewSampler(SamplerConfig{Source: src, Interval: 50 * time.Millisecond})
		if err != nil {
			b.Fatal(err)
		}
		start, c0 := time.Now(), cpuTime()
		s.Run(ctx, func(u Update) {
			switch {
			case u.Snapshot != nil:
				polls++
				events += len(u.Snapshot.Events)
			case u.Err != "":
				failed++
			}
		})
		wall, cpu = wall+time.Since(start), cpu+cpuTime()-c0
		cancel()
	}
	if failed > 0 || polls == 0 {
		b.Fatalf("%d polls failed, %d succeeded", failed, polls)
	}
	b.ReportMetric(100*cpu.Seconds()/wall.Seconds(), "%core")
	b.ReportMetric(float64(polls)/wall.Seconds(), "polls/s")
	b.ReportMetric(float64(events)/wall.Seconds(), "events/s")
}

// BenchmarkDetectionLag flips a fake breaker CLOSED->OPEN (without events, so
// detection is by polling) at random moments and measures the time from the
// flip to the sampler's report, at a 100 ms interval.
func BenchmarkDetectionLag(b *testing.B) {
	f := newFake()
	f.override["/actuator/circuitbreakerevents"] = func(w http.ResponseWriter) { w.WriteHeader(404) }
	srv := httptest.NewServer(f)
	defer srv.Close()
	var lags []time.Duration
	for b.Loop() {
		ctx, cancel := context.WithCancel(context.Background())
		s, _ := NewSampler(SamplerConfig{Source: NewActuator(srv.URL, HTTPOptions{}), Interval: 100 * time.Millisecond})
		flipped := make(chan time.Time, 1)
		done := make(chan struct{})
		go func() {
			time.Sleep(250*time.Millisecond + time.Duration(len(lags)*37%100)*time.Millisecond)
			f.mu.Lock()
			f.state, f.fail = "OPEN", "70.0%"
			f.mu.Unlock()
			flipped <- time.Now()
		}()
		var at time.Time
		go func() {
			defer close(done)
			s.Run(ctx, func(u Update) {
				if len(u.Transitions) > 0 && at.IsZero() {
					at = time.Now()
					cancel()
				}
			})
		}()
		<-done
		lags = append(lags, at.Sub(<-flipped))
		f.mu.Lock()
		f.state, f.fail = "CLOSED", "-1.0%"
		f.mu.Unlock()
	}
	sort.Slice(lags, func(i, j int) bool { return lags[i] < lags[j] })
	var sum time.Duration
	for _, l := range lags {
		sum += l
	}
	b.ReportMetric(float64(sum.Milliseconds())/float64(len(lags)), "mean-lag-ms")
	b.ReportMetric(float64(lags[len(lags)-1].Milliseconds()), "max-lag-ms")
}
