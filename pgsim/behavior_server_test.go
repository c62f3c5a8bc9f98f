package pgsim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cbprobe/cbprobe/pgsim/behavior"
	"github.com/google/go-cmp/cmp"
)

// runSequence sends n sequential payments and returns the attempt log.
func runSequence(t *testing.T, cfg Config, n int) []Attempt {
	t.Helper()
	s, base := newTestServer(t, cfg)
	for i := range n {
		body := strings.Replace(validBody, "1351039135", fmt.Sprintf("seq-%05d", i%(n/2+1)), 1)
		do(t, nil, http.MethodPost, base+"/api/v1/payments", "u1", body)
	}
	return s.Attempts()
}

func TestSeedReproducible(t *testing.T) {
	cfg := Config{Seed: 99, Speed: 1000} // default behaviour, latencies 0.1–0.5 ms
	strip := func(a []Attempt) []Attempt {
		out := make([]Attempt, len(a))
		for i, x := range a {
			x.Time = time.Time{}
			out[i] = x
		}
		return out
	}
	a := strip(runSequence(t, cfg, 60))
	b := strip(runSequence(t, cfg, 60))
	if diff := cmp.Diff(a, b); diff != "" {
		t.Fatalf("same seed, same order, different outcomes (-first +second):\n%s", diff)
	}
	cfg.Seed = 100
	if c := strip(runSequence(t, cfg, 60)); cmp.Equal(a, c) {
		t.Fatal("seeds 99 and 100 gave identical attempt logs")
	}
	// The server's decisions are exactly behavior.Decide on behavior.NewRand(seed).
	r := behavior.NewRand(99)
	for i, att := range a {
		d := behavior.DefaultBehavior().Decide(r)
		if d.Outcome.String() != att.Outcome || d.Injected != att.Injected {
			t.Fatalf("attempt %d: server %v/%v, model %v/%v", i, att.Outcome, att.Injected, d.Outcome, d.Injected)
		}
	}
}

func TestErrorShareAndLatencyThroughServer(t *testing.T) {
	const n = 1000
	att := runSequence(t, Config{Seed: 7, Speed: 1000}, n)
	if len(att) != n {
		t.Fatalf("%d attempts logged, want %d", len(att), n)
	}
	errs, below300 := 0, 0
	succ := 0
	for _, a := range att {
		switch a.Outcome {
		case OutcomeError:
			errs++
			if a.Injected != 0 {
				t.Fatalf("immediate error with injected %v", a.Injected)
			}
		case OutcomeSuccess:
			succ++
			if a.Injected < 100*time.Millisecond || a.Injected > 500*time.Millisecond {
				t.Fatalf("success injected %v outside 100–500 ms", a.Injected)
			}
			if a.Injected <= 300*time.Millisecond {
				below300++
			}
		default:
			t.Fatalf("outcome %q", a.Outcome)
		}
	}
	// Errors ~ Binomial(1000, 0.4): sd = sqrt(1000*0.4*0.6) = 15.5; 4 sigma = 62.
	if math.Abs(float64(errs)-400) > 62 {
		t.Errorf("errors %d of %d, want 400 ± 62", errs, n)
	}
	// Median of U(100,500) is 300 ms: #successes <= 300 ms ~ Binomial(succ, 0.5), 4 sigma = 2*sqrt(succ).
	if math.Abs(float64(below300)-float64(succ)/2) > 2*math.Sqrt(float64(succ)) {
		t.Errorf("%d of %d successes <= 300 ms, want half ± %.0f", below300, succ, 2*math.Sqrt(float64(succ)))
	}
}

func TestAfterLatencyTiming(t *testing.T) {
	b := behavior.DefaultBehavior()
	b.ErrorRate = 1
	b.ErrorTiming = behavior.AfterLatency
	for _, a := range runSequence(t, Config{Behavior: b, Seed: 1, Speed: 1000}, 20) {
		if a.Outcome != OutcomeError || a.Injected < 100*time.Millisecond || a.Injected > 500*time.Millisecond {
			t.Fatalf("after-latency error %+v, want injected 100–500 ms", a)
		}
	}
}

