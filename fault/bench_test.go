package fault

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cbprobe/cbprobe/pgsim/behavior"
)

// The load in these benchmarks comes from vegeta's CLI in a separate process
// (scripts/bench-deps.sh installs it), so the load generator's CPU is not
// counted as the proxy's. Every comparison interleaves the arms (A B, B A, ...)
// so load from other processes on the shared machine hits all arms alike.

// vegetaBin finds the vegeta CLI: $VEGETA, PATH, then $(go env GOPATH)/bin.
func vegetaBin(b *testing.B) string {
	b.Helper()
	if p := os.Getenv("VEGETA"); p != "" {
		return p
	}
	if p, err := exec.LookPath("vegeta"); err == nil {
		return p
	}
	if out, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
		p := filepath.Join(strings.TrimSpace(string(out)), "bin", "vegeta")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	b.Fatal("vegeta CLI not found: run scripts/bench-deps.sh (go install github.com/tsenart/vegeta/v12@v12.13.0) or set VEGETA")
	return ""
}

// vegetaReport is the part of `vegeta report -type=json` used here.
type vegetaReport struct {
	Throughput float64 `json:"throughput"`
	Rate       float64 `json:"rate"`
	Success    float64 `json:"success"`
	Requests   int     `json:"requests"`
	Latencies  struct {
		P50  time.Duration `json:"50th"`
		P99  time.Duration `json:"99th"`
		Max  time.Duration `json:"max"`
		Mean time.Duration `json:"mean"`
	} `json:"latencies"`
}

// vegeta runs `vegeta attack` against target for d at rate (0 = as fast as
// `workers` keep-alive workers go) and returns its report.
func vegeta(b *testing.B, bin, target string, rate, workers int, d time.Duration) vegetaReport {
	b.Helper()
	args := []string{"attack", "-rate=" + strconv.Itoa(rate), "-duration=" + d.String(), "-workers=" + strconv.Itoa(workers),
		"-timeout=10s", "-keepalive=true"}
	if rate == 0 {
		args = append(args, "-max-workers="+strconv.Itoa(workers))
	}
	atk := exec.Command(bin, args...)
	atk.Stdin = strings.NewReader("GET " + target + "\n")
	var raw, errb bytes.Buffer
	atk.Stdout, atk.Stderr = &raw, &errb
	if err := atk.Run(); err != nil {
		b.Fatalf("vegeta attack: %v: %s", err, errb.String())
	}
	rep := exec.Command(bin, "report", "-type=json")
	rep.Stdin = &raw
	var repErr bytes.Buffer
	rep.Stderr = &repErr
	out, err := rep.Output()
	if err != nil {
		b.Fatalf("vegeta report on %d bytes of results: %v: %s", raw.Len(), err, repErr.String())
	}
	var r vegetaReport
	if err := json.Unmarshal(out, &r); err != nil {
		b.Fatalf("vegeta report: %v: %s", err, out)
	}
	if r.Success < 0.5 {
		b.Fatalf("vegeta against %s: success %.4f, want 200s: %s", target, r.Success, out)
	}
	if r.Success < 0.999 {
		b.Logf("vegeta against %s: success %.4f (client timeouts at 10 s: the machine could not keep up)", target, r.Success)
	}
	return r
}

// smallUpstream answers a 64-byte body at once.
func smallUpstream() *httptest.Server {
	body := []byte(strings.Repeat("x", 63) + "\n")
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("Content-Length", "64")
		_, _ = w.Write(body)
	}))
}

// proxies starts fault (no faults) and httputil.ReverseProxy with the same
// transport settings in front of up.
func proxies(b *testing.B, up string) (faultURL, rpURL string, stop func()) {
	b.Helper()
	s, err := New(Config{Upstream: up, Seed: 1, MaxAttempts: 1000, MaxKeys: 1000}, nil)
	if err != nil {
		b.Fatal(err)
	}
	fs := httptest.NewServer(s)
	u, _ := url.Parse(up)
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.Transport = NewTransport()
	rp.ErrorLog = log.New(io.Discard, "", 0)
	rs := httptest.NewServer(rp)
	return fs.URL, rs.URL, func() {
		fs.Close()
		rs.Close()
		_ = s.Close(context.Background())
	}
}

