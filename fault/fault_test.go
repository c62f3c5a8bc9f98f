package fault

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cbprobe/cbprobe/pgsim/behavior"
)

// With truncate and malformed at 0, fault draws exactly pgsim's decisions
// from the same seed: the model is shared, not re-implemented.
func TestDecideMatchesPgsimModel(t *testing.T) {
	pb := behavior.DefaultBehavior()
	pb.HangRate, pb.ResetRate = 0.05, 0.05
	fb := Behavior{Behavior: pb, ErrorStatus: 500}
	rp, rf := behavior.NewRand(7), behavior.NewRand(7)
	kinds := map[behavior.Outcome]Kind{behavior.OutcomeSuccess: KindNone, behavior.OutcomeError: KindError,
		behavior.OutcomeHang: KindHang, behavior.OutcomeReset: KindReset}
	for i := range 20000 {
		p, f := pb.Decide(rp), fb.Decide(rf)
		if kinds[p.Outcome] != f.Kind || p.Delay != f.Delay {
			t.Fatalf("draw %d: pgsim %v/%v, fault %q/%v", i, p.Outcome, p.Delay, f.Kind, f.Delay)
		}
	}
}

// The five fault kinds and the latency share one seeded stream; over 20,000
// draws each share lies within 5 standard deviations of its probability
// (sd = sqrt(p(1-p)/n) <= 0.0036), so a correct model fails with odds < 1e-6.
func TestDecideShares(t *testing.T) {
	b := NoFaults()
	b.ErrorRate, b.HangRate, b.ResetRate, b.TruncateRate, b.MalformedRate = 0.3, 0.1, 0.1, 0.1, 0.1
	if err := b.Validate(); err != nil {
		t.Fatal(err)
	}
	r := behavior.NewRand(3)
	const n = 20000
	counts := map[Kind]int{}
	for range n {
		counts[b.Decide(r).Kind]++
	}
	want := map[Kind]float64{KindError: 0.3, KindHang: 0.1, KindReset: 0.1, KindTruncate: 0.1, KindMalformed: 0.1, KindNone: 0.3}
	for k, p := range want {
		got := float64(counts[k]) / n
		if d := got - p; d > 0.018 || d < -0.018 {
			t.Errorf("%q: share %.4f, want %.2f ± 0.018", k, got, p)
		}
	}
}

func TestNoFaultsForwards(t *testing.T) {
	up, log := echoUpstream(t)
	_, url := newProxy(t, Config{Upstream: up.URL + "/base", Seed: 1})
	code, body, err := do(t, http.DefaultClient, "POST", url+"/api/v1/x?y=1", "hello", nil)
	if err != nil || code != 200 || body != "echo POST /base/api/v1/x?y=1" {
		t.Fatalf("got %d %q %v", code, body, err)
	}
	r, got := log.last()
	if got != "hello" {
		t.Errorf("upstream body %q", got)
	}
	if r.Host != strings.TrimPrefix(up.URL, "http://") {
		t.Errorf("upstream Host %q, want the upstream's", r.Host)
	}
	if r.Header.Get("X-Forwarded-For") != "127.0.0.1" {
		t.Errorf("X-Forwarded-For %q", r.Header.Get("X-Forwarded-For"))
	}
}

