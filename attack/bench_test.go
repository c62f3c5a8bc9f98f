package attack

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// benchServerEnv makes the test binary act as the benchmark's target: a
// zero-latency handler in its own process, so the load generator's CPU time
// does not include the target's.
const benchServerEnv = "CBPROBE_ATTACK_BENCH_SERVER"

// benchRoundEnv makes the test binary run one engine's round of
// BenchmarkAttackCPU (its value is the engine) against the target in
// benchTargetEnv for benchRoundLenEnv, and print a roundResult.
const (
	benchRoundEnv    = "CBPROBE_ATTACK_BENCH_ROUND"
	benchTargetEnv   = "CBPROBE_ATTACK_BENCH_TARGET"
	benchRoundLenEnv = "CBPROBE_ATTACK_BENCH_ROUND_LEN"
)

// benchBurnEnv makes the test binary a CPU burner: that many goroutines spin
// (GOMAXPROCS set to match) until stdin closes. CBPROBE_BENCH_BURN=N runs one
// beside BenchmarkAttackCPU to overload the machine on purpose.
const benchBurnEnv = "CBPROBE_ATTACK_BENCH_BURN"

// burnGoroutines is CBPROBE_BENCH_BURN (0 when unset).
func burnGoroutines(b *testing.B) int {
	s := os.Getenv("CBPROBE_BENCH_BURN")
	if s == "" {
		return 0
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n > 64 {
		b.Fatalf("CBPROBE_BENCH_BURN=%q: want 0 to 64 spinning goroutines", s)
	}
	return n
}

// burn spins n goroutines until stdin closes.
func burn(n int) {
	runtime.GOMAXPROCS(n)
	var stop atomic.Bool
	for range n {
		go func() {
			x := uint64(1)
			for !stop.Load() {
				for range 1 << 16 {
					x = x*6364136223846793005 + 1442695040888963407
				}
			}
			_ = x
		}()
	}
	_, _ = io.Copy(io.Discard, os.Stdin)
	stop.Store(true)
}

// startBurner runs the test binary as a burner of n goroutines for the rest
// of the benchmark.
func startBurner(b *testing.B, n int) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), benchBurnEnv+"="+strconv.Itoa(n))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatalf("start burner: %v", err)
	}
	b.Cleanup(func() {
		stdin.Close()
		_ = cmd.Wait()
	})
}

func TestMain(m *testing.M) {
	if s := os.Getenv(benchBurnEnv); s != "" {
		n, _ := strconv.Atoi(s)
		burn(max(n, 1))
		return
	}
	if os.Getenv(benchServerEnv) == "1" {
		serveBench()
		return
	}
	if engine := os.Getenv(benchRoundEnv); engine != "" {
		benchRoundChild(engine)
		return
	}
	m.Run() // since Go 1.15 the testing package exits with m.Run's code
}

// serveBench listens on loopback, prints its address and serves until stdin closes.
func serveBench() {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench server:", err)
		return
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "ok")
	})}
	go func() { _ = srv.Serve(l) }()
	fmt.Println("http://" + l.Addr().String())
	_, _ = io.Copy(io.Discard, os.Stdin)
	_ = srv.Close()
}

// startBenchServer runs the test binary as the target and returns its URL.
func startBenchServer(b *testing.B) string {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), benchServerEnv+"=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		stdin.Close()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		b.Fatalf("bench server: %v", err)
	}
	return strings.TrimSpace(line)
}

// cpuTime is this process's user + system CPU time so far.
func cpuTime() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, fmt.Errorf("getrusage: %w", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}

func benchDuration(b *testing.B) time.Duration {
	s := os.Getenv("CBPROBE_BENCH_DURATION")
	if s == "" {
		return 3 * time.Second
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		b.Fatalf("CBPROBE_BENCH_DURATION=%q: want a positive duration", s)
	}
	return d
}

// benchPlan reads CBPROBE_BENCH_ENGINES: "both" (the default) compares
// cbprobe with vegeta; "aa" runs plain vegeta in both slots (cbprobe's
// included), so cpu-ratio shows the harness's own noise on this machine;
// "cbprobe" or "vegeta" runs that engine alone inside the benchmark process,
// so a -cpuprofile shows it.
func benchPlan(b *testing.B) (slotA, slotB string, inProcess bool) {
	switch s := os.Getenv("CBPROBE_BENCH_ENGINES"); s {
	case "", "both":
		return engineCbprobe, engineVegeta, false
	case "aa":
		return engineVegeta, engineVegeta, false
	case engineCbprobe, engineVegeta:
		return s, "", true
	default:
		b.Fatalf("CBPROBE_BENCH_ENGINES=%q: want both, aa, cbprobe or vegeta", s)
		return "", "", false
	}
}

