package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/cbprobe/cbprobe/breaker"
	"github.com/cbprobe/cbprobe/pgsim"
	"github.com/cbprobe/cbprobe/pgsim/behavior"
)

// TestTimeoutIsSlowFailure: a call cut by the TimeLimiter is recorded as a
// failure and, being longer than the slow threshold, as a slow call.
func TestTimeoutIsSlowFailure(t *testing.T) {
	f := mustParse(t, `
resilience4j:
  circuitbreaker:
    configs:
      default:
        slow-call-duration-threshold: 50ms
  timelimiter:
    configs:
      default:
        timeout-duration: 100ms
pg:
  retry-max-attempts: 1
management:
  endpoints:
    web:
      exposure:
        include: "*"
`)
	bh := behavior.DefaultBehavior()
	bh.ErrorRate, bh.Latency = 0, mustDist(t, "2s")
	s := startService(t, Config{Spring: f, Speed: 10, Seed: 5, Gateway: pgsim.Config{Behavior: bh}})
	st, b := payOnce(t, s.URL())
	if st != 503 || !strings.Contains(string(b), `"code":"PG_TIMEOUT"`) {
		t.Fatalf("payment: %d %s, want 503 PG_TIMEOUT", st, b)
	}
	v := s.reg.breakerViews()[0]
	if v.BufferedCalls != 1 || v.FailedCalls != 1 || v.SlowFailedCalls != 1 || v.SlowCalls != 1 {
		t.Errorf("window %+v, want one slow failed call", v)
	}
	evs := s.reg.cbEvents(FeignName, "ERROR")
	want := "java.util.concurrent.TimeoutException: TimeLimiter '" + FeignName + "' recorded a timeout exception."
	if len(evs) != 1 || evs[0].ErrorMessage != want || evs[0].DurationMs < 100 {
		t.Errorf("ERROR events %+v, want one with %q and >= 100 ms", evs, want)
	}
	_, tle := do(t, "GET", s.URL()+"/actuator/timelimiterevents/"+strings.ReplaceAll(FeignName, "#", "%23")+"/timeout", "", "")
	if !strings.Contains(string(tle), `"type":"TIMEOUT"`) {
		t.Errorf("timelimiterevents: %s", tle)
	}
	_, prom := do(t, "GET", s.URL()+"/actuator/prometheus", "", "")
	if !strings.Contains(string(prom), `resilience4j_timelimiter_calls_total{group="`+FeignName+`",kind="timeout",name="`+FeignName+`"} 1.0`) {
		t.Errorf("prometheus lacks the timeout count")
	}
}

func TestRetryOnRejection(t *testing.T) {
	tests := []struct {
		name            string
		onRejection     bool
		retryEvents     []string
		notPermitted    float64
		failedWithRetry float64
	}{
		{"not retried by default", false, []string{"IGNORED_ERROR"}, 1, 0},
		{"retried when enabled", true, []string{"RETRY", "RETRY", "ERROR"}, 3, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := mustParse(t, "pg:\n  retry-max-attempts: 3\n  retry-wait: 10ms\n")
			on := tc.onRejection
			s := startService(t, Config{Spring: f, Speed: 10, Seed: 5, RetryOnRejection: &on})
			cb, err := s.Breaker()
			if err != nil {
				t.Fatal(err)
			}
			if err := cb.TransitionTo(breaker.StateOpen); err != nil {
				t.Fatal(err)
			}
			st, b := payOnce(t, s.URL())
			if st != 503 || !strings.Contains(string(b), CodeCircuitOpen) {
				t.Fatalf("payment: %d %s", st, b)
			}
			var types []string
			for _, e := range s.reg.retryEvents("", "") {
				types = append(types, e.Type)
			}
			if strings.Join(types, ",") != strings.Join(tc.retryEvents, ",") {
				t.Errorf("retry events %v, want %v", types, tc.retryEvents)
			}
			v := s.reg.breakerViews()[0]
			_, rts := s.reg.retryViews()
			if v.NotPermittedTotal != tc.notPermitted || rts[0].FailedWithRetry != tc.failedWithRetry {
				t.Errorf("not permitted %v, failed_with_retry %v; want %v, %v", v.NotPermittedTotal, rts[0].FailedWithRetry, tc.notPermitted, tc.failedWithRetry)
			}
			if s.Gateway().Stats().Attempts.Attempts != 0 {
				t.Errorf("the gateway was called while the breaker was OPEN")
			}
		})
	}
}