// Each fault kind, as a client sees it, and as the attempt log records it.
func TestFaultKinds(t *testing.T) {
	cases := []struct {
		name     string
		b        func(*Behavior)
		timeout  time.Duration
		check    func(t *testing.T, code int, body string, err error)
		outcome  string
		upstream bool // whether the upstream must have seen the request
	}{
		{"error with chosen status and body", func(b *Behavior) {
			b.ErrorRate, b.ErrorStatus, b.ErrorBody = 1, 503, `{"code":"UNAVAILABLE"}`
		}, 5 * time.Second, func(t *testing.T, code int, body string, err error) {
			if err != nil || code != 503 || body != `{"code":"UNAVAILABLE"}` {
				t.Errorf("got %d %q %v", code, body, err)
			}
		}, OutcomeError, false},
		{"reset", func(b *Behavior) { b.ResetRate = 1 }, 5 * time.Second, func(t *testing.T, code int, body string, err error) {
			if err == nil || !(errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF) || strings.Contains(err.Error(), "reset")) {
				t.Errorf("want a connection reset, got %d %q %v", code, body, err)
			}
		}, OutcomeReset, false},
		{"hang until the client gives up", func(b *Behavior) { b.HangRate, b.HangMax = 1, 30*time.Second },
			300 * time.Millisecond, func(t *testing.T, code int, body string, err error) {
				var ne net.Error
				if err == nil || !errors.As(err, &ne) || !ne.Timeout() {
					t.Errorf("want a client timeout, got %d %q %v", code, body, err)
				}
			}, OutcomeHang, false},
		{"hang bounded by hangMax", func(b *Behavior) { b.HangRate, b.HangMax = 1, 100*time.Millisecond },
			10 * time.Second, func(t *testing.T, code int, body string, err error) {
				if err == nil || !(errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || strings.Contains(err.Error(), "EOF")) {
					t.Errorf("want the connection closed without an answer, got %d %q %v", code, body, err)
				}
			}, OutcomeHang, false},
		{"truncated answer", func(b *Behavior) { b.TruncateRate = 1 }, 5 * time.Second, func(t *testing.T, code int, body string, err error) {
			if code != 200 || !errors.Is(err, io.ErrUnexpectedEOF) || !strings.HasPrefix("echo GET /p", body) || len(body) == 0 {
				t.Errorf("want 200 with a cut body and unexpected EOF, got %d %q %v", code, body, err)
			}
		}, OutcomeTruncate, true},
		{"malformed answer", func(b *Behavior) { b.MalformedRate = 1 }, 5 * time.Second, func(t *testing.T, code int, body string, err error) {
			if err == nil || !strings.Contains(err.Error(), "malformed HTTP") {
				t.Errorf("want a malformed-response error, got %d %q %v", code, body, err)
			}
		}, OutcomeMalformed, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			up, log := echoUpstream(t)
			s, url := newProxy(t, Config{Upstream: up.URL, Seed: 1, Behavior: behaviorWith(tc.b)})
			c := &http.Client{Timeout: tc.timeout, Transport: &http.Transport{DisableKeepAlives: true}}
			code, body, err := do(t, c, "GET", url+"/p", "", nil)
			tc.check(t, code, body, err)
			// The attempt is logged when the handler returns; wait for it.
			deadline := time.Now().Add(5 * time.Second)
			for s.AttemptStats().Total == 0 && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
			at := s.Attempts()
			if len(at) != 1 || at[0].Outcome != tc.outcome {
				t.Fatalf("attempt log %+v, want one %q", at, tc.outcome)
			}
			if seen := log.count() > 0; seen != tc.upstream {
				t.Errorf("upstream saw the request: %v, want %v", seen, tc.upstream)
			}
		})
	}
}

// Injected latency delays the answer by at least the intended amount; slow
// mode replaces errors with slow answers.
func TestLatencyAndSlowMode(t *testing.T) {
	up, _ := echoUpstream(t)
	s, url := newProxy(t, Config{Upstream: up.URL, Seed: 1, Behavior: behaviorWith(func(b *Behavior) {
		b.Latency = behavior.Fixed{D: 80 * time.Millisecond}
	})})
	t0 := time.Now()
	if code, _, err := do(t, http.DefaultClient, "GET", url+"/", "", nil); err != nil || code != 200 {
		t.Fatalf("got %d %v", code, err)
	}
	if el := time.Since(t0); el < 80*time.Millisecond {
		t.Errorf("answered after %v, want >= 80ms", el)
	}
	slow := behaviorWith(func(b *Behavior) {
		b.ErrorRate, b.Slow, b.SlowLatency = 1, true, behavior.Fixed{D: 60 * time.Millisecond}
	})
	if err := s.SetBehavior(slow); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		t0 = time.Now()
		code, _, err := do(t, http.DefaultClient, "GET", url+"/", "", nil)
		if err != nil || code != 200 {
			t.Fatalf("slow mode: got %d %v, want 200 (no errors in slow mode)", code, err)
		}
		if el := time.Since(t0); el < 60*time.Millisecond {
			t.Errorf("slow mode answered after %v, want >= 60ms", el)
		}
	}
}