func TestHangAndReset(t *testing.T) {
	tests := []struct {
		name    string
		edit    func(*behavior.Behavior)
		timeout time.Duration
		outcome string
	}{
		{name: "hang until the client gives up", edit: func(b *behavior.Behavior) { b.HangRate, b.HangMax = 1, 10*time.Second },
			timeout: 200 * time.Millisecond, outcome: OutcomeHang},
		{name: "hang bounded by its maximum", edit: func(b *behavior.Behavior) { b.HangRate, b.HangMax = 1, 50*time.Millisecond },
			timeout: 5 * time.Second, outcome: OutcomeHang},
		{name: "connection reset", edit: func(b *behavior.Behavior) { b.ResetRate = 1 }, timeout: 5 * time.Second, outcome: OutcomeReset},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := quiet()
			tc.edit(&b)
			s, base := newTestServer(t, Config{Behavior: b, Seed: 1})
			req, _ := http.NewRequest(http.MethodPost, base+"/api/v1/payments", strings.NewReader(validBody))
			req.Header.Set("X-USER-ID", "u1")
			c := &http.Client{Timeout: tc.timeout, Transport: &http.Transport{DisableKeepAlives: true}}
			resp, err := c.Do(req)
			if err == nil {
				resp.Body.Close()
				t.Fatalf("got an answer %d, want none", resp.StatusCode)
			}
			att := s.Attempts()
			if len(att) != 1 || att[0].Outcome != tc.outcome {
				t.Fatalf("attempts %+v, want one %s", att, tc.outcome)
			}
		})
	}
}

func TestSettlementAndCallback(t *testing.T) {
	type cb struct {
		body   callbackBody
		userID string
	}
	got := make(chan cb, 10)
	recv := http.NewServeMux()
	recv.HandleFunc("/cb", func(w http.ResponseWriter, r *http.Request) {
		var b callbackBody
		_ = json.NewDecoder(r.Body).Decode(&b)
		got <- cb{b, r.Header.Get("X-USER-ID")}
	})
	rs := httptestServer(t, recv)
	s, base := newTestServer(t, Config{Behavior: quiet(), Seed: 11, Speed: 1000, CallbackPrefix: rs})
	body := strings.Replace(validBody, "http://localhost:8080/api/v1/payments/callback", rs+"/cb", 1)
	created := do(t, nil, http.MethodPost, base+"/api/v1/payments", "u1", body)
	var env struct {
		Data struct{ TransactionKey string } `json:"data"`
	}
	if err := json.Unmarshal([]byte(created.body), &env); err != nil || created.status != 200 {
		t.Fatalf("create: %d %s", created.status, created.body)
	}
	select {
	case c := <-got:
		if c.userID != "" {
			t.Errorf("callback carried X-USER-ID %q", c.userID)
		}
		if c.body.TransactionKey != env.Data.TransactionKey || c.body.OrderID != "1351039135" || c.body.Amount != 5000 {
			t.Errorf("callback body %+v", c.body)
		}
		valid := map[string]string{ReasonOK: StatusSuccess, ReasonLimit: StatusFailed, ReasonInvalid: StatusFailed}
		if valid[c.body.Reason] != c.body.Status {
			t.Errorf("callback status %q with reason %q", c.body.Status, c.body.Reason)
		}
		detail := do(t, nil, http.MethodGet, base+"/api/v1/payments/"+c.body.TransactionKey, "u1", "")
		if !strings.Contains(detail.body, `"status":"`+c.body.Status+`","reason":"`+c.body.Reason+`"`) {
			t.Errorf("detail after settlement: %s", detail.body)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no callback within 5 s (settlement at speed 1000 takes 1–5 ms)")
	}
	deadline := time.Now().Add(2 * time.Second)
	for s.Stats().CallbacksSent != 1 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if st := s.Stats(); st.CallbacksSent != 1 || st.CallbacksFailed != 0 || st.CallbackQueue != 0 {
		t.Errorf("callback stats sent %d failed %d queue %d", st.CallbacksSent, st.CallbacksFailed, st.CallbackQueue)
	}
}

func TestSettlementMix(t *testing.T) {
	s, err := New(Config{Seed: 12}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	const n = 20000
	counts := map[string]int{}
	for range n {
		d, status, reason := s.drawSettlement()
		if d < time.Second || d > 5*time.Second {
			t.Fatalf("settlement delay %v outside 1–5 s", d)
		}
		counts[status+"/"+reason]++
	}
	// Each share ~ Binomial(20000, p); 4 sigma.
	for k, p := range map[string]float64{StatusSuccess + "/" + ReasonOK: 0.7, StatusFailed + "/" + ReasonLimit: 0.2, StatusFailed + "/" + ReasonInvalid: 0.1} {
		tol := 4 * math.Sqrt(n*p*(1-p))
		if math.Abs(float64(counts[k])-n*p) > tol {
			t.Errorf("%s: %d, want %.0f ± %.0f", k, counts[k], n*p, tol)
		}
	}
}

func TestKeysNeverCollide(t *testing.T) {
	g := newKeyGen(12345)
	now := time.Date(2025, 8, 16, 15, 30, 0, 0, time.UTC) // 00:30 on the 17th in Seoul
	// The suffix mixer is a bijection on all 2^24 sequence numbers.
	bits := make([]uint64, 1<<24/64)
	for seq := range uint32(1 << 24) {
		x := g.mix(seq)
		if x > 0xffffff || bits[x/64]&(1<<(x%64)) != 0 {
			t.Fatalf("suffix %06x of sequence %d repeats or overflows", x, seq)
		}
		bits[x/64] |= 1 << (x % 64)
	}
	seen := make(map[string]bool, 1<<12)
	for range 1 << 12 {
		k, _ := g.next(now)
		if seen[k] {
			t.Fatalf("key %s repeated", k)
		}
		seen[k] = true
		if !isTransactionKey(k) || !strings.HasPrefix(k, "20250817:TR:") {
			t.Fatalf("key %s, want 20250817:TR:xxxxxx (Seoul date)", k)
		}
	}
}

func TestAttemptLogConcurrent(t *testing.T) {
	l := newAttemptLog(0, 0, nil)
	const workers, per, orders = 32, 500, 100
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range per {
				l.Record(time.Now(), fmt.Sprintf("u%d", w), fmt.Sprintf("order-%03d", (w*per+i)%orders), OutcomeSuccess, time.Millisecond)
			}
		}()
	}
	wg.Wait()
	st := l.Stats()
	if st.Total != workers*per || st.Attempts != workers*per || st.Orders != orders || st.Mean != float64(workers*per)/orders {
		t.Fatalf("stats %+v", st)
	}
	if want := map[int]int{workers * per / orders: orders}; !cmp.Equal(st.Histogram, want) {
		t.Fatalf("histogram %v, want %v", st.Histogram, want)
	}
	// Attempt numbers of each order are exactly 1..k in log order.
	next := map[string]int{}
	for _, a := range l.Attempts() {
		next[a.OrderID]++
		if a.N != next[a.OrderID] {
			t.Fatalf("order %s: attempt numbered %d, want %d", a.OrderID, a.N, next[a.OrderID])
		}
	}
}

