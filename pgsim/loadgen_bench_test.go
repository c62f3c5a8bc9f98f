package pgsim

// Benchmarks that drive a server in a child process with a load generator in
// another process (wrk for closed-loop throughput, vegeta's CLI for fixed
// rates), so neither the load generator's CPU nor the callback receiver's is
// counted as the server's. scripts/bench-deps.sh installs both.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// Child-process protocol: the test binary started with benchArmEnv set serves
// that arm on a free loopback port, prints its base URL, then answers each
// line on stdin with one JSON childStats line, and exits when stdin closes.
const (
	benchArmEnv = "CBPROBE_PGSIM_BENCH_ARM"
	// Arms: pgsim as shipped (callbacks on); a bare net/http handler with no
	// callbacks; a bare handler that posts the same callback per payment after
	// the same 1–5 s settlement, on a pooled client.
	armPgsim   = "pgsim"
	armBare    = "bare"
	armBareCB  = "bare-callback"
	onTimeSlop = time.Second // a callback is on time within settlement + 1 s
)

func TestMain(m *testing.M) {
	if arm := os.Getenv(benchArmEnv); arm != "" {
		if err := serveArm(arm); err != nil {
			fmt.Fprintln(os.Stderr, "pgsim bench child:", err)
		}
		return
	}
	m.Run() // since Go 1.15 the testing package exits with m.Run's code
}

// childStats is what a child reports: its CPU time so far and its payments
// and callbacks (callbacks all zero for the bare arm).
type childStats struct {
	CPUNs     int64   `json:"cpuNs"`     // user + system CPU time of the child, ns
	Accepted  int64   `json:"accepted"`  // payments answered 200
	Delivered int64   `json:"delivered"` // callbacks answered 2xx
	Failed    int64   `json:"failed"`    // callbacks failed or dropped
	Dropped   int64   `json:"dropped"`   // callbacks dropped (backlog full)
	LagMaxMs  float64 `json:"lagMaxMs"`  // longest settlement-to-delivery time, ms
	Workers   int     `json:"workers"`   // pgsim's callback workers started
}

func cpuNow() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return -1
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// serveArm is the child's main.
func serveArm(arm string) error {
	var (
		url   string
		stats func() childStats
		stop  func()
	)
	switch arm {
	case armPgsim:
		s, err := New(Config{Behavior: quiet(), Seed: 1, CallbackPrefix: "http://127.0.0.1"}, nil)
		if err != nil {
			return err
		}
		if err := s.Start(context.Background(), "127.0.0.1:0"); err != nil {
			return err
		}
		url, stop = s.URL(), func() { _ = s.Close(context.Background()) }
		stats = func() childStats {
			st := s.Stats()
			return childStats{Accepted: st.Requests[EndpointCreate][OutcomeSuccess], Delivered: st.CallbacksSent,
				Failed: st.CallbacksFailed, Dropped: st.CallbacksDropped, LagMaxMs: st.CallbackLagMaxMs, Workers: st.CallbackWorkers}
		}
	case armBare, armBareCB:
		b := newBareArm(arm == armBareCB)
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		srv := &http.Server{Handler: b}
		go func() { _ = srv.Serve(ln) }()
		url, stop, stats = "http://"+ln.Addr().String(), func() { _ = srv.Close() }, b.stats
	default:
		return fmt.Errorf("unknown arm %q", arm)
	}
	defer stop()
	fmt.Println(url)
	in := bufio.NewScanner(os.Stdin)
	enc := json.NewEncoder(os.Stdout)
	for in.Scan() {
		st := stats()
		st.CPUNs = cpuNow()
		if err := enc.Encode(st); err != nil {
			return err
		}
	}
	return nil
}

// bareArm is the baseline handler: header check, json.Decoder into a struct,
// json.Encoder of the success envelope; with callbacks it also posts the
// settled transaction to callbackUrl after 1–5 s (same draw as pgsim) from the
// timer's goroutine on one pooled client.
type bareArm struct {
	callbacks bool
	client    *http.Client
	n         atomic.Uint64
	accepted  atomic.Int64
	delivered atomic.Int64
	failed    atomic.Int64
	mu        sync.Mutex
	rng       *rand.Rand
	lagMax    time.Duration
}