// Rules are read per request: a client that keeps one keep-alive connection
// sees a behaviour change on its very next request, on the same connection.
func TestLiveKeepAliveConnectionGetsNewRules(t *testing.T) {
	up, _ := echoUpstream(t)
	_, url := newProxy(t, Config{Upstream: up.URL, Seed: 1})
	c := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1, MaxIdleConnsPerHost: 1}}
	var conns []net.Addr
	var reused []bool
	send := func() int {
		req, _ := http.NewRequest("GET", url+"/api/x", nil)
		req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
			GotConn: func(i httptrace.GotConnInfo) {
				conns = append(conns, i.Conn.LocalAddr())
				reused = append(reused, i.Reused)
			},
		}))
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	for range 3 {
		if code := send(); code != 200 {
			t.Fatalf("before the change: %d", code)
		}
	}
	// Change the behaviour through the control API on a different client.
	code, body, err := do(t, &http.Client{}, "PUT", url+"/__fault/rules",
		`[{"method":"GET","path":"/api/**","behavior":{"errorRate":1,"errorStatus":503}}]`, nil)
	if err != nil || code != 200 {
		t.Fatalf("PUT rules: %d %s %v", code, body, err)
	}
	for range 3 {
		if code := send(); code != 503 {
			t.Fatalf("after the change: %d, want 503", code)
		}
	}
	for i := 1; i < len(conns); i++ {
		if conns[i].String() != conns[0].String() || !reused[i] {
			t.Fatalf("request %d used connection %v (reused %v), want the first one %v", i, conns[i], reused[i], conns[0])
		}
	}
}

// Rules scope by method and path; the first match wins; others get the default.
func TestRuleScoping(t *testing.T) {
	up, _ := echoUpstream(t)
	rules := []Rule{
		{Name: "pay", Method: "POST", Path: "/api/v1/payments", Phases: []Phase{{Behavior: behaviorWith(func(b *Behavior) { b.ErrorRate, b.ErrorStatus = 1, 500 })}}},
		{Name: "get-any", Method: "GET", Path: "/api/v1/payments/*", Phases: []Phase{{Behavior: behaviorWith(func(b *Behavior) { b.ErrorRate, b.ErrorStatus = 1, 404 })}}},
		{Name: "tree", Path: "/admin/**", Phases: []Phase{{Behavior: behaviorWith(func(b *Behavior) { b.ErrorRate, b.ErrorStatus = 1, 403 })}}},
	}
	s, url := newProxy(t, Config{Upstream: up.URL, Seed: 1, Rules: rules})
	cases := []struct {
		method, path string
		want         int
		route        string
	}{
		{"POST", "/api/v1/payments", 500, "pay"},
		{"GET", "/api/v1/payments", 200, RouteDefault},
		{"GET", "/api/v1/payments/abc", 404, "get-any"},
		{"GET", "/api/v1/payments/abc/def", 200, RouteDefault},
		{"PUT", "/admin", 403, "tree"},
		{"GET", "/admin/a/b/c", 403, "tree"},
		{"GET", "/administrator", 200, RouteDefault},
	}
	for _, tc := range cases {
		code, _, err := do(t, http.DefaultClient, tc.method, url+tc.path, "", nil)
		if err != nil || code != tc.want {
			t.Errorf("%s %s: %d %v, want %d", tc.method, tc.path, code, err, tc.want)
		}
		at := s.Attempts()
		if got := at[len(at)-1].Route; got != tc.route {
			t.Errorf("%s %s: route %q, want %q", tc.method, tc.path, got, tc.route)
		}
	}
}