func TestAttemptLogBounds(t *testing.T) {
	l := newAttemptLog(3, 4, nil)
	for _, o := range []string{"a", "b", "a", "c", "d", "a", ""} {
		l.Record(time.Now(), "u", o, OutcomeError, 0)
	}
	st := l.Stats()
	// Orders are evicted by first sight: a, b, c fill the table; d evicts a;
	// a comes back as a new order (numbered 1 again) and evicts b.
	want := AttemptStats{Orders: 3, Attempts: 3, Mean: 1, Histogram: map[int]int{1: 3}, DroppedOrders: 2,
		Total: 7, Logged: 4, DroppedAttempts: 3, Outcomes: map[string]int{OutcomeError: 7}}
	if diff := cmp.Diff(want, st); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	att := l.Attempts()
	if len(att) != 4 || att[0].OrderID != "c" || att[2].OrderID != "a" || att[2].N != 1 || att[3].N != 0 {
		t.Fatalf("attempts %+v", att)
	}
}

func TestAttemptFileLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "attempts.jsonl")
	s, err := New(Config{Behavior: quiet(), Seed: 1, LogPath: path}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptestServer(t, s.Handler())
	for range 3 {
		do(t, nil, http.MethodPost, ts+"/api/v1/payments", "u1", validBody)
	}
	do(t, nil, http.MethodPost, ts+"/api/v1/payments", "", validBody)
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 4 {
		t.Fatalf("%d lines, want 4:\n%s", len(lines), data)
	}
	var last Attempt
	if err := json.Unmarshal([]byte(lines[2]), &last); err != nil || last.N != 3 || last.OrderID != "1351039135" || last.Outcome != OutcomeSuccess {
		t.Fatalf("line 3 %s: %+v %v", lines[2], last, err)
	}
	if err := json.Unmarshal([]byte(lines[3]), &last); err != nil || last.Outcome != OutcomeRejected || last.UserID != "" {
		t.Fatalf("line 4 %s", lines[3])
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		has  string
	}{
		{name: "negative speed", cfg: Config{Speed: -1}, has: "speed"},
		{name: "bad behaviour", cfg: Config{Behavior: behavior.Behavior{ErrorRate: 2, Latency: behavior.Fixed{}}}, has: "errorRate"},
		{name: "log in missing dir", cfg: Config{LogPath: filepath.Join(t.TempDir(), "no", "such", "file")}, has: "open attempt log"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.cfg, nil)
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.ExitCode() != 2 || !strings.Contains(err.Error(), tc.has) {
				t.Fatalf("New = %v, want a ConfigError mentioning %q", err, tc.has)
			}
		})
	}
}

