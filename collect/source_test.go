package collect

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/cbprobe/cbprobe/breaker"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeActuator serves /actuator/circuitbreakers and /actuator/circuitbreakerevents
// from a state the test changes, with a ring of ringSize events per breaker.
type fakeActuator struct {
	mu       sync.Mutex
	state    string
	fail     string
	slow     string
	failed   int
	buffered int
	notPerm  int
	events   []map[string]any
	ringSize int
	clock    time.Time
	override map[string]func(w http.ResponseWriter) // path -> fault
	rendered []byte                                 // events body, nil when stale
}

func newFake() *fakeActuator {
	return &fakeActuator{state: "CLOSED", fail: "-1.0%", slow: "-1.0%", ringSize: 100, clock: time.Date(2026, 5, 5, 9, 0, 0, 0, time.UTC), override: map[string]func(http.ResponseWriter){}}
}

func (f *fakeActuator) event(typ, transition, msg string) {
	f.clock = f.clock.Add(time.Millisecond)
	e := map[string]any{"circuitBreakerName": "pg", "type": typ, "creationTime": f.clock.Format("2006-01-02T15:04:05.000000000Z") + "[Etc/UTC]"}
	if transition != "" {
		e["stateTransition"] = transition
	}
	if typ == "ERROR" || typ == "SUCCESS" {
		e["durationInMs"] = 5
	}
	if msg != "" {
		e["errorMessage"] = msg
	}
	f.rendered = nil
	f.events = append(f.events, e)
	if len(f.events) > f.ringSize {
		f.events = f.events[len(f.events)-f.ringSize:]
	}
}

func (f *fakeActuator) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if o, ok := f.override[r.URL.Path]; ok {
		o(w)
		return
	}
	switch r.URL.Path {
	case "/actuator/circuitbreakers":
		fmt.Fprintf(w, `{"circuitBreakers":{"pg":{"failureRate":%q,"slowCallRate":%q,"failureRateThreshold":"60.0%%","slowCallRateThreshold":"50.0%%","bufferedCalls":%d,"failedCalls":%d,"slowCalls":0,"slowFailedCalls":0,"notPermittedCalls":%d,"state":%q}}}`,
			f.fail, f.slow, f.buffered, f.failed, f.notPerm, f.state)
	case "/actuator/circuitbreakerevents":
		if f.rendered == nil {
			f.rendered, _ = json.Marshal(map[string]any{"circuitBreakerEvents": f.events})
		}
		w.Write(f.rendered)
	default:
		http.NotFound(w, r)
	}
}

// trip records 20 calls (13 failures, 7 of them timeouts) and opens by failure rate.
func (f *fakeActuator) trip(withEvents bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range 20 {
		switch {
		case i < 7:
			f.event("ERROR", "", "java.util.concurrent.TimeoutException: TimeLimiter 'pg' recorded a timeout exception.")
		case i < 13:
			f.event("ERROR", "", "java.io.IOException: boom")
		default:
			f.event("SUCCESS", "", "")
		}
	}
	if withEvents {
		f.event("FAILURE_RATE_EXCEEDED", "", "")
	}
	f.event("STATE_TRANSITION", "CLOSED_TO_OPEN", "")
	f.state, f.fail, f.slow, f.failed, f.buffered = "OPEN", "65.0%", "0.0%", 13, 20
}