func newBareArm(callbacks bool) *bareArm {
	return &bareArm{
		callbacks: callbacks,
		client:    &http.Client{Timeout: DefaultCallbackTimeout, Transport: bareTransport()},
		rng:       rand.New(rand.NewPCG(1, 2)),
	}
}

// bareTransport is the baseline's pooled client: pgsim's connection settings
// and at most as many connections as pgsim has workers, so callbacks beyond
// them wait for a pooled connection instead of dialling one each (unbounded,
// the baseline lost most callbacks at wrk's rate: thousands of dials at once,
// then 5 s timeouts).
func bareTransport() *http.Transport {
	tr := newCallbackTransport(DefaultCallbackWorkers)
	tr.MaxConnsPerHost = DefaultCallbackWorkers
	return tr
}

func (a *bareArm) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	type req struct {
		OrderID     string `json:"orderId"`
		CardType    string `json:"cardType"`
		CardNo      string `json:"cardNo"`
		Amount      int64  `json:"amount"`
		CallbackURL string `json:"callbackUrl"`
	}
	type data struct {
		TransactionKey string `json:"transactionKey"`
		Status         string `json:"status"`
	}
	type env struct {
		Meta struct {
			Result string `json:"result"`
		} `json:"meta"`
		Data data `json:"data"`
	}
	if r.Header.Get("X-USER-ID") == "" {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	var p req
	if err := json.NewDecoder(r.Body).Decode(&p); err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	var e env
	e.Meta.Result = "SUCCESS"
	e.Data = data{TransactionKey: fmt.Sprintf("20250816:TR:%06x", a.n.Add(1)&0xffffff), Status: "PENDING"}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(e)
	a.accepted.Add(1)
	if !a.callbacks {
		return
	}
	a.mu.Lock()
	delay := settleMin + time.Duration(a.rng.Int64N(int64((settleMax-settleMin)/time.Millisecond)+1))*time.Millisecond
	a.mu.Unlock()
	due := time.Now().Add(delay)
	body := callbackBody{TransactionKey: e.Data.TransactionKey, OrderID: p.OrderID, CardType: p.CardType,
		CardNo: p.CardNo, Amount: p.Amount, Status: StatusSuccess, Reason: ReasonOK}
	time.AfterFunc(delay, func() {
		data, _ := json.Marshal(body)
		resp, err := a.client.Post(p.CallbackURL, "application/json", strings.NewReader(string(data)))
		if err != nil {
			a.failed.Add(1)
			return
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		lag := time.Since(due)
		a.delivered.Add(1)
		a.mu.Lock()
		a.lagMax = max(a.lagMax, lag)
		a.mu.Unlock()
	})
}

func (a *bareArm) stats() childStats {
	a.mu.Lock()
	lag := a.lagMax
	a.mu.Unlock()
	return childStats{Accepted: a.accepted.Load(), Delivered: a.delivered.Load(), Failed: a.failed.Load(),
		LagMaxMs: float64(lag) / float64(time.Millisecond)}
}

// child is a running arm.
type child struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
	url string
}

func startChild(b *testing.B, arm string) *child {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), benchArmEnv+"="+arm)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatalf("start %s child: %v", arm, err)
	}
	c := &child{cmd: cmd, in: in, out: bufio.NewReader(out)}
	line, err := c.out.ReadString('\n')
	if err != nil {
		c.stop()
		b.Fatalf("%s child: %v", arm, err)
	}
	c.url = strings.TrimSpace(line)
	return c
}

func (c *child) stats(b *testing.B) childStats {
	b.Helper()
	if _, err := io.WriteString(c.in, "stats\n"); err != nil {
		b.Fatalf("ask child for stats: %v", err)
	}
	line, err := c.out.ReadString('\n')
	if err != nil {
		b.Fatalf("read child stats: %v", err)
	}
	var st childStats
	if err := json.Unmarshal([]byte(line), &st); err != nil {
		b.Fatalf("decode child stats %q: %v", line, err)
	}
	return st
}

func (c *child) stop() {
	_ = c.in.Close()
	_ = c.cmd.Wait()
}

