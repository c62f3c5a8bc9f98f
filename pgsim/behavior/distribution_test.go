package behavior

import (
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

const ms = time.Millisecond

func TestParseDistribution(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		want   Distribution
		canon  string
		errHas string
	}{
		{name: "fixed", in: "200ms", want: Fixed{D: 200 * ms}, canon: "200ms"},
		{name: "fixed zero", in: "0", want: Fixed{}, canon: "0s"},
		{name: "fixed prefix", in: "fixed:1s", want: Fixed{D: time.Second}, canon: "1s"},
		{name: "uniform", in: "100ms-500ms", want: Uniform{Min: 100 * ms, Max: 500 * ms}, canon: "100ms-500ms"},
		{name: "uniform spaces", in: " 100ms - 500ms ", want: Uniform{Min: 100 * ms, Max: 500 * ms}, canon: "100ms-500ms"},
		{name: "uniform prefix", in: "uniform:1s-2s", want: Uniform{Min: time.Second, Max: 2 * time.Second}, canon: "1s-2s"},
		{name: "uniform params", in: "uniform:min=1s,max=2s", want: Uniform{Min: time.Second, Max: 2 * time.Second}, canon: "1s-2s"},
		{name: "normal", in: "normal:mean=200ms,sd=50ms", want: Normal{Mean: 200 * ms, SD: 50 * ms}, canon: "normal:mean=200ms,sd=50ms"},
		{name: "normal reversed keys", in: "NORMAL:sd=50ms,mean=200ms", want: Normal{Mean: 200 * ms, SD: 50 * ms}, canon: "normal:mean=200ms,sd=50ms"},
		{name: "lognormal", in: "lognormal:median=200ms,p99=1s", want: LogNormal{Median: 200 * ms, P99: time.Second}, canon: "lognormal:median=200ms,p99=1s"},
		{name: "list", in: "list:100ms,150ms,900ms", want: Empirical{Values: []time.Duration{100 * ms, 150 * ms, 900 * ms}}, canon: "list:100ms,150ms,900ms"},
		{name: "empty", in: "", errHas: "empty"},
		{name: "garbage", in: "fast", errHas: "bad duration"},
		{name: "negative fixed", in: "-5ms", errHas: "negative"},
		{name: "reversed uniform", in: "500ms-100ms", errHas: "below min"},
		{name: "unknown kind", in: "pareto:alpha=1", errHas: "unknown kind"},
		{name: "normal missing sd", in: "normal:mean=200ms", errHas: `missing parameter "sd"`},
		{name: "normal unknown key", in: "normal:mean=200ms,sd=1ms,x=1s", errHas: `unknown parameter "x"`},
		{name: "normal dup key", in: "normal:mean=200ms,mean=1ms", errHas: "given twice"},
		{name: "lognormal p99 below median", in: "lognormal:median=1s,p99=200ms", errHas: "below the median"},
		{name: "lognormal zero median", in: "lognormal:median=0s,p99=1s", errHas: "median"},
		{name: "list empty item", in: "list:100ms,,1s", errHas: "empty duration"},
		{name: "too long", in: "25h", errHas: "24h"},
		{name: "param without value", in: "normal:mean", errHas: "key=duration"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseDistribution(tc.in)
			if tc.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errHas) {
					t.Fatalf("ParseDistribution(%q) error = %v, want it to contain %q", tc.in, err, tc.errHas)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseDistribution(%q): %v", tc.in, err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Fatalf("ParseDistribution(%q) (-want +got):\n%s", tc.in, diff)
			}
			if got.String() != tc.canon {
				t.Fatalf("String() = %q, want %q", got.String(), tc.canon)
			}
			again, err := ParseDistribution(got.String())
			if err != nil || !cmp.Equal(again, got) {
				t.Fatalf("round trip of %q gave %v, %v", got.String(), again, err)
			}
		})
	}
}

func samples(d Distribution, seed uint64, n int) []time.Duration {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = d.Sample(r)
	}
	return out
}

// countBelow returns how many samples are <= x.
func countBelow(s []time.Duration, x time.Duration) int {
	n := 0
	for _, v := range s {
		if v <= x {
			n++
		}
	}
	return n
}

// binomialOK reports whether k successes of n trials are within 4 standard
// deviations (sqrt(n p (1-p))) of n p. A correct sampler fails this with
// probability about 6e-5 per check; with fixed seeds the outcome is fixed anyway.
func binomialOK(k, n int, p float64) (bool, float64, float64) {
	mean := float64(n) * p
	sd := math.Sqrt(float64(n) * p * (1 - p))
	return math.Abs(float64(k)-mean) <= 4*sd, mean, 4 * sd
}

