package sim

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/cbprobe/cbprobe/attack"
	"github.com/cbprobe/cbprobe/breaker"
)

// startOpenArm is three sequential users against a breaker left OPEN.
func startOpenArm() Arm {
	a := referenceArm(3)
	a.Users, a.RequestsPerUser, a.StartOpen = 3, 30, true
	return a
}

// TestReplicasOneIsTheSingleInstance: Replicas 0 and 1 are the same single
// instance, whatever the balancing policy (random draws nothing with one
// replica): the predictions are deep-equal, and the JSON holds no fleet field.
// (The Replicas 0 output was also compared byte for byte with the binary before
// the fleet change; see the commit message.)
func TestReplicasOneIsTheSingleInstance(t *testing.T) {
	cases := []struct {
		name string
		arm  Arm
	}{
		{"sequential retry 3", referenceArm(3)},
		{"window-type COUNT_BASED", windowTypeArm(breaker.CountBased)},
		{"window-type TIME_BASED", windowTypeArm(breaker.TimeBased)},
		{"start open, 3 users", startOpenArm()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			want := predict(t, tc.arm, 200, 7)
			for _, b := range []Balance{BalanceRoundRobin, BalanceRandom} {
				a := tc.arm
				a.Replicas, a.Balance = 1, b
				got := predict(t, a, 200, 7)
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("Replicas 1 (%v) differs from Replicas 0", b)
				}
			}
			js, err := json.Marshal(want)
			if err != nil {
				t.Fatal(err)
			}
			for _, key := range []string{`"instances"`, `"fleet"`, `"instance"`} {
				if strings.Contains(string(js), key) {
					t.Errorf("single-instance JSON holds %s", key)
				}
			}
		})
	}
}

// TestFleetRoundRobinFirstOpenScales: one sequential user, round robin over N
// replicas. Request k goes to replica (k−1) mod N, so each replica sees every
// N-th request, one at a time, with the same per-attempt outcome distribution
// as a single instance: its local first-OPEN request L has the single
// instance's distribution, and its fleet number is exactly N·(L−1) + j
// (replica j, 1-based). The fleet's first OPEN is the smallest of those, so
// its median lies in [N·(P5−1)+1, N·P95] of the single instance's band: about
// N times the single-instance request.
func TestFleetRoundRobinFirstOpenScales(t *testing.T) {
	const runs = 1000
	for _, attempts := range []int{1, 3} {
		single := referenceArm(attempts)
		single.RequestsPerUser = 400
		sp := predict(t, single, runs, 3)
		for _, n := range []int{2, 3, 5} {
			a := single
			a.Replicas = n
			p := predict(t, a, runs, 3)
			lo, hi := float64(n)*(sp.FirstOpenRequest.P5-1)+1, float64(n)*sp.FirstOpenRequest.P95
			if m := p.FirstOpenRequest.P50; m < lo || m > hi {
				t.Errorf("retry %d, %d replicas: fleet first OPEN p50 %v, want in [%v, %v] (single %+v)", attempts, n, m, lo, hi, sp.FirstOpenRequest)
			}
			if len(p.Instances) != n || p.Fleet == nil || p.Fleet.Replicas != n {
				t.Fatalf("retry %d, %d replicas: %d instances, fleet %+v", attempts, n, len(p.Instances), p.Fleet)
			}
			for _, in := range p.Instances {
				// Same distribution as the single instance: the medians of 1000
				// draws each lie inside the other's 5–95 % band.
				if !sp.FirstOpenRequest.Contains(in.FirstOpenLocal.P50) {
					t.Errorf("retry %d, %d replicas, instance %d: local first OPEN p50 %v outside the single instance's band %+v",
						attempts, n, in.Instance, in.FirstOpenLocal.P50, sp.FirstOpenRequest)
				}
				if in.FirstOpenRequest.N != sp.FirstOpenRequest.N {
					t.Errorf("instance %d opened in %d runs, the single instance in %d", in.Instance, in.FirstOpenRequest.N, sp.FirstOpenRequest.N)
				}
			}
		}
	}
	// The exact identity, run by run.
	a := referenceArm(3)
	a.RequestsPerUser, a.Replicas = 400, 3
	for i := range 50 {
		r, err := Run(a, RunSeed(5, i))
		if err != nil {
			t.Fatal(err)
		}
		for _, in := range r.Instances {
			if in.FirstOpenCause == "" {
				continue
			}
			if want := 3*(in.FirstOpenLocal-1) + in.Instance; in.FirstOpenRequest != want {
				t.Fatalf("run %d instance %d: first OPEN at fleet request %d, local %d; want fleet %d", i, in.Instance, in.FirstOpenRequest, in.FirstOpenLocal, want)
			}
		}
	}
}