// Phases change the behaviour over time from when the rules were installed.
func TestPhases(t *testing.T) {
	up, _ := echoUpstream(t)
	clock := &fakeClock{now: time.Unix(1_000_000, 0)}
	errs := behaviorWith(func(b *Behavior) { b.ErrorRate, b.ErrorStatus = 1, 502 })
	rules := []Rule{{Phases: []Phase{{For: 10 * time.Second, Behavior: NoFaults()}, {For: 5 * time.Second, Behavior: errs},
		{Behavior: behaviorWith(func(b *Behavior) { b.ErrorRate, b.ErrorStatus = 1, 429 })}}}}
	_, url := newProxy(t, Config{Upstream: up.URL, Seed: 1, Rules: rules, Now: clock.Now})
	for _, step := range []struct {
		advance time.Duration
		want    int
	}{{0, 200}, {9 * time.Second, 200}, {time.Second, 502}, {4 * time.Second, 502}, {time.Second, 429}, {time.Hour, 429}} {
		clock.Add(step.advance)
		if code, _, _ := do(t, http.DefaultClient, "GET", url+"/", "", nil); code != step.want {
			t.Errorf("after +%v: %d, want %d", step.advance, code, step.want)
		}
	}
}

// The attempt log keys attempts by the traceparent's trace-id (then
// X-Request-Id) and numbers the attempts of each key, as pgsim does per orderId.
func TestCorrelationOfAttempts(t *testing.T) {
	up, _ := echoUpstream(t)
	s, url := newProxy(t, Config{Upstream: up.URL, Seed: 1})
	trace := "4bf92f3577b34da6a3ce929d0e0e4736"
	send := func(h map[string]string) {
		if code, _, err := do(t, http.DefaultClient, "GET", url+"/", "", h); err != nil || code != 200 {
			t.Fatalf("%v %v", code, err)
		}
	}
	// Three attempts of one logical request: each retry is a new span of the same trace.
	for _, span := range []string{"00f067aa0ba902b7", "00f067aa0ba902b8", "00f067aa0ba902b9"} {
		send(map[string]string{"traceparent": "00-" + trace + "-" + span + "-01", "X-Request-Id": "ignored"})
	}
	send(map[string]string{"X-Request-Id": "req-1"})
	send(map[string]string{"traceparent": "garbage", "X-Request-Id": "req-1"}) // malformed traceparent: fall back
	send(nil)
	at := s.Attempts()
	wantKeys := []string{trace, trace, trace, "req-1", "req-1", ""}
	wantN := []int{1, 2, 3, 1, 2, 0}
	for i := range at {
		if at[i].Key != wantKeys[i] || at[i].N != wantN[i] {
			t.Errorf("attempt %d: key %q n %d, want %q %d", i, at[i].Key, at[i].N, wantKeys[i], wantN[i])
		}
	}
	st := s.AttemptStats()
	if st.Keys != 2 || st.Attempts != 5 || st.Mean != 2.5 || st.Histogram[3] != 1 || st.Histogram[2] != 1 || st.Unkeyed != 1 || st.Total != 6 {
		t.Errorf("stats %+v", st)
	}
	// A custom header list.
	s2, url2 := newProxy(t, Config{Upstream: up.URL, Seed: 1, CorrelationHeaders: []string{"X-Order-Id"}})
	_, _, _ = do(t, http.DefaultClient, "GET", url2+"/", "", map[string]string{"X-Order-Id": "o-9", "traceparent": "00-" + trace + "-00f067aa0ba902b7-01"})
	if got := s2.Attempts()[0].Key; got != "o-9" {
		t.Errorf("custom header: key %q", got)
	}
}