func TestUniformSample(t *testing.T) {
	const n = 20000
	u := Uniform{Min: 100 * ms, Max: 500 * ms}
	s := samples(u, 1, n)
	for _, v := range s {
		if v < u.Min || v > u.Max {
			t.Fatalf("sample %v outside [%v, %v]", v, u.Min, u.Max)
		}
	}
	// Order statistics: the number of samples <= each decile of U(100,500) is
	// Binomial(n, q); it must lie within 4 sigma of n q.
	for q := 0.1; q < 0.95; q += 0.1 {
		x := u.Min + time.Duration(q*float64(u.Max-u.Min))
		if ok, mean, tol := binomialOK(countBelow(s, x), n, q); !ok {
			t.Errorf("samples <= %v: %d, want %.0f ± %.0f", x, countBelow(s, x), mean, tol)
		}
	}
}

func TestNormalSample(t *testing.T) {
	const n = 20000
	d := Normal{Mean: 200 * ms, SD: 50 * ms}
	s := samples(d, 2, n)
	var sum float64
	for _, v := range s {
		sum += float64(v)
	}
	mean := sum / n
	// The sample mean has standard error sd/sqrt(n) = 50ms/141 = 0.354 ms; allow 4 of them.
	if tol := 4 * float64(d.SD) / math.Sqrt(n); math.Abs(mean-float64(d.Mean)) > tol {
		t.Errorf("mean %v, want %v ± %v", time.Duration(mean), d.Mean, time.Duration(tol))
	}
	// P(X <= mean + sd) = Phi(1) = 0.8413: binomial count check.
	if ok, m, tol := binomialOK(countBelow(s, d.Mean+d.SD), n, 0.841344746); !ok {
		t.Errorf("samples <= mean+sd: %d, want %.0f ± %.0f", countBelow(s, d.Mean+d.SD), m, tol)
	}
	// Truncation: a normal with mean 0 gives half its samples at exactly 0 and none below.
	z := samples(Normal{Mean: 0, SD: 10 * ms}, 3, n)
	zeros := 0
	for _, v := range z {
		if v < 0 {
			t.Fatalf("negative sample %v", v)
		}
		if v == 0 {
			zeros++
		}
	}
	if ok, m, tol := binomialOK(zeros, n, 0.5); !ok {
		t.Errorf("zero samples %d, want %.0f ± %.0f", zeros, m, tol)
	}
}

func TestLogNormalSample(t *testing.T) {
	const n = 20000
	d := LogNormal{Median: 200 * ms, P99: time.Second}
	s := samples(d, 4, n)
	// Order statistics: #samples <= median ~ Binomial(n, 0.5) and
	// #samples <= p99 ~ Binomial(n, 0.99) (sd = sqrt(20000*.99*.01) = 14.1).
	for _, c := range []struct {
		x time.Duration
		p float64
	}{{d.Median, 0.5}, {d.P99, 0.99}} {
		if ok, m, tol := binomialOK(countBelow(s, c.x), n, c.p); !ok {
			t.Errorf("samples <= %v: %d, want %.0f ± %.0f", c.x, countBelow(s, c.x), m, tol)
		}
	}
	sorted := append([]time.Duration(nil), s...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	if sorted[0] <= 0 {
		t.Errorf("log-normal sample %v is not positive", sorted[0])
	}
}

func TestEmpiricalSample(t *testing.T) {
	const n = 30000
	vals := []time.Duration{100 * ms, 150 * ms, 900 * ms}
	s := samples(Empirical{Values: vals}, 5, n)
	counts := map[time.Duration]int{}
	for _, v := range s {
		counts[v]++
	}
	if len(counts) != len(vals) {
		t.Fatalf("got values %v, want only %v", counts, vals)
	}
	for _, v := range vals {
		// Each value is picked with probability 1/3: Binomial(n, 1/3).
		if ok, m, tol := binomialOK(counts[v], n, 1.0/3); !ok {
			t.Errorf("value %v picked %d times, want %.0f ± %.0f", v, counts[v], m, tol)
		}
	}
}

func TestFixedAndDegenerateUniform(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	if got := (Fixed{D: 7 * ms}).Sample(r); got != 7*ms {
		t.Errorf("Fixed sample %v, want 7ms", got)
	}
	if got := (Uniform{Min: 3 * ms, Max: 3 * ms}).Sample(r); got != 3*ms {
		t.Errorf("degenerate uniform sample %v, want 3ms", got)
	}
	if got := (LogNormal{Median: 5 * ms, P99: 5 * ms}).Sample(r); got != 5*ms {
		t.Errorf("degenerate log-normal sample %v, want 5ms", got)
	}
}
