package demo

import (
	"context"
	"encoding/json"
	"strings"
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
	if !strings.Contains(string(prom), `resilience4j_timelimiter_calls_total{kind="timeout",name="`+FeignName+`"} 1.0`) {
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