// TestFleetBalanceCounts: round robin splits the requests as evenly as
// possible (exactly); random keeps each replica's count inside binomial bounds.
// With T requests and N replicas a replica's count is Binomial(T, 1/N), mean
// μ = T/N, sd σ = √(T·(1/N)·(1−1/N)). Over R runs the mean count is within 4
// standard errors σ/√R of μ, and the nearest-rank 5th and 95th percentiles of
// R = 1000 draws lie inside the 1st..99th percentiles μ ∓ 2.33σ.
func TestFleetBalanceCounts(t *testing.T) {
	const runs = 1000
	cases := []struct {
		name    string
		n       int
		balance Balance
		rate    float64
		dur     time.Duration
	}{
		{"round robin 3 of 301", 3, BalanceRoundRobin, 10, 30100 * time.Millisecond},
		{"round robin 4 of 600", 4, BalanceRoundRobin, 20, 30 * time.Second},
		{"random 4 of 600", 4, BalanceRandom, 20, 30 * time.Second},
		{"random 7 of 400", 7, BalanceRandom, 10, 40 * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := neverOpens(referenceArm(3))
			a.Users, a.RequestsPerUser = 0, 0
			a.Phases = []attack.Phase{{Name: "p", Rate: tc.rate, Duration: tc.dur}}
			a.Replicas, a.Balance = tc.n, tc.balance
			total := a.PlannedRequests()
			p := predict(t, a, runs, 11)
			mu := float64(total) / float64(tc.n)
			sigma := math.Sqrt(float64(total) / float64(tc.n) * (1 - 1/float64(tc.n)))
			sum := 0.0
			for _, in := range p.Instances {
				b := in.Requests
				sum += b.Mean
				if tc.balance == BalanceRoundRobin {
					lo, hi := math.Floor(mu), math.Ceil(mu)
					if b.P5 < lo || b.P95 > hi {
						t.Errorf("instance %d: requests %+v, want every run in [%v, %v]", in.Instance, b, lo, hi)
					}
					continue
				}
				if se := sigma / math.Sqrt(runs); math.Abs(b.Mean-mu) > 4*se {
					t.Errorf("instance %d: mean requests %v, want %v ± %v", in.Instance, b.Mean, mu, 4*se)
				}
				if b.P5 < mu-2.33*sigma || b.P95 > mu+2.33*sigma {
					t.Errorf("instance %d: requests band [%v, %v] outside μ ∓ 2.33σ = [%v, %v]", in.Instance, b.P5, b.P95, mu-2.33*sigma, mu+2.33*sigma)
				}
				if b.P5 == b.P95 {
					t.Errorf("instance %d: random balancing gave the same count in every run: %+v", in.Instance, b)
				}
			}
			if math.Abs(sum-float64(total)) > 1e-6 {
				t.Errorf("mean counts sum to %v, want %d", sum, total)
			}
		})
	}
}

// openIntervals sums each replica's time in OPEN from a run's transition list
// alone, up to horizon; start says whether the replicas started OPEN.
func openIntervals(r RunResult, n int, start bool, horizon time.Duration) []time.Duration {
	out := make([]time.Duration, n)
	since := make([]time.Duration, n)
	open := make([]bool, n)
	for i := range open {
		open[i] = start
	}
	for _, t := range r.Transitions {
		i := t.Instance - 1
		if open[i] && t.To != breaker.StateOpen {
			out[i] += t.At - since[i]
			open[i] = false
		} else if !open[i] && t.To == breaker.StateOpen {
			since[i], open[i] = t.At, true
		}
	}
	for i := range open {
		if open[i] {
			out[i] += horizon - since[i]
		}
	}
	return out
}