func TestCorrelationKey(t *testing.T) {
	hs := DefaultCorrelationHeaders()
	cases := []struct{ name, tp, rid, want string }{
		{"valid traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "", "4bf92f3577b34da6a3ce929d0e0e4736"},
		{"upper-case hex is invalid", "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", "r", "r"},
		{"all-zero trace id", "00-00000000000000000000000000000000-00f067aa0ba902b7-01", "r", "r"},
		{"version ff", "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "r", "r"},
		{"short", "00-4bf9-00f067aa0ba902b7-01", "", ""},
		{"request id cut to 128", "", strings.Repeat("x", 300), strings.Repeat("x", 128)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			if tc.tp != "" {
				h.Set("traceparent", tc.tp)
			}
			if tc.rid != "" {
				h.Set("X-Request-Id", tc.rid)
			}
			if got := CorrelationKey(h, hs); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// An unreachable upstream is a 502 with a clear body, counted and logged.
func TestUnreachableUpstream(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close() // nothing listens there now
	s, url := newProxy(t, Config{Upstream: dead, Seed: 1})
	code, body, err := do(t, http.DefaultClient, "GET", url+"/x", "", nil)
	if err != nil || code != 502 || !strings.Contains(body, "upstream "+dead+" unreachable") || !strings.Contains(body, "refused") {
		t.Fatalf("got %d %q %v", code, body, err)
	}
	if st := s.AttemptStats(); st.Outcomes[OutcomeUpstreamError] != 1 {
		t.Errorf("outcomes %v", st.Outcomes)
	}
	_, metrics, _ := do(t, http.DefaultClient, "GET", url+"/metrics", "", nil)
	if !strings.Contains(metrics, `fault_requests_total{outcome="upstream-error",route="default"} 1`) {
		t.Errorf("metrics lack the upstream error:\n%s", metrics)
	}
}

// Hop-by-hop headers (RFC 9110 §7.6.1), including those the Connection header
// names, are dropped in both directions; end-to-end headers pass.
func TestHopByHopHeaders(t *testing.T) {
	var got http.Header
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Clone()
		w.Header().Set("Connection", "X-Up-Hop")
		w.Header().Set("X-Up-Hop", "1")
		w.Header().Set("Keep-Alive", "timeout=5")
		w.Header().Set("X-End", "kept")
		_, _ = io.WriteString(w, "ok")
	}))
	defer up.Close()
	_, url := newProxy(t, Config{Upstream: up.URL, Seed: 1})
	req, _ := http.NewRequest("GET", url+"/", nil)
	req.Header.Set("Connection", "X-Hop, keep-alive")
	req.Header.Set("X-Hop", "1")
	req.Header.Set("Keep-Alive", "timeout=5")
	req.Header.Set("Proxy-Authorization", "Basic eA==")
	req.Header.Set("Te", "trailers")
	req.Header.Set("Upgrade", "websocket")
	req.Header.Set("X-End", "kept")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	for _, h := range []string{"X-Hop", "Keep-Alive", "Proxy-Authorization", "Te", "Upgrade"} {
		if got.Get(h) != "" {
			t.Errorf("upstream received hop-by-hop %s: %q", h, got.Get(h))
		}
	}
	if got.Get("X-End") != "kept" {
		t.Errorf("end-to-end header lost")
	}
	if resp.Header.Get("X-Up-Hop") != "" || resp.Header.Get("Keep-Alive") != "" {
		t.Errorf("client received hop-by-hop headers %v", resp.Header)
	}
	if resp.Header.Get("X-End") != "kept" {
		t.Errorf("end-to-end response header lost")
	}
}

// Bodies are streamed and capped: a request body over the cap gets 413; an
// upstream answer declared over the cap gets 502; one that grows over the cap
// while streaming is cut.
func TestBodyCaps(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		switch r.URL.Path {
		case "/declared":
			w.Header().Set("Content-Length", "5000")
			_, _ = w.Write(make([]byte, 5000))
		case "/chunked":
			for range 10 {
				_, _ = w.Write(make([]byte, 1000))
				w.(http.Flusher).Flush()
			}
		default:
			_, _ = io.WriteString(w, "ok")
		}
	}))
	defer up.Close()
	s, url := newProxy(t, Config{Upstream: up.URL, Seed: 1, MaxBody: 2048})
	code, body, _ := do(t, http.DefaultClient, "POST", url+"/", strings.Repeat("x", 4096), nil)
	if code != 413 || !strings.Contains(body, "2048-byte cap") {
		t.Errorf("large request: %d %q", code, body)
	}
	code, body, _ = do(t, http.DefaultClient, "GET", url+"/declared", "", nil)
	if code != 502 || !strings.Contains(body, "5000 bytes") {
		t.Errorf("declared large answer: %d %q", code, body)
	}
	_, body, err := do(t, http.DefaultClient, "GET", url+"/chunked", "", nil)
	if err == nil || len(body) > 2048 {
		t.Errorf("streamed large answer: %d bytes, err %v; want it cut at the cap", len(body), err)
	}
	if code, _, err := do(t, http.DefaultClient, "POST", url+"/", "small", nil); code != 200 || err != nil {
		t.Errorf("small request: %d %v", code, err)
	}
	if o := s.AttemptStats().Outcomes; o[OutcomeRejected] != 1 || o[OutcomeUpstreamError] != 2 || o[OutcomeSuccess] != 1 {
		t.Errorf("outcomes %v", o)
	}
}