// The engines BenchmarkAttackCPU compares.
const (
	engineCbprobe = "cbprobe"
	engineVegeta  = "vegeta"
)

// benchRate is BenchmarkAttackCPU's attack rate in requests per second.
const benchRate = 5000

// roundResult is one engine's round: its CPU time (user+sys, from the
// attack's start to the last result), 200 answers, and cbprobe's late and
// dropped sends.
type roundResult struct {
	CPU           time.Duration
	OK            int
	Late, Dropped int
	// Sent is the number of requests that left. P99 is the 99th percentile of
	// their latency from the moment each left, in ms (what vegeta and cbprobe
	// both report); P99Intended is the same from each request's intended send
	// time (its latency plus how late it left: what an open-model user sees).
	Sent             int
	P99, P99Intended float64
}

// p99ms is the 99th percentile (nearest rank) of xs in milliseconds; xs is
// sorted in place.
func p99ms(xs []time.Duration) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	slices.Sort(xs)
	return float64(xs[(len(xs)*99+99)/100-1]) / float64(time.Millisecond)
}

// runRound runs one engine's attack at benchRate for d against target in
// this process, after a forced GC, and measures its CPU time with
// getrusage(RUSAGE_SELF).
//
// vegeta is plain vegeta: ConstantPacer, default Attacker with its timeout,
// a consumer counting results. cbprobe is Run with a one-step GET flow under
// a cancellable context (as the command gives it) and an emit that counts
// results and encodes each one as a requests.csv record (csvSink): cbprobe's
// attack with its writer. Each gets a fresh client with vegeta's transport
// settings whose idle connections are closed afterwards.
func runRound(engine, target string, d time.Duration) (roundResult, error) {
	var res roundResult
	client := newClient()
	defer client.CloseIdleConnections()
	switch engine {
	case engineVegeta:
		atk := vegeta.NewAttacker(vegeta.Client(client), vegeta.Timeout(DefaultTimeout))
		tr := vegeta.NewStaticTargeter(vegeta.Target{Method: http.MethodGet, URL: target + "/"})
		lat := make([]time.Duration, 0, int(benchRate*d.Seconds())+16)
		latI := make([]time.Duration, 0, cap(lat))
		runtime.GC()
		c0, err := cpuTime()
		if err != nil {
			return res, err
		}
		// ConstantPacer's hit n (0-based Seq) is due at start + (n+1)/rate.
		start := time.Now()
		for r := range atk.Attack(tr, vegeta.ConstantPacer{Freq: benchRate, Per: time.Second}, d, "plain") {
			if r.Code == 200 {
				res.OK++
			}
			intended := start.Add(time.Duration(float64(r.Seq+1) / benchRate * float64(time.Second)))
			lat = append(lat, r.Latency)
			latI = append(latI, r.Timestamp.Add(r.Latency).Sub(intended))
		}
		c1, err := cpuTime()
		res.CPU = c1 - c0
		res.Sent, res.P99, res.P99Intended = len(lat), p99ms(lat), p99ms(latI)
		return res, err
	case engineCbprobe:
		flow, err := SingleRequestFlow(http.MethodGet, "/")
		if err != nil {
			return res, err
		}
		sink := newCSVSink()
		lat := make([]time.Duration, 0, int(benchRate*d.Seconds())+16)
		latI := make([]time.Duration, 0, cap(lat))
		emit := func(r Result) {
			sink.write(r)
			lat = append(lat, r.Latency)
			latI = append(latI, r.Sent.Add(r.Latency).Sub(r.Intended))
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		runtime.GC()
		c0, err := cpuTime()
		if err != nil {
			return res, err
		}
		// CBPROBE_BENCH_DROP_AFTER sets Config.DropAfter (default: Run's).
		dropAfter, _ := time.ParseDuration(os.Getenv("CBPROBE_BENCH_DROP_AFTER"))
		sum, err := Run(ctx, Config{Target: target, Flow: flow, Client: client, DropAfter: dropAfter, Phases: []Phase{{Name: "bench", Rate: benchRate, Duration: d}}},
			emit)
		sink.w.Flush()
		res.Sent, res.P99, res.P99Intended = len(lat), p99ms(lat), p99ms(latI)
		c1, cerr := cpuTime()
		res.CPU = c1 - c0
		if err != nil {
			return res, fmt.Errorf("cbprobe round: %w", err)
		}
		res.OK, res.Late, res.Dropped = sink.ok, sum.Phases[0].Late, sum.Phases[0].Dropped
		return res, cerr
	default:
		return res, fmt.Errorf("unknown engine %q", engine)
	}
}

// benchRoundChild is the test binary run as one round's process: it runs
// the round and prints its roundResult as JSON on stdout.
func benchRoundChild(engine string) {
	d, err := time.ParseDuration(os.Getenv(benchRoundLenEnv))
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench round: %s: %v\n", benchRoundLenEnv, err)
		return
	}
	res, err := runRound(engine, os.Getenv(benchTargetEnv), d)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench round:", err)
		return
	}
	_ = json.NewEncoder(os.Stdout).Encode(res)
}