// TestFleetOpenAccounting: the OPEN counts of a fleet run agree with its own
// transition list, computed independently: each replica's OPEN time, the
// count-weighted sum of OpenTime, the phases' spans and the per-request
// routing all add up exactly (integer nanoseconds).
func TestFleetOpenAccounting(t *testing.T) {
	wt := windowTypeArm(breaker.CountBased)
	wt.Replicas = 3
	wtr := wt
	wtr.Balance = BalanceRandom
	so := startOpenArm()
	so.Replicas = 4
	tb := windowTypeArm(breaker.TimeBased)
	tb.Replicas, tb.Balance = 2, BalanceRandom
	for _, a := range []Arm{wt, wtr, so, tb} {
		for i := range 20 {
			r, err := Run(a, RunSeed(21, i))
			if err != nil {
				t.Fatal(err)
			}
			f := r.Fleet
			n := a.Replicas
			if f == nil || len(r.Instances) != n || len(f.OpenTime) != n+1 {
				t.Fatalf("fleet %+v, %d instances", f, len(r.Instances))
			}
			want := openIntervals(r, n, a.StartOpen, f.Horizon)
			var instOpen, weighted, total, spans time.Duration
			for j, in := range r.Instances {
				if in.OpenTime != want[j] {
					t.Fatalf("%s run %d instance %d: OpenTime %v, transitions say %v", a.Name, i, j+1, in.OpenTime, want[j])
				}
				instOpen += in.OpenTime
			}
			for k, d := range f.OpenTime {
				weighted += time.Duration(k) * d
				total += d
			}
			var phaseOpen time.Duration
			for _, ph := range f.Phases {
				spans += ph.Span
				phaseOpen += ph.OpenInstanceTime
				if ph.AllOpenTime > ph.AnyOpenTime || ph.AnyOpenTime > ph.Span {
					t.Fatalf("phase %+v: all > any or any > span", ph)
				}
			}
			if weighted != instOpen || phaseOpen != instOpen || total != f.Horizon || spans != f.Horizon {
				t.Fatalf("%s run %d: Σk·OpenTime %v, Σ phase open %v, Σ instance open %v; Σ OpenTime %v, Σ spans %v, horizon %v",
					a.Name, i, weighted, phaseOpen, instOpen, total, spans, f.Horizon)
			}
			if a.StartOpen && f.OpenTime[n] == 0 {
				t.Fatalf("started OPEN but no time with all %d replicas OPEN", n)
			}
			perInst := make([]int, n)
			for _, q := range r.RequestLog {
				if q.Instance < 1 || q.Instance > n {
					t.Fatalf("request %d routed to instance %d of %d", q.Seq, q.Instance, n)
				}
				perInst[q.Instance-1]++
			}
			opened := 0
			for j, in := range r.Instances {
				if perInst[j] != in.Requests || in.Succeeded+in.Failed+in.Rejected != in.Requests {
					t.Fatalf("instance %d: %d requests in the log, %+v", j+1, perInst[j], in)
				}
				if in.FirstOpenCause != "" {
					opened++
				}
			}
			if opened != f.InstancesOpened {
				t.Fatalf("InstancesOpened %d, counted %d", f.InstancesOpened, opened)
			}
		}
	}
}

// TestFleetPredictionSums: per-instance transition counts add up to the
// fleet's, the OPEN-count shares sum to 1, and the fleet's first OPEN is never
// later than the earliest replica's (it is the minimum in every run, so its
// 5th percentile is at most each replica's).
func TestFleetPredictionSums(t *testing.T) {
	a := windowTypeArm(breaker.CountBased)
	a.Replicas, a.Balance = 3, BalanceRandom
	p := predict(t, a, 300, 5)
	fleet := map[string]float64{}
	for _, tr := range p.Transitions {
		fleet[tr.Kind] = tr.MeanCount
	}
	sum := map[string]float64{}
	for _, in := range p.Instances {
		for _, tr := range in.Transitions {
			sum[tr.Kind] += tr.MeanCount
		}
		if p.FirstOpenRequest.P5 > in.FirstOpenRequest.P5 {
			t.Errorf("fleet first OPEN p5 %v later than instance %d's %v", p.FirstOpenRequest.P5, in.Instance, in.FirstOpenRequest.P5)
		}
	}
	for k, v := range fleet {
		if math.Abs(sum[k]-v) > 1e-9 {
			t.Errorf("%s: instances sum to %v per run, fleet %v", k, sum[k], v)
		}
	}
	total := 0.0
	for _, s := range p.Fleet.OpenCount {
		total += s
	}
	if math.Abs(total-1) > 1e-9 {
		t.Errorf("OpenCount sums to %v", total)
	}
	if len(p.Fleet.Phases) != 3 || p.Fleet.Phases[1].MeanOpen < p.Fleet.Phases[0].MeanOpen {
		// In the pause (phase 2) no call asks for permission: an OPEN breaker
		// stays OPEN (lazy half-open), so at least as many are OPEN as in phase 1.
		t.Errorf("fleet phases %+v", p.Fleet.Phases)
	}
}