// drain waits until every accepted payment's callback was delivered or failed,
// at most settleMax + slack after the load ended, and returns the last stats.
func (c *child) drain(b *testing.B, slack time.Duration) childStats {
	deadline := time.Now().Add(settleMax + slack)
	for {
		st := c.stats(b)
		if st.Delivered+st.Failed >= st.Accepted || time.Now().After(deadline) {
			return st
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// receiver is the callback receiver, in the benchmark's process: it answers
// every callback 200 at once.
func receiver(b *testing.B) (url string, got *atomic.Int64) {
	got = new(atomic.Int64)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		got.Add(1)
	}))
	b.Cleanup(ts.Close)
	return ts.URL + "/cb", got
}

func paymentBody(callbackURL string) string {
	return `{"orderId":"1351039135","cardType":"SAMSUNG","cardNo":"1234-5678-9814-1451","amount":5000,"callbackUrl":"` + callbackURL + `"}`
}

func lookTool(b *testing.B, name string) string {
	b.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	if gp, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
		p := filepath.Join(strings.TrimSpace(string(gp)), "bin", name)
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	b.Fatalf("%s not found: run scripts/bench-deps.sh", name)
	return ""
}

var (
	wrkTotalRe  = regexp.MustCompile(`(\d+) requests in ([0-9.]+)(ms|s|m)`)
	wrkNon2xxRe = regexp.MustCompile(`Non-2xx or 3xx responses: (\d+)`)
)

// runWrk runs wrk -t1 -c16 against url for d with the payment body, and
// returns the requests completed and the non-2xx count.
func runWrk(b *testing.B, wrk, url, body string, d time.Duration) (n, non2xx int64) {
	b.Helper()
	script := filepath.Join(b.TempDir(), "post.lua")
	lua := fmt.Sprintf("wrk.method = \"POST\"\nwrk.body = %q\nwrk.headers[\"Content-Type\"] = \"application/json\"\nwrk.headers[\"X-USER-ID\"] = \"bench\"\n", body)
	if err := os.WriteFile(script, []byte(lua), 0o644); err != nil {
		b.Fatal(err)
	}
	out, err := exec.Command(wrk, "-t1", "-c16", "-d"+strconv.Itoa(int(d.Seconds()))+"s", "-s", script, url+"/api/v1/payments").CombinedOutput()
	if err != nil {
		b.Fatalf("wrk: %v\n%s", err, out)
	}
	m := wrkTotalRe.FindSubmatch(out)
	if m == nil {
		b.Fatalf("wrk output not understood:\n%s", out)
	}
	n, _ = strconv.ParseInt(string(m[1]), 10, 64)
	if m := wrkNon2xxRe.FindSubmatch(out); m != nil {
		non2xx, _ = strconv.ParseInt(string(m[1]), 10, 64)
	}
	return n, non2xx
}

// armRun is one arm's measurement.
type armRun struct {
	reqPerS   float64
	cpuPerReq float64 // µs of the server process's CPU per request, callbacks included
	st        childStats
	non2xx    int64
}

// onTime: every accepted payment's callback delivered, none late by more than 1 s.
func (r armRun) onTime() bool {
	return r.st.Failed == 0 && r.st.Delivered == r.st.Accepted && r.st.LagMaxMs <= float64(onTimeSlop/time.Millisecond)
}

// benchRounds is how many rounds a benchmark runs: CBPROBE_PGSIM_ROUNDS
// (default 3) per iteration. Run with -benchtime 1x: with Nx the testing
// package first runs one iteration and then N more.
func benchRounds(b *testing.B) int {
	rounds := 3
	if s := os.Getenv("CBPROBE_PGSIM_ROUNDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			b.Fatalf("CBPROBE_PGSIM_ROUNDS=%q: want a positive integer", s)
		}
		rounds = n
	}
	return b.N * rounds
}