// BenchmarkThroughputVsReverseProxy: fault with no fault active against
// httputil.ReverseProxy with the same transport settings, both in front of the
// same 64-byte upstream, driven by vegeta (separate process, 32 keep-alive
// workers, as fast as they go) in 4 interleaved pairs of 2 s windows.
// Metrics: rp_req/s, fault_req/s and ratio (fault / ReverseProxy; target >= 0.8).
func BenchmarkThroughputVsReverseProxy(b *testing.B) {
	const (
		pairs   = 4
		window  = 2 * time.Second
		workers = 32
	)
	bin := vegetaBin(b)
	up := smallUpstream()
	defer up.Close()
	fURL, rURL, stop := proxies(b, up.URL)
	defer stop()
	vegeta(b, bin, fURL+"/w", 0, workers, 300*time.Millisecond) // warm up connections both ways
	vegeta(b, bin, rURL+"/w", 0, workers, 300*time.Millisecond)
	var fSum, rSum float64
	b.ResetTimer()
	for range b.N {
		for p := range pairs {
			if p%2 == 0 {
				rSum += vegeta(b, bin, rURL+"/t", 0, workers, window).Throughput
				fSum += vegeta(b, bin, fURL+"/t", 0, workers, window).Throughput
			} else {
				fSum += vegeta(b, bin, fURL+"/t", 0, workers, window).Throughput
				rSum += vegeta(b, bin, rURL+"/t", 0, workers, window).Throughput
			}
		}
	}
	b.StopTimer()
	n := float64(pairs * b.N)
	b.ReportMetric(rSum/n, "rp_req/s")
	b.ReportMetric(fSum/n, "fault_req/s")
	b.ReportMetric(fSum/rSum, "ratio")
}

// BenchmarkAddedLatencyAt1000: 1,000 req/s (vegeta, separate process, open
// loop) for 3 s to the upstream directly, through fault (no fault active) and
// through httputil.ReverseProxy, rotating the order each round. Metrics (ms):
// direct_p99_ms, fault_p99_ms, rp_p99_ms, fault_added_p99_ms (fault - direct;
// target <= 1 ms), rp_added_p99_ms, and fault_added_p50_ms. Each p99 is the
// median over the rounds, so one burst of load from another process does not
// decide the number alone.
func BenchmarkAddedLatencyAt1000(b *testing.B) {
	const (
		rounds = 3
		window = 3 * time.Second
		rate   = 1000
	)
	bin := vegetaBin(b)
	up := smallUpstream()
	defer up.Close()
	fURL, rURL, stop := proxies(b, up.URL)
	defer stop()
	for _, u := range []string{up.URL, fURL, rURL} {
		vegeta(b, bin, u+"/w", rate, 32, 500*time.Millisecond)
	}
	var d99, f99, r99, d50, f50 []float64
	ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
	b.ResetTimer()
	for range b.N {
		for i := range rounds {
			arms := []func(){
				func() {
					r := vegeta(b, bin, up.URL+"/l", rate, 32, window)
					d99 = append(d99, ms(r.Latencies.P99))
					d50 = append(d50, ms(r.Latencies.P50))
				},
				func() {
					r := vegeta(b, bin, fURL+"/l", rate, 32, window)
					f99 = append(f99, ms(r.Latencies.P99))
					f50 = append(f50, ms(r.Latencies.P50))
				},
				func() { r := vegeta(b, bin, rURL+"/l", rate, 32, window); r99 = append(r99, ms(r.Latencies.P99)) },
			}
			for j := range arms {
				arms[(i+j)%len(arms)]()
			}
		}
	}
	b.StopTimer()
	b.ReportMetric(median(d99), "direct_p99_ms")
	b.ReportMetric(median(f99), "fault_p99_ms")
	b.ReportMetric(median(r99), "rp_p99_ms")
	b.ReportMetric(median(f99)-median(d99), "fault_added_p99_ms")
	b.ReportMetric(median(r99)-median(d99), "rp_added_p99_ms")
	b.ReportMetric(median(f50)-median(d50), "fault_added_p50_ms")
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// BenchmarkInjectedLatencyAccuracy: 500 req/s (vegeta, separate process) for
// 2 s to fault in stub mode with a fixed 50 ms injected latency, and as many to
// a bare handler that time.Sleeps 50 ms (the machine's own baseline),
// interleaved over 3 rounds. Metrics (ms, client-seen latency - 50 ms):
// p50_over_ms, p99_over_ms, base_p99_over_ms, and p99_minus_base_ms (what
// fault adds to the accuracy of time.Sleep; pgsim's target is <= 2 ms).
func BenchmarkInjectedLatencyAccuracy(b *testing.B) {
	const (
		rounds   = 3
		window   = 2 * time.Second
		rate     = 500
		intended = 50 * time.Millisecond
	)
	bin := vegetaBin(b)
	st, err := ParseStub("bench", []byte("routes:\n  - path: /**\n    body: ok\n"))
	if err != nil {
		b.Fatal(err)
	}
	s, err := New(Config{Stub: st, Seed: 1, MaxAttempts: 1000, MaxKeys: 1000,
		Behavior: behaviorWith(func(bh *Behavior) { bh.Latency = behavior.Fixed{D: intended} })}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close(context.Background())
	fs := httptest.NewServer(s)
	defer fs.Close()
	base := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(intended)
		_, _ = io.WriteString(w, "ok")
	}))
	defer base.Close()
	vegeta(b, bin, fs.URL+"/w", rate, 64, 500*time.Millisecond)
	vegeta(b, bin, base.URL+"/w", rate, 64, 500*time.Millisecond)
	ms := func(d time.Duration) float64 { return float64(d-intended) / 1e6 }
	var p50, p99, b99 []float64
	b.ResetTimer()
	for range b.N {
		for i := range rounds {
			runF := func() {
				r := vegeta(b, bin, fs.URL+"/a", rate, 64, window)
				p50, p99 = append(p50, ms(r.Latencies.P50)), append(p99, ms(r.Latencies.P99))
			}
			runB := func() { b99 = append(b99, ms(vegeta(b, bin, base.URL+"/a", rate, 64, window).Latencies.P99)) }
			if i%2 == 0 {
				runB()
				runF()
			} else {
				runF()
				runB()
			}
		}
	}
	b.StopTimer()
	b.ReportMetric(median(p50), "p50_over_ms")
	b.ReportMetric(median(p99), "p99_over_ms")
	b.ReportMetric(median(b99), "base_p99_over_ms")
	b.ReportMetric(median(p99)-median(b99), "p99_minus_base_ms")
}