// TestFleetReproducibleAcrossGOMAXPROCS: a fleet prediction is byte-identical
// with one worker and with two.
func TestFleetReproducibleAcrossGOMAXPROCS(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	a := windowTypeArm(breaker.TimeBased)
	a.Replicas, a.Balance = 3, BalanceRandom
	var out [2][]byte
	for i, procs := range []int{1, 2} {
		runtime.GOMAXPROCS(procs)
		b, err := json.Marshal(predict(t, a, 200, 42))
		if err != nil {
			t.Fatal(err)
		}
		out[i] = b
	}
	if string(out[0]) != string(out[1]) {
		t.Fatal("GOMAXPROCS 1 and 2 differ")
	}
}

// TestFleetValidate: bad replica counts and policies name their field; the
// request bounds hold for fleets as for one instance.
func TestFleetValidate(t *testing.T) {
	big := windowTypeArm(breaker.CountBased)
	big.Phases = []attack.Phase{{Name: "p", Rate: 1000, Duration: 1001 * time.Second}}
	big.Replicas = 3
	cases := []struct {
		name  string
		edit  func(*Arm)
		field string
	}{
		{"negative replicas", func(a *Arm) { a.Replicas = -1 }, "Replicas"},
		{"too many replicas", func(a *Arm) { a.Replicas = MaxReplicas + 1 }, "Replicas"},
		{"unknown balance", func(a *Arm) { a.Replicas, a.Balance = 2, Balance(9) }, "Balance"},
		{"fleet over MaxRequestsPerRun", func(a *Arm) { *a = big }, "Phases"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := referenceArm(3)
			tc.edit(&a)
			_, err := Predict(context.Background(), a, 10, 1)
			var ae *ArmError
			if !errors.As(err, &ae) || ae.Field != tc.field {
				t.Fatalf("Predict error %v, want *ArmError on %s", err, tc.field)
			}
		})
	}
	ok := referenceArm(3)
	ok.Replicas = MaxReplicas
	if err := ok.Validate(); err != nil {
		t.Fatalf("MaxReplicas refused: %v", err)
	}
}

// TestFleetPredictRunsCapped: the MaxPredictRequests budget counts fleet
// requests as it counts one instance's.
func TestFleetPredictRunsCapped(t *testing.T) {
	a := windowTypeArm(breaker.CountBased) // 115 requests a run
	a.Replicas = 4
	p, err := predictWithin(context.Background(), a, 100, 1, 1150, 2, false)
	if err != nil {
		t.Fatal(err)
	}
	if p.Runs != 10 || p.RequestedRuns != 100 {
		t.Fatalf("runs %d of %d, want 10 of 100", p.Runs, p.RequestedRuns)
	}
	if PredictRuns(&a, 1_000_000) != MaxPredictRequests/a.PlannedRequests() {
		t.Fatal("PredictRuns differs for a fleet")
	}
}

func TestParseBalance(t *testing.T) {
	cases := []struct {
		in   string
		want Balance
		ok   bool
	}{
		{"", BalanceRoundRobin, true},
		{"round-robin", BalanceRoundRobin, true},
		{"RR", BalanceRoundRobin, true},
		{"Random", BalanceRandom, true},
		{"least-conn", 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseBalance(tc.in)
			if (err == nil) != tc.ok || got != tc.want {
				t.Fatalf("ParseBalance(%q) = %v, %v", tc.in, got, err)
			}
			if tc.ok {
				if back, _ := ParseBalance(got.String()); back != got {
					t.Fatalf("%v does not round-trip", got)
				}
			}
		})
	}
}