// BenchmarkWrkVsBare drives each arm in its own process with wrk -t1 -c16 for
// 5 s (closed loop, the most the server answers), rotating the arms' order
// round by round (benchRounds: 3 by default, -benchtime 1x): pgsim as shipped
// (zero latency and errors, callbacks on to a live receiver in this process),
// a bare net/http handler with no callbacks, and a bare handler posting the
// same callback after the same 1–5 s on a pooled client. After the load it
// waits for every callback. Per arm: req/s, server CPU per request in µs
// (getrusage of the child over the load and the callbacks after it), the
// longest callback lag and the callbacks not delivered. Ratios are pgsim's
// req/s over each baseline's in the same round; _min and _max over rounds.
func BenchmarkWrkVsBare(b *testing.B) {
	wrk := lookTool(b, "wrk")
	const d = 5 * time.Second
	cbURL, _ := receiver(b)
	body := paymentBody(cbURL)
	arms := []string{armPgsim, armBare, armBareCB}
	runs := map[string][]armRun{}
	b.ResetTimer()
	for round := range benchRounds(b) {
		for i := range arms {
			arm := arms[(i+round)%len(arms)]
			c := startChild(b, arm)
			before := c.stats(b)
			n, non2xx := runWrk(b, wrk, c.url, body, d)
			after := c.drain(b, 5*time.Second)
			c.stop()
			r := armRun{reqPerS: float64(n) / d.Seconds(), cpuPerReq: float64(after.CPUNs-before.CPUNs) / float64(n) / 1e3, st: after, non2xx: non2xx}
			runs[arm] = append(runs[arm], r)
			fmt.Fprintf(os.Stderr, "round %d %-13s %8.0f req/s  cpu %6.1f µs/req  accepted %d delivered %d failed %d dropped %d lag max %.0f ms workers %d non-2xx %d\n",
				round+1, arm, r.reqPerS, r.cpuPerReq, after.Accepted, after.Delivered, after.Failed, after.Dropped, after.LagMaxMs, after.Workers, non2xx)
		}
	}
	b.StopTimer()
	report := func(arm, name string) {
		var rps, cpu, lag, undelivered float64
		for _, r := range runs[arm] {
			rps += r.reqPerS
			cpu += r.cpuPerReq
			lag = max(lag, r.st.LagMaxMs)
			undelivered += float64(r.st.Accepted - r.st.Delivered)
		}
		k := float64(len(runs[arm]))
		b.ReportMetric(rps/k, name+"_req/s")
		b.ReportMetric(cpu/k, name+"_cpu_us/req")
		if arm != armBare {
			b.ReportMetric(lag, name+"_lag_max_ms")
			b.ReportMetric(undelivered, name+"_undelivered")
		}
	}
	report(armPgsim, "pgsim")
	report(armBare, "bare")
	report(armBareCB, "barecb")
	ratio := func(base, name string) {
		lo, hi := math.Inf(1), math.Inf(-1)
		for i, r := range runs[armPgsim] {
			x := r.reqPerS / runs[base][i].reqPerS
			lo, hi = min(lo, x), max(hi, x)
		}
		b.ReportMetric(lo, "ratio_vs_"+name+"_min")
		b.ReportMetric(hi, "ratio_vs_"+name+"_max")
	}
	ratio(armBare, "bare")
	ratio(armBareCB, "barecb")
}

// vegetaAt sends rate payments/s to url for d with vegeta's CLI (open model
// up to 256 workers: unbounded, vegeta collapses once the machine cannot keep
// up, sending a tenth of the rate), discarding its results: the server's
// counts are what is measured, and a rate vegeta could not send shows as
// achieved < 1.
func vegetaAt(b *testing.B, vegeta, url, body string, rate int, d time.Duration) {
	b.Helper()
	dir := b.TempDir()
	bodyFile := filepath.Join(dir, "body.json")
	if err := os.WriteFile(bodyFile, []byte(body), 0o644); err != nil {
		b.Fatal(err)
	}
	targets := fmt.Sprintf("POST %s/api/v1/payments\nX-USER-ID: bench\nContent-Type: application/json\n@%s\n", url, bodyFile)
	cmd := exec.Command(vegeta, "attack", "-rate="+strconv.Itoa(rate)+"/s", "-duration="+d.String(), "-timeout=5s", "-workers=64", "-max-workers=256", "-output=/dev/null")
	cmd.Stdin = strings.NewReader(targets)
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("vegeta attack: %v\n%s", err, out)
	}
}