func pollOK(t *testing.T, s Source) Snapshot {
	t.Helper()
	snap, err := s.Poll(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

func TestActuatorTransitionAndCause(t *testing.T) {
	f := newFake()
	srv := httptest.NewServer(f)
	defer srv.Close()
	src := NewActuator(srv.URL, HTTPOptions{})
	tk := NewTracker(nil)
	s1 := pollOK(t, src)
	if len(s1.Notices) != 2 { // timelimiterevents and retryevents: 404, said once
		t.Errorf("notices %v", s1.Notices)
	}
	tk.Observe(s1)
	f.trip(true)
	s2 := pollOK(t, src)
	if len(s2.Events) != 22 || len(s2.Notices) != 0 {
		t.Fatalf("want 22 new events and no repeated notices, got %d, %v", len(s2.Events), s2.Notices)
	}
	got, _ := tk.Observe(s2)
	if len(got) != 1 {
		t.Fatalf("want 1 settled transition, got %+v", got)
	}
	tr := got[0]
	if tr.From != "CLOSED" || tr.To != "OPEN" || tr.Cause != breaker.CauseFailureRate || tr.TimeSource != TimeFromEvent {
		t.Errorf("transition %+v", tr)
	}
	ev := tr.Evidence
	if ev.FailureRate != 65 || ev.FailureRateThreshold != 60 || ev.ThresholdSource != "actuator" || ev.TimeoutShare != 7.0/13 || ev.TimeoutSource != "error-messages" {
		t.Errorf("evidence %+v", ev)
	}
	s3 := pollOK(t, src)
	if len(s3.Events) != 0 {
		t.Errorf("events must not repeat: %d", len(s3.Events))
	}
}

func TestCauseFromRatesWithoutEvents(t *testing.T) {
	f := newFake()
	srv := httptest.NewServer(f)
	defer srv.Close()
	src := NewActuator(srv.URL, HTTPOptions{})
	tk := NewTracker(nil)
	tk.Observe(pollOK(t, src))
	f.trip(false) // the ring dropped the FAILURE_RATE_EXCEEDED event (simulated)
	got, _ := tk.Observe(pollOK(t, src))
	if len(got) != 1 || got[0].Cause != breaker.CauseFailureRate || len(got[0].Evidence.Missing) == 0 {
		t.Fatalf("got %+v", got)
	}
}

func TestRingLossDetected(t *testing.T) {
	f := newFake()
	f.ringSize = 10
	srv := httptest.NewServer(f)
	defer srv.Close()
	src := NewActuator(srv.URL, HTTPOptions{EventBufferSize: 10})
	f.mu.Lock()
	f.state, f.notPerm = "OPEN", 0
	f.event("NOT_PERMITTED", "", "")
	f.mu.Unlock()
	pollOK(t, src)
	f.mu.Lock()
	for range 25 { // 25 rejections, the ring keeps 10: at least 15 lost
		f.event("NOT_PERMITTED", "", "")
	}
	f.notPerm = 25
	f.mu.Unlock()
	s := pollOK(t, src)
	if len(s.Lost) != 1 {
		t.Fatalf("want one loss report, got %+v", s.Lost)
	}
	// Counter grew by 25, 10 events seen now and 1 in the previous poll: >= 14 proven.
	if s.Lost[0].AtLeast != 14 || s.Lost[0].BufferSize != 10 {
		t.Errorf("loss %+v", s.Lost[0])
	}
}

func TestRestartDetected(t *testing.T) {
	f := newFake()
	srv := httptest.NewServer(f)
	defer srv.Close()
	src := NewActuator(srv.URL, HTTPOptions{})
	tk := NewTracker(nil)
	tk.Observe(pollOK(t, src))
	f.trip(true)
	tk.Observe(pollOK(t, src))
	// Restart: empty ring, breaker back to CLOSED, no event says so.
	f.mu.Lock()
	f.events, f.rendered, f.state, f.fail, f.slow, f.failed, f.buffered = nil, nil, "CLOSED", "-1.0%", "-1.0%", 0, 0
	f.mu.Unlock()
	s := pollOK(t, src)
	if len(s.Restarts) != 1 {
		t.Fatalf("want a restart, got %+v", s.Restarts)
	}
	got, resets := tk.Observe(s)
	if len(resets) != 1 || len(got) != 1 || got[0].From != "OPEN" || got[0].To != "CLOSED" || !strings.Contains(got[0].Note, "restart") {
		t.Fatalf("transitions %+v resets %+v", got, resets)
	}
	if n := len(tk.Transitions()); n != 2 {
		t.Errorf("history lost: %d transitions", n)
	}
}

func TestFaults(t *testing.T) {
	big := strings.Repeat("x", 1<<20+10)
	tests := []struct {
		name  string
		fault func(w http.ResponseWriter)
		kind  string
		text  string
	}{
		{"401", func(w http.ResponseWriter) { w.WriteHeader(401); w.Write([]byte("token s3cr3t-token rejected")) }, "http-status", "check --header"},
		{"500", func(w http.ResponseWriter) { w.WriteHeader(500) }, "http-status", "500"},
		{"html", func(w http.ResponseWriter) { w.Write([]byte("<html>login</html>")) }, "body", "HTML"},
		{"empty", func(w http.ResponseWriter) {}, "body", "empty body"},
		{"truncated", func(w http.ResponseWriter) { w.Write([]byte(`{"circuitBreakers":{"pg":`)) }, "body", "JSON"},
		{"huge", func(w http.ResponseWriter) { w.Write([]byte(big)) }, "too-large", "limit"},
		{"slow", func(w http.ResponseWriter) { time.Sleep(300 * time.Millisecond) }, "timeout", "no answer"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake()
			f.override["/actuator/circuitbreakers"] = tc.fault
			srv := httptest.NewServer(f)
			defer srv.Close()
			src := NewActuator(srv.URL, HTTPOptions{Timeout: 100 * time.Millisecond, MaxBody: 1 << 20,
				Headers: http.Header{"Authorization": {"Bearer s3cr3t-token"}}})
			_, err := src.Poll(context.Background())
			var fe *FetchError
			if !errors.As(err, &fe) || fe.Kind != tc.kind || !strings.Contains(err.Error(), tc.text) {
				t.Fatalf("got %v (kind %v), want kind %s containing %q", err, fe, tc.kind, tc.text)
			}
			if strings.Contains(err.Error(), "s3cr3t") {
				t.Errorf("secret leaked: %v", err)
			}
		})
	}
}

func TestNameFilter(t *testing.T) {
	tests := []struct {
		pattern, name string
		want          bool
	}{
		{"pg*", "pgPayment", true},
		{"pg*", "backendA", false},
		{"PgPaymentClient#requestPayment(String,PaymentRequest)", "PgPaymentClient#requestPayment(String,PaymentRequest)", true},
		{"re:pg|backend.*", "backendA", true},
		{"re:pg", "pgPayment", false},
		{"backend[AB]", "backendB", true},
		{"backend?", "backendCC", false},
	}
	for _, tc := range tests {
		f, err := NewNameFilter(tc.pattern)
		if err != nil {
			t.Fatal(err)
		}
		if got := f.Match(tc.name); got != tc.want {
			t.Errorf("%q matches %q = %v, want %v", tc.pattern, tc.name, got, tc.want)
		}
	}
	if _, err := NewNameFilter("re:("); err == nil {
		t.Error("bad regexp: want error")
	}
}

func TestActuatorFallbacks(t *testing.T) {
	health := `{"status":"UP","components":{"circuitBreakers":{"status":"UP","details":{"pg":{"status":"CIRCUIT_OPEN","details":{"failureRate":"65.0%","failureRateThreshold":"60.0%","slowCallRate":"0.0%","slowCallRateThreshold":"50.0%","bufferedCalls":20,"slowCalls":0,"slowFailedCalls":0,"failedCalls":13,"notPermittedCalls":2,"state":"OPEN"}}}}}}`
	tests := []struct {
		name     string
		breakers func(w http.ResponseWriter)
		notice   string
	}{
		{"circuitbreakers not exposed", func(w http.ResponseWriter) { w.WriteHeader(404) }, "reading breakers from /health"},
		{"pre-2.0 name list", func(w http.ResponseWriter) { w.Write([]byte(`{"circuitBreakers":["pg"]}`)) }, "lists names only"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake()
			f.override["/actuator/circuitbreakers"] = tc.breakers
			f.override["/actuator/health"] = func(w http.ResponseWriter) { w.Write([]byte(health)) }
			srv := httptest.NewServer(f)
			defer srv.Close()
			src := NewActuator(srv.URL+"/actuator/", HTTPOptions{})
			s := pollOK(t, src)
			if len(s.Breakers) != 1 || s.Breakers[0].State != "OPEN" || s.Breakers[0].FailureRate != 65 {
				t.Fatalf("breakers %+v", s.Breakers)
			}
			if !strings.Contains(strings.Join(s.Notices, "\n"), tc.notice) {
				t.Errorf("notices %v, want %q", s.Notices, tc.notice)
			}
			if s2 := pollOK(t, src); strings.Contains(strings.Join(s2.Notices, "\n"), tc.notice) {
				t.Errorf("notice repeated")
			}
		})
	}
}

