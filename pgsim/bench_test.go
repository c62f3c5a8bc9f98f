package pgsim

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cbprobe/cbprobe/pgsim/behavior"
)

// bareHandler is the baseline: a plain net/http handler that checks the
// header, decodes the same JSON and writes the same success envelope.
func bareHandler() http.Handler {
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
	var n atomic.Uint64
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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
		e.Data = data{TransactionKey: fmt.Sprintf("20250816:TR:%06x", n.Add(1)&0xffffff), Status: "PENDING"}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(e)
	})
}

// hammer sends POSTs from `workers` goroutines to url for d and returns the
// number of 200 answers.
func hammer(b *testing.B, client *http.Client, url string, workers int, d time.Duration) int64 {
	var ok atomic.Int64
	var wg sync.WaitGroup
	stop := time.Now().Add(d)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; time.Now().Before(stop); i++ {
				body := strings.Replace(validBody, "1351039135", fmt.Sprintf("bench-%02d-%08d", w, i), 1)
				req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
				req.Header.Set("X-USER-ID", "bench")
				req.Header.Set("Content-Type", "application/json")
				resp, err := client.Do(req)
				if err != nil {
					b.Error(err)
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode == 200 {
					ok.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	return ok.Load()
}

// BenchmarkThroughputVsBare serves payments with zero latency and zero errors
// and compares pgsim's request rate with a bare net/http handler doing the same
// JSON work, in one process. Each iteration runs 5 pairs of 200 ms windows,
// alternating which server goes first, so load from other processes hits both
// alike. Metrics: bare_req/s, pgsim_req/s and ratio (pgsim / bare; target >= 0.8).
func BenchmarkThroughputVsBare(b *testing.B) {
	const (
		workers = 16
		pairs   = 5
		window  = 200 * time.Millisecond
	)
	bare := httptest.NewServer(bareHandler())
	defer bare.Close()
	// Speed 0.001 pushes settlement 1000–5000 s away: the timers are paid for,
	// callbacks never fire during the measurement.
	s, err := New(Config{Behavior: quiet(), Seed: 1, Speed: 0.001}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close(context.Background())
	sim := httptest.NewServer(s.Handler())
	defer sim.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: workers, MaxIdleConns: 4 * workers}}
	defer client.CloseIdleConnections()
	bareURL, simURL := bare.URL+"/api/v1/payments", sim.URL+"/api/v1/payments"
	hammer(b, client, bareURL, workers, 100*time.Millisecond) // warm up connections
	hammer(b, client, simURL, workers, 100*time.Millisecond)
	var nBare, nSim int64
	b.ResetTimer()
	for range b.N {
		for p := range pairs {
			if p%2 == 0 {
				nBare += hammer(b, client, bareURL, workers, window)
				nSim += hammer(b, client, simURL, workers, window)
			} else {
				nSim += hammer(b, client, simURL, workers, window)
				nBare += hammer(b, client, bareURL, workers, window)
			}
		}
	}
	b.StopTimer()
	secs := window.Seconds() * pairs * float64(b.N)
	b.ReportMetric(float64(nBare)/secs, "bare_req/s")
	b.ReportMetric(float64(nSim)/secs, "pgsim_req/s")
	b.ReportMetric(float64(nSim)/float64(nBare), "ratio")
}

// openLoop sends rate req/s to url for d (open loop: a request is sent at its
// due time whatever the others do) and returns each request's latency.
func openLoop(b *testing.B, client *http.Client, url, body string, rate int, d time.Duration) ([]time.Duration, float64) {
	n := int(float64(rate) * d.Seconds())
	lat := make([]time.Duration, n)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range n {
		time.Sleep(time.Until(start.Add(time.Duration(i) * time.Second / time.Duration(rate))))
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
			req.Header.Set("X-USER-ID", "bench")
			t0 := time.Now()
			resp, err := client.Do(req)
			if err != nil {
				lat[i] = -1
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			lat[i] = time.Since(t0)
		}()
	}
	sent := time.Since(start).Seconds()
	wg.Wait()
	for _, l := range lat {
		if l < 0 {
			b.Fatal("a request failed")
		}
	}
	return lat, float64(n) / sent
}

// BenchmarkLatencyAccuracy sends 2,000 req/s (open loop) for 2 s to pgsim with
// a fixed 50 ms latency, and as many to a bare handler that time.Sleeps 50 ms
// (the baseline: what the machine and net/http add by themselves). It reports
// percentiles of (client-seen latency - 50 ms) in milliseconds: p50_over_ms,
// p99_over_ms (target <= 2 ms), max_over_ms; base_p99_over_ms for the baseline;
// server_p99_over_ms (pgsim handler time - 50 ms, measured inside the server)
// and sent_req/s (the rate actually sent to pgsim).
func BenchmarkLatencyAccuracy(b *testing.B) {
	const (
		rate     = 2000
		duration = 2 * time.Second
		intended = 50 * time.Millisecond
	)
	bh := quiet()
	bh.Latency = behavior.Fixed{D: intended}
	// Speed 0.001 pushes settlement (and callbacks) 1000–5000 s away.
	s, err := New(Config{Behavior: bh, Seed: 1, Speed: 0.001}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close(context.Background())
	bh.Latency = behavior.Fixed{D: time.Duration(float64(intended) * 0.001)} // undo the speed for the request path
	if err := s.SetBehavior(bh); err != nil {
		b.Fatal(err)
	}
	var mu sync.Mutex
	var serverOver []time.Duration
	h := s.Handler()
	sim := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t0 := time.Now()
		h.ServeHTTP(w, r)
		d := time.Since(t0) - intended
		mu.Lock()
		serverOver = append(serverOver, d)
		mu.Unlock()
	}))
	defer sim.Close()
	base := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		time.Sleep(intended)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"meta":{"result":"SUCCESS"},"data":{"transactionKey":"20250816:TR:9577c5","status":"PENDING"}}`))
	}))
	defer base.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 400, MaxIdleConns: 800}}
	defer client.CloseIdleConnections()
	// Warm up: open the ~100 keep-alive connections each server needs at this
	// rate, so connection set-up is not measured.
	openLoop(b, client, base.URL+"/api/v1/payments", validBody, rate, 300*time.Millisecond)
	openLoop(b, client, sim.URL+"/api/v1/payments", validBody, rate, 300*time.Millisecond)
	mu.Lock()
	serverOver = serverOver[:0]
	mu.Unlock()
	var over, baseOver []time.Duration
	var rateSum float64
	runBase := func() {
		lat, _ := openLoop(b, client, base.URL+"/api/v1/payments", validBody, rate, duration)
		for _, l := range lat {
			baseOver = append(baseOver, l-intended)
		}
	}
	b.ResetTimer()
	for i := range b.N {
		if i%2 == 0 {
			runBase()
		}
		lat, sent := openLoop(b, client, sim.URL+"/api/v1/payments", validBody, rate, duration)
		for _, l := range lat {
			over = append(over, l-intended)
		}
		rateSum += sent
		if i%2 == 1 {
			runBase()
		}
	}
	b.StopTimer()
	q := func(xs []time.Duration, p float64) float64 {
		slices.Sort(xs)
		return float64(xs[int(p*float64(len(xs)-1))]) / float64(time.Millisecond)
	}
	b.ReportMetric(q(over, 0.5), "p50_over_ms")
	b.ReportMetric(q(over, 0.99), "p99_over_ms")
	b.ReportMetric(q(over, 1), "max_over_ms")
	b.ReportMetric(q(baseOver, 0.99), "base_p99_over_ms")
	mu.Lock()
	b.ReportMetric(q(serverOver, 0.99), "server_p99_over_ms")
	mu.Unlock()
	b.ReportMetric(rateSum/float64(b.N), "sent_req/s")
}

// BenchmarkAttemptLogMemory records 1,000,000 attempts, each on its own
// orderId (the worst case: one order entry per attempt), and reports the live
// heap they hold: MB_per_1M and bytes/attempt (target: 1M in <= 300 MB).
func BenchmarkAttemptLogMemory(b *testing.B) {
	const n = 1_000_000
	users := make([]string, 100)
	for i := range users {
		users[i] = fmt.Sprintf("user-%03d", i)
	}
	now := time.Now()
	var held uint64
	b.ResetTimer()
	for range b.N {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		l := newAttemptLog(DefaultMaxOrders, DefaultMaxAttempts, nil)
		for i := range n {
			// A fresh 16-byte orderId per attempt, as a request body would give.
			l.Record(now, users[i%len(users)], fmt.Sprintf("order-%010d", i), OutcomeSuccess, 250*time.Millisecond)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		held = after.HeapAlloc - before.HeapAlloc
		if st := l.Stats(); st.Orders != n || st.Logged != n {
			b.Fatalf("stats %+v", st)
		}
		runtime.KeepAlive(l)
	}
	b.StopTimer()
	b.ReportMetric(float64(held)/(1<<20), "MB_per_1M")
	b.ReportMetric(float64(held)/n, "bytes/attempt")
}