// BenchmarkCallbackRate finds the callback rate pgsim sustains on time: for
// each payment rate in CBPROBE_PGSIM_RATES (default 1000,2000,3000,4000 per
// second) it sends that rate with vegeta's CLI for CBPROBE_PGSIM_HOLD (default
// 12 s: callbacks run at the full rate from 5 s on) to pgsim as shipped and,
// interleaved, to the bare handler posting the same callbacks, each in its own
// process, then waits for every callback. A rate is sustained when every
// accepted payment (at least 99 % of those sent) got its callback within its
// settlement + 1 s. Per rate and arm: achieved/target, CPU per payment in µs,
// longest lag in ms, callbacks not delivered; sustained_per_s is the highest
// rate pgsim sustained in every round (benchRounds: 3 by default,
// -benchtime 1x).
func BenchmarkCallbackRate(b *testing.B) {
	vegeta := lookTool(b, "vegeta")
	rates := []int{1000, 2000, 3000, 4000}
	if s := os.Getenv("CBPROBE_PGSIM_RATES"); s != "" {
		rates = rates[:0]
		for f := range strings.SplitSeq(s, ",") {
			r, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || r <= 0 {
				b.Fatalf("CBPROBE_PGSIM_RATES: %q: want positive integers", s)
			}
			rates = append(rates, r)
		}
	}
	hold := 12 * time.Second
	if s := os.Getenv("CBPROBE_PGSIM_HOLD"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			b.Fatalf("CBPROBE_PGSIM_HOLD: %q: want a duration", s)
		}
		hold = d
	}
	cbURL, _ := receiver(b)
	body := paymentBody(cbURL)
	arms := []string{armPgsim, armBareCB}
	sustained := map[int]bool{}
	for _, r := range rates {
		sustained[r] = true
	}
	type agg struct{ achieved, cpu, lag, undelivered []float64 }
	res := map[string]*agg{}
	b.ResetTimer()
	for round := range benchRounds(b) {
		for _, rate := range rates {
			for i := range arms {
				arm := arms[(i+round)%len(arms)]
				c := startChild(b, arm)
				before := c.stats(b)
				vegetaAt(b, vegeta, c.url, body, rate, hold)
				after := c.drain(b, 5*time.Second)
				c.stop()
				want := float64(rate) * hold.Seconds()
				r := armRun{cpuPerReq: float64(after.CPUNs-before.CPUNs) / float64(max(after.Accepted, 1)) / 1e3, st: after}
				ok := r.onTime() && float64(after.Accepted) >= 0.99*want
				if arm == armPgsim && !ok {
					sustained[rate] = false
				}
				key := fmt.Sprintf("%s@%d", arm, rate)
				if res[key] == nil {
					res[key] = &agg{}
				}
				a := res[key]
				a.achieved = append(a.achieved, float64(after.Accepted)/want)
				a.cpu = append(a.cpu, r.cpuPerReq)
				a.lag = append(a.lag, after.LagMaxMs)
				a.undelivered = append(a.undelivered, float64(after.Accepted-after.Delivered))
				fmt.Fprintf(os.Stderr, "round %d %6d/s %-13s achieved %.4f  cpu %6.1f µs/payment  delivered %d/%d failed %d dropped %d lag max %.0f ms workers %d on time %v\n",
					round+1, rate, arm, float64(after.Accepted)/want, r.cpuPerReq, after.Delivered, after.Accepted, after.Failed, after.Dropped, after.LagMaxMs, after.Workers, ok)
			}
		}
	}
	b.StopTimer()
	best := 0
	for _, r := range rates {
		if sustained[r] && r > best {
			best = r
		}
	}
	b.ReportMetric(float64(best), "sustained_per_s")
	for key, a := range res {
		name := strings.ReplaceAll(strings.ReplaceAll(key, armBareCB, "barecb"), "@", "_")
		b.ReportMetric(minOf(a.achieved), name+"_achieved_min")
		b.ReportMetric(maxOf(a.cpu), name+"_cpu_us_max")
		b.ReportMetric(minOf(a.cpu), name+"_cpu_us_min")
		b.ReportMetric(maxOf(a.lag), name+"_lag_max_ms")
		b.ReportMetric(maxOf(a.undelivered), name+"_undelivered_max")
	}
}

func minOf(xs []float64) float64 {
	m := math.Inf(1)
	for _, x := range xs {
		m = min(m, x)
	}
	return m
}

func maxOf(xs []float64) float64 {
	m := math.Inf(-1)
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}
