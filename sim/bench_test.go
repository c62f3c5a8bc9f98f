package sim

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/cbprobe/cbprobe/breaker"
)

// benchPredict runs Predict with the given number of runs per iteration and
// reports simulated runs per second and the seconds one iteration takes (the
// budget: at most 2 s per iteration on 2 cores). After the timed loop it runs
// the same runs once more serially on this goroutine (the baseline, no
// aggregation) and reports speedup_vs_serial: the serial time over one Predict.
func benchPredict(b *testing.B, a Arm, runs int) {
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		if _, err := Predict(context.Background(), a, runs, uint64(n)); err != nil {
			b.Fatal(err)
		}
		n++
	}
	el := b.Elapsed().Seconds()
	start := time.Now()
	for i := range runs {
		if _, err := runArm(context.Background(), &a, RunSeed(0, i), false); err != nil {
			b.Fatal(err)
		}
	}
	serial := time.Since(start).Seconds()
	b.ReportMetric(float64(n*runs)/el, "runs/s")
	b.ReportMetric(el/float64(n), "s/predict")
	b.ReportMetric(serial/(el/float64(n)), "speedup_vs_serial")
}

// BenchmarkPredictSequential40 is `cbprobe predict --sequential 40 --runs 10000`.
func BenchmarkPredictSequential40(b *testing.B) { benchPredict(b, referenceArm(3), 10_000) }

// BenchmarkPredictWindowType is the window-type arm (115 requests a run), 1,000 runs.
func BenchmarkPredictWindowType(b *testing.B) {
	b.Run("COUNT_BASED", func(b *testing.B) { benchPredict(b, windowTypeArm(breaker.CountBased), 1000) })
	b.Run("TIME_BASED", func(b *testing.B) { benchPredict(b, windowTypeArm(breaker.TimeBased), 1000) })
}

// BenchmarkRunSerial is the baseline: single runs of the sequential arm on one
// goroutine; Predict's runs/s divided by this one's is its parallel speed-up.
func BenchmarkRunSerial(b *testing.B) {
	a := referenceArm(3)
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		if _, err := runArm(context.Background(), &a, RunSeed(1, n), false); err != nil {
			b.Fatal(err)
		}
		n++
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "runs/s")
}

// BenchmarkPredictFleet is the window-type COUNT_BASED arm, 1,000 runs, with
// one instance and with 3 and 10 replicas (round robin): the fleet's cost per
// run beside the single instance's.
func BenchmarkPredictFleet(b *testing.B) {
	for _, n := range []int{1, 3, 10} {
		a := windowTypeArm(breaker.CountBased)
		a.Replicas = n
		b.Run(fmt.Sprintf("replicas=%d", n), func(b *testing.B) { benchPredict(b, a, 1000) })
	}
}