// pairedLatencies sends rate req/s to each of urls for d with one vegeta CLI
// attack whose targets alternate request by request (vegeta's targeter is
// round-robin), so every arm sees the same moments of the machine: a stall of
// the load generator, the upstream or the scheduler hits all arms alike
// instead of deciding one arm's window. It returns each URL's latencies
// (successful requests only), the share of requests that failed, and for two
// URLs the per-pair differences: request 2k+1 (the second URL) minus request
// 2k (the first), sent 1/(2·rate) apart, both answered 200.
func pairedLatencies(b *testing.B, bin string, urls []string, rate int, d time.Duration) ([][]time.Duration, float64, []time.Duration) {
	b.Helper()
	var targets strings.Builder
	for _, u := range urls {
		targets.WriteString("GET " + u + "\n\n")
	}
	atk := exec.Command(bin, "attack", "-rate="+strconv.Itoa(rate*len(urls)), "-duration="+d.String(), "-workers=64",
		"-timeout=10s", "-keepalive=true")
	atk.Stdin = strings.NewReader(targets.String())
	var raw, errb bytes.Buffer
	atk.Stdout, atk.Stderr = &raw, &errb
	if err := atk.Run(); err != nil {
		b.Fatalf("vegeta attack: %v: %s", err, errb.String())
	}
	enc := exec.Command(bin, "encode", "-to=csv")
	enc.Stdin = &raw
	out, err := enc.Output()
	if err != nil {
		b.Fatalf("vegeta encode: %v", err)
	}
	idx := map[string]int{}
	for i, u := range urls {
		idx[u] = i
	}
	lat := make([][]time.Duration, len(urls))
	bySeq := map[int64]time.Duration{}
	var n, failed int
	recs, err := csv.NewReader(bytes.NewReader(out)).ReadAll()
	if err != nil {
		b.Fatalf("vegeta encode: %v", err)
	}
	for _, f := range recs {
		if len(f) < 11 {
			b.Fatalf("vegeta encode: record %q", f)
		}
		n++
		i, ok := idx[f[10]]
		if !ok {
			b.Fatalf("vegeta result for unknown URL %q", f[10])
		}
		ns, err := strconv.ParseInt(f[2], 10, 64)
		if f[1] != "200" || err != nil {
			failed++
			continue
		}
		lat[i] = append(lat[i], time.Duration(ns))
		if seq, err := strconv.ParseInt(f[8], 10, 64); err == nil {
			bySeq[seq] = time.Duration(ns)
		}
	}
	var diffs []time.Duration
	if len(urls) == 2 {
		for seq, first := range bySeq {
			if seq%2 != 0 {
				continue
			}
			if second, ok := bySeq[seq+1]; ok {
				diffs = append(diffs, second-first)
			}
		}
	}
	return lat, float64(failed) / float64(max(n, 1)), diffs
}

