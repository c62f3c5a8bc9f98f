package attack

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// benchServerEnv makes the test binary act as the benchmark's target: a
// zero-latency handler in its own process, so getrusage(RUSAGE_SELF) in the
// benchmark counts the load generator only.
const benchServerEnv = "CBPROBE_ATTACK_BENCH_SERVER"

func TestMain(m *testing.M) {
	if os.Getenv(benchServerEnv) == "1" {
		serveBench()
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
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
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

// BenchmarkAttackCPU runs the same open-model attack (5,000 GET/s against a
// zero-latency handler in another process) with plain vegeta (ConstantPacer,
// default Attacker, a consumer counting results) and with cbprobe's Run (a
// one-step flow, an emit counting results), in one process. The machine is
// shared, so the attack time is cut into rounds of at most 2 s that alternate
// which engine goes first; load that comes and goes then hits both alike.
// It reports each achieved rate relative to the target and cbprobe's CPU time
// (getrusage user+sys) relative to vegeta's. CBPROBE_BENCH_DURATION sets each
// engine's total attack time (default 3s).
func BenchmarkAttackCPU(b *testing.B) {
	const rate = 5000
	du := benchDuration(b)
	rounds := max(1, int((du+2*time.Second-1)/(2*time.Second)))
	round := du / time.Duration(rounds)
	target := startBenchServer(b)
	flow, err := SingleRequestFlow(http.MethodGet, "/")
	if err != nil {
		b.Fatal(err)
	}
	var vegCPU, ourCPU time.Duration
	var vegSent, ourSent, ourLate, ourDropped int
	// Each round gives each engine a fresh client with vegeta's transport
	// settings and closes its idle connections afterwards, so neither runs
	// next to the other's leftover connections.
	plain := func() {
		client := newClient()
		defer client.CloseIdleConnections()
		atk := vegeta.NewAttacker(vegeta.Client(client), vegeta.Timeout(DefaultTimeout))
		tr := vegeta.NewStaticTargeter(vegeta.Target{Method: http.MethodGet, URL: target + "/"})
		c0 := cpuTime(b)
		for r := range atk.Attack(tr, vegeta.ConstantPacer{Freq: rate, Per: time.Second}, round, "plain") {
			if r.Code == 200 {
				vegSent++
			}
		}
		vegCPU += cpuTime(b) - c0
	}
	ours := func() {
		client := newClient()
		defer client.CloseIdleConnections()
		ok := 0
		c0 := cpuTime(b)
		sum, err := Run(context.Background(), Config{Target: target, Flow: flow, Client: client, Phases: []Phase{{Name: "bench", Rate: rate, Duration: round}}},
			func(r Result) {
				if r.Status == 200 {
					ok++
				}
			})
		ourCPU += cpuTime(b) - c0
		if err != nil {
			b.Fatal(err)
		}
		ourSent += ok
		ourLate += sum.Phases[0].Late
		ourDropped += sum.Phases[0].Dropped
	}
	for i := 0; i < b.N; i++ {
		for r := 0; r < rounds; r++ {
			if r%2 == 0 {
				plain()
				ours()
			} else {
				ours()
				plain()
			}
		}
	}
	total := du.Seconds() * float64(b.N)
	want := float64(rate) * total
	b.ReportMetric(float64(ourSent)/want, "cbprobe-achieved/target")
	b.ReportMetric(float64(vegSent)/want, "vegeta-achieved/target")
	b.ReportMetric(ourCPU.Seconds()/vegCPU.Seconds(), "cpu-ratio")
	b.ReportMetric(100*ourCPU.Seconds()/total, "cbprobe-cpu-%")
	b.ReportMetric(100*vegCPU.Seconds()/total, "vegeta-cpu-%")
	b.ReportMetric(float64(ourLate)/float64(b.N), "cbprobe-late")
	b.ReportMetric(float64(ourDropped)/float64(b.N), "cbprobe-dropped")
}