func TestPrometheusSource(t *testing.T) {
	legacy := fixture(t, "prometheus-datadog-integrations-extras-legacy.txt")
	var body []byte
	ctype := "text/plain; version=0.0.4; charset=utf-8"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.Header.Get("Accept"), "text/plain;version=0.0.4") {
			t.Errorf("Accept %q", r.Header.Get("Accept"))
		}
		w.Header().Set("Content-Type", ctype)
		w.Write(body)
	}))
	defer srv.Close()
	src := NewPrometheus(srv.URL+"/actuator/prometheus", HTTPOptions{})
	body = []byte("")
	s := pollOK(t, src) // reachable, no breaker yet: a notice, not an error
	if len(s.Breakers) != 0 || len(s.Notices) != 1 {
		t.Fatalf("empty page: %+v", s)
	}
	body = legacy
	s = pollOK(t, src)
	if len(s.Breakers) != 1 || s.Breakers[0].State != "CLOSED" || !strings.Contains(strings.Join(s.Notices, ""), "2 repeated declaration lines were dropped") {
		t.Fatalf("legacy: %+v", s)
	}
	ctype = "text/html"
	if _, err := src.Poll(context.Background()); err == nil || !strings.Contains(err.Error(), "HTML") {
		t.Fatalf("html content type: %v", err)
	}
}