// spawnRound runs one engine's round in a fresh process (the test binary)
// and returns what it measured.
func spawnRound(b *testing.B, engine, target string, d time.Duration) roundResult {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), benchRoundEnv+"="+engine, benchTargetEnv+"="+target, benchRoundLenEnv+"="+d.String())
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("%s round: %v", engine, err)
	}
	var res roundResult
	if err := json.Unmarshal(out, &res); err != nil {
		b.Fatalf("%s round printed %q: %v", engine, out, err)
	}
	return res
}

// csvSink stands in for the results writer cbprobe runs next to an attack
// (the attack package must not import results): it turns each Result into a
// requests.csv record (arm, seq, phase, user, intended, sent, latency_ms,
// status, outcome, error; times in RFC 3339 with nanoseconds, as
// results.Writer writes them) and encodes it with encoding/csv into a
// buffered io.Discard, so the benchmark charges cbprobe the per-request cost
// of recording every request.
type csvSink struct {
	w   *csv.Writer
	rec []string
	ok  int // requests answered 200
}

func newCSVSink() *csvSink { return &csvSink{w: csv.NewWriter(io.Discard), rec: make([]string, 0, 10)} }

// write records r; emit calls it (never concurrently).
func (s *csvSink) write(r Result) {
	outcome := "failed"
	switch {
	case r.Status >= 200 && r.Status < 300:
		outcome = "succeeded"
	case r.Status != 0 && bytes.Contains(r.Body, []byte("CallNotPermitted")):
		outcome = "rejected"
	}
	if r.Status == 200 {
		s.ok++
	}
	s.rec = append(s.rec[:0], "attack", strconv.Itoa(r.Seq), r.PhaseName, strconv.Itoa(r.User),
		r.Intended.UTC().Format(time.RFC3339Nano), r.Sent.UTC().Format(time.RFC3339Nano),
		strconv.FormatFloat(float64(r.Latency)/float64(time.Millisecond), 'f', 3, 64),
		strconv.Itoa(r.Status), outcome, r.Error)
	_ = s.w.Write(s.rec) // io.Discard never fails
}

// BenchmarkAttackCPU runs the same open-model attack (5,000 GET/s against a
// zero-latency handler in another process) with plain vegeta and with
// cbprobe's attack with its writer (see runRound), and reports each achieved
// rate relative to the target and cbprobe's CPU time relative to vegeta's.
//
// The machine is shared, so the attack time is cut into rounds of at most
// 1 s that alternate which engine goes first (ABBA), and every round runs in
// a fresh process: in-process rounds showed a bias that held for a whole run
// and changed sign between runs (vegeta against itself gave 1.09 and 0.94).
// cpu-ratio is cbprobe's CPU time over vegeta's summed over all rounds;
// cpu-ratio-median is the median of the per-round ratios, which a stall of
// other work during one round cannot move much.
//
// CBPROBE_BENCH_DURATION sets each engine's total attack time (default 3s);
// CBPROBE_BENCH_ENGINES=aa runs vegeta in both slots (the harness's noise);
// CBPROBE_BENCH_ENGINES=cbprobe or vegeta runs one engine only, in the
// benchmark process (profiling); CBPROBE_BENCH_VERBOSE=1 logs every round.
func BenchmarkAttackCPU(b *testing.B) {
	du := benchDuration(b)
	slotA, slotB, inProcess := benchPlan(b)
	rounds := max(1, int((du+time.Second-1)/time.Second))
	round := du / time.Duration(rounds)
	target := startBenchServer(b)
	verbose := os.Getenv("CBPROBE_BENCH_VERBOSE") != ""
	run := func(engine string) roundResult {
		if engine == "" {
			return roundResult{}
		}
		if !inProcess {
			return spawnRound(b, engine, target, round)
		}
		res, err := runRound(engine, target, round)
		if err != nil {
			b.Fatal(err)
		}
		return res
	}
	if n := burnGoroutines(b); n > 0 {
		startBurner(b, n)
	}
	var a, v roundResult // totals of slot A (cbprobe) and slot B (vegeta)
	var ratios []float64
	var p99A, p99B, p99IA, p99IB []float64 // per round
	for i := 0; i < b.N; i++ {
		for r := 0; r < rounds; r++ {
			var ra, rb roundResult
			if r%2 == 0 {
				rb = run(slotB)
				ra = run(slotA)
			} else {
				ra = run(slotA)
				rb = run(slotB)
			}
			if ra.CPU > 0 && rb.CPU > 0 {
				ratios = append(ratios, ra.CPU.Seconds()/rb.CPU.Seconds())
			}
			if verbose {
				b.Logf("round %d: %s %s (%d ok, p99 %.1f ms, from intended %.1f ms, dropped %d), %s %s (%d ok, p99 %.1f ms, from intended %.1f ms)",
					r, slotA, ra.CPU, ra.OK, ra.P99, ra.P99Intended, ra.Dropped, slotB, rb.CPU, rb.OK, rb.P99, rb.P99Intended)
			}
			p99A, p99IA = append(p99A, ra.P99), append(p99IA, ra.P99Intended)
			p99B, p99IB = append(p99B, rb.P99), append(p99IB, rb.P99Intended)
			a.CPU, a.OK, a.Late, a.Dropped = a.CPU+ra.CPU, a.OK+ra.OK, a.Late+ra.Late, a.Dropped+ra.Dropped
			v.CPU, v.OK = v.CPU+rb.CPU, v.OK+rb.OK
		}
	}
	total := du.Seconds() * float64(b.N)
	want := float64(benchRate) * total
	b.ReportMetric(float64(a.OK)/want, slotA+"-achieved/target")
	b.ReportMetric(100*a.CPU.Seconds()/total, slotA+"-cpu-%")
	b.ReportMetric(median(p99A), slotA+"-p99-ms")
	b.ReportMetric(slices.Max(p99A), slotA+"-p99-max-ms")
	b.ReportMetric(median(p99IA), slotA+"-p99-intended-ms")
	if slotA == engineCbprobe {
		b.ReportMetric(float64(a.Late)/float64(b.N), "cbprobe-late")
		b.ReportMetric(float64(a.Dropped)/float64(b.N), "cbprobe-dropped")
	}
	if slotB != "" {
		name := slotB
		if slotA == slotB {
			name += "2" // the aa calibration: the second vegeta slot
		}
		b.ReportMetric(float64(v.OK)/want, name+"-achieved/target")
		b.ReportMetric(100*v.CPU.Seconds()/total, name+"-cpu-%")
		b.ReportMetric(median(p99B), name+"-p99-ms")
		b.ReportMetric(slices.Max(p99B), name+"-p99-max-ms")
		b.ReportMetric(median(p99IB), name+"-p99-intended-ms")
		b.ReportMetric(a.CPU.Seconds()/v.CPU.Seconds(), "cpu-ratio")
		b.ReportMetric(median(ratios), "cpu-ratio-median")
	}
}