// quantileMs is the q-quantile (nearest rank) of xs in ms; xs is sorted in place.
func quantileMs(xs []time.Duration, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	return float64(xs[max(int(q*float64(len(xs))+0.999999)-1, 0)]) / 1e6
}

// BenchmarkAddedLatencyPaired: 1,000 req/s to the upstream directly and
// 1,000 req/s through fault (no fault active) in one vegeta CLI attack
// (separate process) whose requests alternate between the two, for 3 s; then
// the same with httputil.ReverseProxy in fault's place; 3 rounds. Unlike
// AddedLatencyAt1000, where each arm has its own 3 s window and the added p99
// is a difference between windows seconds apart (on 2 shared cores the direct
// arm's own p99 moved by 2-5x between windows), here the direct and proxied
// requests share every moment, so the difference is the proxy's. (All three
// in one attack, 3,000 req/s, saturated this machine: p99 of seconds.)
// Metrics (ms, range over rounds as _min/_max): fault_added_p99_ms (fault p99
// - direct p99, same window; target <= 1 ms), rp_added_p99_ms,
// fault_added_p50_ms, direct_p99_ms, fault_pair_p99_ms and rp_pair_p99_ms
// (the p99 of the per-pair difference: each proxied request minus the direct
// request sent 0.5 ms before it, what the proxy added to 99 % of requests), and
// failed (share not answered 200).
func BenchmarkAddedLatencyPaired(b *testing.B) {
	const (
		rounds = 3
		window = 3 * time.Second
		rate   = 1000
	)
	bin := vegetaBin(b)
	up := smallUpstream()
	defer up.Close()
	fURL, rURL, stop := proxies(b, up.URL)
	defer stop()
	withFault := []string{up.URL + "/p", fURL + "/p"}
	withRP := []string{up.URL + "/p", rURL + "/p"}
	pairedLatencies(b, bin, withFault, rate, 500*time.Millisecond) // warm up connections
	pairedLatencies(b, bin, withRP, rate, 500*time.Millisecond)
	var fAdd, rAdd, fAdd50, d99, fPair, rPair []float64
	var failed float64
	b.ResetTimer()
	for i := range b.N * rounds {
		runF := func() {
			lat, f, diffs := pairedLatencies(b, bin, withFault, rate, window)
			failed = max(failed, f)
			d := quantileMs(lat[0], 0.99)
			d99 = append(d99, d)
			fAdd = append(fAdd, quantileMs(lat[1], 0.99)-d)
			fPair = append(fPair, quantileMs(diffs, 0.99))
			fAdd50 = append(fAdd50, quantileMs(lat[1], 0.5)-quantileMs(lat[0], 0.5))
		}
		runR := func() {
			lat, f, diffs := pairedLatencies(b, bin, withRP, rate, window)
			failed = max(failed, f)
			rAdd = append(rAdd, quantileMs(lat[1], 0.99)-quantileMs(lat[0], 0.99))
			rPair = append(rPair, quantileMs(diffs, 0.99))
		}
		if i%2 == 0 {
			runF()
			runR()
		} else {
			runR()
			runF()
		}
	}
	b.StopTimer()
	for _, m := range []struct {
		name string
		v    []float64
	}{{"fault_added_p99_ms", fAdd}, {"rp_added_p99_ms", rAdd}, {"fault_added_p50_ms", fAdd50}, {"direct_p99_ms", d99},
		{"fault_pair_p99_ms", fPair}, {"rp_pair_p99_ms", rPair}} {
		b.ReportMetric(slices.Min(m.v), m.name+"_min")
		b.ReportMetric(slices.Max(m.v), m.name+"_max")
	}
	b.ReportMetric(failed, "failed")
}