// A streamed answer reaches the client before the upstream finishes it.
func TestStreaming(t *testing.T) {
	release := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "first\n")
		w.(http.Flusher).Flush()
		<-release
		_, _ = io.WriteString(w, "second\n")
	}))
	defer up.Close()
	defer close(release)
	_, url := newProxy(t, Config{Upstream: up.URL, Seed: 1})
	resp, err := http.Get(url + "/")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || line != "first\n" {
		t.Fatalf("first line %q %v", line, err)
	}
}

// Bad rule values are refused by the control API with 400 and the field named.
func TestControlRefusesBadValues(t *testing.T) {
	up, _ := echoUpstream(t)
	s, url := newProxy(t, Config{Upstream: up.URL, Seed: 1})
	cases := []struct{ name, path, method, body, field string }{
		{"rate above 1", "behavior", "PUT", `{"errorRate":1.5}`, "errorRate"},
		{"bad distribution", "behavior", "PUT", `{"latency":"fast"}`, "latency"},
		{"status out of range", "behavior", "PATCH", `{"errorStatus":99}`, "errorStatus"},
		{"wrong type", "behavior", "PUT", `{"truncateRate":"half"}`, "truncateRate"},
		{"rates over 1 in sum", "behavior", "PUT", `{"errorRate":0.6,"malformedRate":0.6}`, "malformedRate"},
		{"unknown field", "behavior", "PUT", `{"errRate":0.5}`, "errRate"},
		{"null", "behavior", "PUT", `{"errorRate":null}`, "errorRate"},
		{"bad method", "rules", "PUT", `[{"method":"get","behavior":{}}]`, "[0].method"},
		{"bad pattern", "rules", "PUT", `[{"path":"/a/[","behavior":{}}]`, "[0].path"},
		{"relative pattern", "rules", "PUT", `[{"path":"api/*","behavior":{}}]`, "[0].path"},
		{"no behaviour", "rules", "PUT", `[{"path":"/a"}]`, "[0].behavior"},
		{"bad phase duration", "rules", "PUT", `[{"phases":[{"for":"soon","behavior":{}}]}]`, "[0].phases[0].for"},
		{"open-ended phase not last", "rules", "PUT", `[{"phases":[{"behavior":{}},{"for":"1s","behavior":{}}]}]`, "[0].phases[0].for"},
		{"bad rate in a phase", "rules", "PUT", `{"rules":[{"phases":[{"for":"1s","behavior":{"hangRate":-1}}]}]}`, "rules[0].phases[0].behavior.hangRate"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, body, err := do(t, http.DefaultClient, tc.method, url+"/__fault/"+tc.path, tc.body, nil)
			if err != nil || code != 400 || !strings.Contains(body, `"field":"`+tc.field+`"`) {
				t.Errorf("got %d %s %v, want 400 naming %q", code, body, err, tc.field)
			}
		})
	}
	if b := s.Behavior(); !b.Quiet() {
		t.Errorf("a refused change was applied: %v", b)
	}
	code, body, _ := do(t, http.DefaultClient, "PATCH", url+"/__fault/behavior", `{"errorRate":0.25,"errorStatus":503}`, nil)
	if code != 200 || !strings.Contains(body, `"errorRate":0.25`) || !strings.Contains(body, `"errorStatus":503`) {
		t.Errorf("good PATCH: %d %s", code, body)
	}
	code, _, _ = do(t, http.DefaultClient, "DELETE", url+"/__fault/behavior", "", nil)
	if code != 405 {
		t.Errorf("DELETE: %d, want 405", code)
	}
	code, _, _ = do(t, http.DefaultClient, "GET", url+"/__fault/nothing", "", nil)
	if code != 404 {
		t.Errorf("unknown endpoint: %d, want 404", code)
	}
	code, _, _ = do(t, http.DefaultClient, "PUT", url+"/__fault/behavior", strings.Repeat(" ", 2<<20), nil)
	if code != 413 {
		t.Errorf("huge control body: %d, want 413", code)
	}
}