// median is the middle value of xs (the mean of the two middle ones for an
// even count); xs is sorted in place.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	slices.Sort(xs)
	m := len(xs) / 2
	if len(xs)%2 == 1 {
		return xs[m]
	}
	return (xs[m-1] + xs[m]) / 2
}

// BenchmarkRequestOverhead measures cbprobe's own work per open-model request,
// without HTTP: the pacer releasing a slot, the targeter building the
// request, and the result handling (matching, StepResult, Result, emit),
// for a one-step GET flow with no templates. Its ns/op and allocs/op are
// what cbprobe adds to each of vegeta's hits in BenchmarkAttackCPU.
func BenchmarkRequestOverhead(b *testing.B) {
	flow, err := SingleRequestFlow(http.MethodGet, "/")
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		emit func(*csvSink) func(Result)
	}{
		{"count", func(s *csvSink) func(Result) {
			return func(r Result) {
				if r.Status == 200 {
					s.ok++
				}
			}
		}},
		{"csv", func(s *csvSink) func(Result) { return s.write }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			sink := newCSVSink()
			e, err := newEngine(Config{Target: "http://127.0.0.1:1", Flow: flow, Phases: []Phase{{Name: "bench", Rate: MaxRate, Duration: time.Hour}}}, tc.emit(sink))
			if err != nil {
				b.Fatal(err)
			}
			// Every slot is due in the past (start an hour ago, 1e9/s) and
			// within dropAfter, so Pace releases one slot per call at once.
			start := time.Now().Add(-time.Hour)
			sc := &schedule{start: start, end: start.Add(3 * time.Hour), rate: 1e9, planned: math.MaxInt32,
				dropAfter: 2 * time.Hour, stopped: &e.stopped, mu: &sync.Mutex{}}
			tr := e.targeter(0, "bench", &phaseStats{}, sc)
			body := []byte("ok")
			ctx := context.Background()
			for b.Loop() {
				sc.Pace(0, 0)
				var t vegeta.Target
				if err := tr(&t); err != nil {
					b.Fatal(err)
				}
				now := time.Now()
				e.handle(ctx, &vegeta.Result{URL: t.URL, Method: t.Method, Code: 200, Body: body, Timestamp: now, Latency: time.Microsecond})
			}
			sink.w.Flush()
			if sink.ok != b.N {
				b.Fatalf("%d results answered 200, want %d", sink.ok, b.N)
			}
		})
	}
}