// stepClock is a Clock whose Now advances by step at every call.
type stepClock struct {
	mu   sync.Mutex
	now  time.Time
	step time.Duration
}

func (c *stepClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(c.step)
	return c.now
}

func (c *stepClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

// TestSideEventsPacing checks which polls read /timelimiterevents and
// /retryevents: the first, then once 180 ms (200 ms less 10 %) have passed
// by the source's clock or 4 polls have been made.
func TestSideEventsPacing(t *testing.T) {
	tests := []struct {
		name string
		step time.Duration // clock advance per Now call (Poll calls Now twice)
		want []int         // 0-based polls that read the side endpoints
	}{
		{"frozen clock: every 4th poll", 0, []int{0, 4, 8}},
		{"50 ms interval: every 4th poll", 25 * time.Millisecond, []int{0, 4, 8}},
		{"100 ms interval: every 2nd poll", 50 * time.Millisecond, []int{0, 2, 4, 6, 8}},
		{"1 s interval: every poll", 500 * time.Millisecond, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake()
			var mu sync.Mutex
			reads := map[int]bool{}
			poll := 0
			serve := func(w http.ResponseWriter) {
				mu.Lock()
				reads[poll] = true
				mu.Unlock()
				w.Write([]byte(`{"retryEvents":[],"timeLimiterEvents":[]}`))
			}
			f.override["/actuator/timelimiterevents"] = serve
			f.override["/actuator/retryevents"] = serve
			srv := httptest.NewServer(f)
			defer srv.Close()
			src := NewActuator(srv.URL, HTTPOptions{Clock: &stepClock{now: time.Unix(0, 0), step: tc.step}})
			for i := range 10 {
				mu.Lock()
				poll = i
				mu.Unlock()
				pollOK(t, src)
			}
			var got []int
			for i := range 10 {
				if reads[i] {
					got = append(got, i)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("side endpoints read at polls %v, want %v", got, tc.want)
			}
		})
	}
}