func TestControlStatsResetAttempts(t *testing.T) {
	up, _ := echoUpstream(t)
	_, url := newProxy(t, Config{Upstream: up.URL, Seed: 42})
	_, _, _ = do(t, http.DefaultClient, "GET", url+"/a", "", map[string]string{"X-Request-Id": "k"})
	_, body, _ := do(t, http.DefaultClient, "GET", url+"/__fault/stats", "", nil)
	if !strings.Contains(body, `"seed":42`) || !strings.Contains(body, `"mode":"proxy"`) || !strings.Contains(body, `"total":1`) {
		t.Errorf("stats %s", body)
	}
	_, body, _ = do(t, http.DefaultClient, "GET", url+"/__fault/attempts", "", nil)
	if !strings.Contains(body, `"key":"k"`) || !strings.Contains(body, `"outcome":"success"`) || strings.Count(body, "\n") != 1 {
		t.Errorf("attempts %q", body)
	}
	if code, _, _ := do(t, http.DefaultClient, "POST", url+"/__fault/reset", "", nil); code != 204 {
		t.Errorf("reset: %d", code)
	}
	_, body, _ = do(t, http.DefaultClient, "GET", url+"/__fault/stats", "", nil)
	if !strings.Contains(body, `"total":0`) {
		t.Errorf("after reset %s", body)
	}
}

func TestAttemptLogFile(t *testing.T) {
	up, _ := echoUpstream(t)
	path := filepath.Join(t.TempDir(), "attempts.jsonl")
	s, err := New(Config{Upstream: up.URL, Seed: 1, LogPath: path}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s)
	for range 3 {
		_, _, _ = do(t, http.DefaultClient, "GET", ts.URL+"/z", "", nil)
	}
	ts.Close()
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(data), `"path":"/z"`); n != 3 {
		t.Errorf("%d lines for /z in %q", n, data)
	}
}

func TestConfigValidate(t *testing.T) {
	stub := &Stub{File: "s.yaml", Routes: []StubRoute{{}}}
	cases := []struct {
		name string
		cfg  Config
		want string
	}{
		{"neither", Config{}, "give an upstream URL or a stub"},
		{"both", Config{Upstream: "http://127.0.0.1:1", Stub: stub}, "not both"},
		{"scheme", Config{Upstream: "ftp://x"}, "http:// or https://"},
		{"no host", Config{Upstream: "http://"}, "no host"},
		{"query", Config{Upstream: "http://127.0.0.1:1/?a=b"}, "without query"},
		{"behaviour", Config{Upstream: "http://127.0.0.1:1", Behavior: behaviorWith(func(b *Behavior) { b.ErrorRate = 2 })}, "behavior.errorRate"},
		{"rule", Config{Upstream: "http://127.0.0.1:1", Rules: []Rule{{Path: "x"}}}, "rules[0].path"},
		{"header", Config{Upstream: "http://127.0.0.1:1", CorrelationHeaders: []string{"bad header"}}, "correlation header"},
		{"metrics path", Config{Upstream: "http://127.0.0.1:1", MetricsPath: "metrics"}, "metrics path"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.cfg, nil)
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.ExitCode() != 2 || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want a ConfigError containing %q", err, tc.want)
			}
		})
	}
}

// Closing the server cuts in-flight delays.
func TestCloseCutsDelays(t *testing.T) {
	up, _ := echoUpstream(t)
	s, err := New(Config{Upstream: up.URL, Seed: 1, Behavior: behaviorWith(func(b *Behavior) { b.Latency = behavior.Fixed{D: time.Hour} })}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background(), "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		resp, err := http.Get(s.URL() + "/")
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	for s.Stats().InFlight == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_ = s.Close(ctx)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("request still held 10 s after Close")
	}
	if !strings.HasPrefix(fmt.Sprint(s.Attempts()[0].Outcome), OutcomeCancelled) {
		t.Errorf("outcome %q", s.Attempts()[0].Outcome)
	}
}
