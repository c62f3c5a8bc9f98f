package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/cbprobe/cbprobe/breaker"
	"github.com/cbprobe/cbprobe/pgsim"
	"github.com/cbprobe/cbprobe/pgsim/behavior"
)

// BenchmarkPrometheus10Breakers renders /actuator/prometheus for 10 breakers
// (plus the payment call's time limiter and retry) and reports ms per scrape.
func BenchmarkPrometheus10Breakers(b *testing.B) {
	s, err := New(Config{PGBaseURL: "http://127.0.0.1:1", DBLatency: NoDBLatency}, nil)
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < 9; i++ {
		cb, err := s.AddBreaker(fmt.Sprintf("backend-%d", i))
		if err != nil {
			b.Fatal(err)
		}
		for j := 0; j < 50; j++ {
			cb.OnSuccess(time.Duration(j) * time.Millisecond)
			cb.OnError(time.Duration(j)*time.Millisecond, fmt.Errorf("boom"))
		}
	}
	if _, err := s.paymentCall(); err != nil { // the Feign breaker, limiter and retry
		b.Fatal(err)
	}
	if n := len(s.reg.breakerViews()); n != 10 {
		b.Fatalf("%d breakers, want 10", n)
	}
	buf := make([]byte, 0, 64<<10)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		buf = s.RenderPrometheus(buf[:0])
	}
	b.ReportMetric(float64(time.Since(start).Microseconds())/1000/float64(b.N), "ms/scrape")
	b.ReportMetric(float64(len(buf)), "bytes/scrape")
}

// BenchmarkPaymentOverhead sends 1,000 payments/s through the service and
// 1,000 payments/s straight to the same zero-latency gateway, interleaved, for
// 2 s, and reports both p99 latencies and the service's p99 overhead in ms.
func BenchmarkPaymentOverhead(b *testing.B) {
	const rate, seconds = 1000, 2
	bh := behavior.DefaultBehavior()
	bh.ErrorRate = 0
	lat, err := behavior.ParseDistribution("0ms")
	if err != nil {
		b.Fatal(err)
	}
	bh.Latency = lat
	s, err := New(Config{Seed: 1, DBLatency: NoDBLatency, Gateway: pgsim.Config{Behavior: bh}}, nil)
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Start(context.Background(), "127.0.0.1:0"); err != nil {
		b.Fatal(err)
	}
	defer func() {
		b.StopTimer() // closing waits for the gateway's pending settlements
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Close(ctx)
	}()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 512, MaxIdleConns: 1024}}
	var firstBad sync.Once
	post := func(url string, body []byte) (time.Duration, int) {
		req, _ := http.NewRequest("POST", url, bytes.NewReader(body))
		req.Header.Set("X-USER-ID", "bench")
		req.Header.Set("Content-Type", "application/json")
		t0 := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			return time.Since(t0), 0
		}
		rb, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			firstBad.Do(func() { b.Logf("first failure: %s %d %s", url, resp.StatusCode, rb) })
		}
		return time.Since(t0), resp.StatusCode
	}
	n := rate * seconds
	orders := make([]string, n)
	for i := range orders {
		o := s.orders.create("bench", 5000)
		orders[i] = o.OrderID
	}
	callback := "http://localhost:1/api/v1/payments/callback"
	s.mu.Lock()
	callback = s.callbackURL
	s.mu.Unlock()
	var p99Direct, p99Demo, p50Direct, p50Demo float64
	for iter := 0; iter < b.N; iter++ {
		direct := make([]time.Duration, n)
		viaDemo := make([]time.Duration, n)
		bad := 0
		var mu sync.Mutex
		var wg sync.WaitGroup
		tick := time.NewTicker(time.Second / rate)
		for i := 0; i < n; i++ {
			<-tick.C
			wg.Add(2)
			go func(i int) {
				defer wg.Done()
				body, _ := json.Marshal(paymentRequest{OrderID: fmt.Sprintf("DIRECT-%08d", i), CardType: "SAMSUNG", CardNo: "1234-5678-9814-1451", Amount: 5000, CallbackURL: callback})
				d, st := post(s.GatewayURL()+"/api/v1/payments", body)
				direct[i] = d
				if st != 200 {
					mu.Lock()
					bad++
					mu.Unlock()
				}
			}(i)
			go func(i int) {
				defer wg.Done()
				body := []byte(`{"orderId":"` + orders[i] + `","cardType":"SAMSUNG","cardNo":"1234-5678-9814-1451"}`)
				d, st := post(s.URL()+"/api/v1/payments", body)
				viaDemo[i] = d
				if st != 200 {
					mu.Lock()
					bad++
					mu.Unlock()
				}
			}(i)
		}
		tick.Stop()
		wg.Wait()
		if bad > 0 {
			b.Fatalf("%d of %d requests failed", bad, 2*n)
		}
		p99Direct, p99Demo = quantileMs(direct, 99), quantileMs(viaDemo, 99)
		p50Direct, p50Demo = quantileMs(direct, 50), quantileMs(viaDemo, 50)
	}
	b.ReportMetric(p99Direct, "p99-direct-ms")
	b.ReportMetric(p99Demo, "p99-demo-ms")
	b.ReportMetric(p99Demo-p99Direct, "p99-delta-ms")
	b.ReportMetric(p50Demo-p50Direct, "p50-delta-ms")
	if st, _ := s.Breaker(); st.State() != breaker.StateClosed {
		b.Errorf("breaker %v after an all-success run", st.State())
	}
}

// quantileMs returns the q-th percentile (nearest rank) of ds in milliseconds.
func quantileMs(ds []time.Duration, q int) float64 {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return float64(s[(len(s)*q+99)/100-1].Microseconds()) / 1000
}