func TestEventBufferSizeAndLegacyFormat(t *testing.T) {
	f := mustParse(t, `
resilience4j:
  circuitbreaker:
    configs:
      default:
        event-consumer-buffer-size: 3
management:
  endpoints:
    web:
      exposure:
        include: prometheus,circuitbreakerevents
`)
	s := startService(t, Config{Spring: f, PromFormat: PromLegacy, PGBaseURL: "http://127.0.0.1:1", DBLatency: NoDBLatency})
	cb, err := s.AddBreaker("buffered")
	if err != nil {
		t.Fatal(err)
	}
	for _, to := range []breaker.State{breaker.StateOpen, breaker.StateHalfOpen, breaker.StateClosed, breaker.StateForcedOpen, breaker.StateClosed} {
		if err := cb.TransitionTo(to); err != nil {
			t.Fatal(err)
		}
	}
	_, b := do(t, "GET", s.URL()+"/actuator/circuitbreakerevents/buffered", "", "")
	var doc struct {
		CircuitBreakerEvents []struct{ StateTransition string } `json:"circuitBreakerEvents"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range doc.CircuitBreakerEvents {
		got = append(got, e.StateTransition)
	}
	if want := "HALF_OPEN_TO_CLOSED,CLOSED_TO_FORCED_OPEN,FORCED_OPEN_TO_CLOSED"; strings.Join(got, ",") != want {
		t.Errorf("buffered events %v, want the newest 3: %s", got, want)
	}
	_, prom := do(t, "GET", s.URL()+"/actuator/prometheus", "", "")
	for _, want := range []string{
		`resilience4j_circuitbreaker_state{name="buffered",state="closed",} 1.0`,
		`resilience4j_circuitbreaker_calls_seconds_count{kind="successful",name="buffered",} 0.0`,
	} {
		if !strings.Contains(string(prom), want) {
			t.Errorf("legacy scrape lacks %s", want)
		}
	}
}

func TestCloseWithoutStart(t *testing.T) {
	s, err := New(Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(context.Background()); err != nil {
		t.Errorf("Close before Start: %v", err)
	}
	if s.URL() != "" {
		t.Errorf("URL before Start: %q", s.URL())
	}
}

func TestGatewayChoice(t *testing.T) {
	f := mustParse(t, "pg:\n  base-url: http://127.0.0.1:1\n")
	tests := []struct {
		name     string
		cfg      Config
		embedded bool
		url      string
	}{
		{"file's pg.base-url", Config{Spring: f}, false, "http://127.0.0.1:1"},
		{"flag wins", Config{Spring: f, PGBaseURL: "http://127.0.0.1:2"}, false, "http://127.0.0.1:2"},
		{"embedded forced", Config{Spring: f, EmbeddedGateway: true}, true, ""},
		{"no URL anywhere", Config{}, true, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.DBLatency = NoDBLatency
			s := startService(t, tc.cfg)
			if got := s.Gateway() != nil; got != tc.embedded {
				t.Errorf("embedded gateway %v, want %v", got, tc.embedded)
			}
			if tc.url != "" && s.GatewayURL() != tc.url {
				t.Errorf("gateway URL %q, want %q", s.GatewayURL(), tc.url)
			}
			if tc.embedded && s.GatewayURL() != s.Gateway().URL() {
				t.Errorf("gateway URL %q, embedded at %q", s.GatewayURL(), s.Gateway().URL())
			}
		})
	}
}

func TestValidCardNo(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		{"1234-5678-9814-1451", true},
		{"1234-5678-9814-145", false},
		{"1234-5678-9814-14511", false},
		{"1234 5678 9814 1451", false},
		{"12a4-5678-9814-1451", false},
		{"１２３４-5678-9814-1451", false},
		{"", false},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			if got := validCardNo(tc.in); got != tc.want {
				t.Errorf("validCardNo(%q) = %v, want %v", tc.in, got, tc.want)
			}
		})
	}
}

func TestBadSpeed(t *testing.T) {
	for _, sp := range []float64{-1, math.NaN(), math.Inf(1), 2e6} {
		if _, err := New(Config{Speed: sp}, nil); err == nil {
			t.Errorf("speed %v accepted", sp)
		}
	}
}

// TestConcurrentPaymentsAndScrapes pays from 8 goroutines while the actuator
// and Prometheus are read, and checks the meters add up.
func TestConcurrentPaymentsAndScrapes(t *testing.T) {
	s := startService(t, Config{Seed: 11, Speed: 50})
	const workers, each = 8, 10
	var wg sync.WaitGroup
	codes := make(chan string, workers*each)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				st, b := payOnce(t, s.URL())
				var e apiError
				_ = json.Unmarshal(b, &e)
				codes <- fmt.Sprint(st, " ", e.Code)
			}
		}()
	}
	stop := make(chan struct{})
	scraped := make(chan int)
	go func() {
		n := 0
		for {
			select {
			case <-stop:
				scraped <- n
				return
			default:
			}
			for _, p := range []string{"/actuator/prometheus", "/actuator/circuitbreakers", "/actuator/circuitbreakerevents", "/actuator/retryevents", "/actuator/health"} {
				if st, _ := do(t, "GET", s.URL()+p, "", ""); st != 200 {
					t.Errorf("GET %s: %d", p, st)
				}
			}
			n++
		}
	}()
	wg.Wait()
	close(stop)
	if n := <-scraped; n == 0 {
		t.Error("no scrape ran during the payments")
	}
	close(codes)
	for c := range codes {
		switch c {
		case "200 ", "503 " + CodeCircuitOpen, "503 " + CodePGError, "503 " + CodePGTimeout:
		default:
			t.Errorf("unexpected answer %q", c)
		}
	}
	v := s.reg.breakerViews()[0]
	_, tls := s.reg.timeLimiterViews()
	_, rts := s.reg.retryViews()
	cbCalls := v.Calls[KindSuccessful].Count + v.Calls[KindFailed].Count + v.Calls[KindIgnored].Count
	tlCalls := tls[0].Successful + tls[0].Failed + tls[0].Timeout
	if float64(cbCalls) != tlCalls {
		t.Errorf("breaker recorded %d calls, time limiter %v", cbCalls, tlCalls)
	}
	r := rts[0]
	if got := r.SuccessfulWithoutRetry + r.SuccessfulWithRetry + r.FailedWithoutRetry + r.FailedWithRetry; got != workers*each {
		t.Errorf("retry counted %v payments, want %d", got, workers*each)
	}
}

func TestCommonTags(t *testing.T) {
	f := mustParse(t, `
spring:
  application:
    name: commerce-api
management:
  endpoints:
    web:
      exposure:
        include: prometheus
  metrics:
    tags:
      application: ${spring.application.name}
`)
	for _, pf := range []PromFormat{PromCurrent, PromLegacy} {
		t.Run(pf.String(), func(t *testing.T) {
			s := startService(t, Config{Spring: f, PromFormat: pf, PGBaseURL: "http://127.0.0.1:1", DBLatency: NoDBLatency})
			if _, err := s.AddBreaker("b"); err != nil {
				t.Fatal(err)
			}
			_, prom := do(t, "GET", s.URL()+"/actuator/prometheus", "", "")
			// The current generation has Spring Cloud's group tag between them.
			want := `resilience4j_circuitbreaker_buffered_calls{application="commerce-api",kind="failed",name="b"`
			if pf == PromCurrent {
				want = `resilience4j_circuitbreaker_buffered_calls{application="commerce-api",group="b",kind="failed",name="b"`
			}
			if !strings.Contains(string(prom), want) {
				t.Errorf("scrape lacks %s", want)
			}
		})
	}
}