func TestConcurrentAttemptsThroughServer(t *testing.T) {
	s, base := newTestServer(t, Config{Behavior: quiet(), Seed: 1, Speed: 0.001})
	const goroutines, per, orders = 20, 10, 10
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range per {
				body := strings.Replace(validBody, "1351039135", fmt.Sprintf("order-%03d", (g+i)%orders), 1)
				req, _ := http.NewRequest(http.MethodPost, base+"/api/v1/payments", strings.NewReader(body))
				req.Header.Set("X-USER-ID", fmt.Sprintf("user-%d", g))
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				resp.Body.Close()
			}
		}()
	}
	wg.Wait()
	st := s.Stats()
	// 200 attempts spread evenly: every order gets exactly 20.
	want := AttemptStats{Orders: orders, Attempts: goroutines * per, Mean: goroutines * per / orders,
		Histogram: map[int]int{goroutines * per / orders: orders}, Total: goroutines * per, Logged: goroutines * per,
		Outcomes: map[string]int{OutcomeSuccess: goroutines * per}}
	if diff := cmp.Diff(want, st.Attempts); diff != "" {
		t.Fatalf("attempt stats (-want +got):\n%s", diff)
	}
	if st.Requests[EndpointCreate][OutcomeSuccess] != goroutines*per || st.Transactions != goroutines*per {
		t.Fatalf("requests %v, transactions %d", st.Requests, st.Transactions)
	}
}

func TestInFlightAndFailedCallback(t *testing.T) {
	rs := httptestServer(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
	}))
	b := quiet()
	b.Latency = behavior.Fixed{D: 30 * time.Second}
	// Speed 30: the call waits 1 s (long enough for the /metrics request below
	// to land inside it on a loaded CI machine), settlement comes 33–167 ms after it.
	s, base := newTestServer(t, Config{Behavior: b, Seed: 1, CallbackPrefix: rs, Speed: 30})
	done := make(chan struct{})
	go func() {
		defer close(done)
		body := strings.Replace(validBody, "http://localhost:8080/api/v1/payments/callback", rs+"/cb", 1)
		do(t, nil, http.MethodPost, base+"/api/v1/payments", "u1", body)
	}()
	seen := false
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline) && !seen; time.Sleep(5 * time.Millisecond) {
		seen = s.Stats().InFlight == 1
	}
	if !seen {
		t.Fatal("in-flight never showed the waiting call")
	}
	if m := do(t, nil, http.MethodGet, base+"/metrics", "", ""); !strings.Contains(m.body, "pgsim_in_flight_requests 1") {
		t.Error("/metrics did not show the in-flight call")
	}
	<-done
	if st := s.Stats(); st.InFlight != 0 {
		t.Errorf("in flight %d after the answer", st.InFlight)
	}
	// A receiver answering 500 counts as a failed callback.
	deadline := time.Now().Add(5 * time.Second)
	for s.Stats().CallbacksFailed == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if st := s.Stats(); st.CallbacksFailed != 1 || st.CallbacksSent != 0 {
		t.Errorf("callbacks sent %d failed %d, want 0 and 1", st.CallbacksSent, st.CallbacksFailed)
	}
}

func TestStartURLAndCloseCutsInFlight(t *testing.T) {
	b := quiet()
	b.HangRate, b.HangMax = 1, 30*time.Second
	s, err := New(Config{Behavior: b, Seed: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.URL() != "" {
		t.Errorf("URL before Start = %q", s.URL())
	}
	if err := s.Start(context.Background(), "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background(), "127.0.0.1:0"); err == nil {
		t.Error("a second Start succeeded")
	}
	if !regexp.MustCompile(`^http://127\.0\.0\.1:\d+$`).MatchString(s.URL()) {
		t.Fatalf("URL %q", s.URL())
	}
	errc := make(chan error, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, s.URL()+"/api/v1/payments", strings.NewReader(validBody))
		req.Header.Set("X-USER-ID", "u1")
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	for deadline := time.Now().Add(2 * time.Second); s.Stats().InFlight == 0 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	closed := make(chan error, 1)
	go func() { closed <- s.Close(ctx) }()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not cut the 30 s hang at its 100 ms deadline")
	}
	if err := <-errc; err == nil {
		t.Error("the hanging call got an answer")
	}
	if err := s.Start(context.Background(), "127.0.0.1:0"); err == nil {
		t.Error("Start after Close succeeded")
	}
}
