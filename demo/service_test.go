package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cbprobe/cbprobe/breaker"
	"github.com/cbprobe/cbprobe/pgsim"
	"github.com/cbprobe/cbprobe/pgsim/behavior"
	"github.com/cbprobe/cbprobe/springconf"
)

// startService starts a service on a free port and stops it at the end of the test.
func startService(t *testing.T, cfg Config) *Service {
	t.Helper()
	s, err := New(cfg, nil)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if err := s.Start(context.Background(), "127.0.0.1:0"); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func do(t *testing.T, method, url, user, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if user != "" {
		req.Header.Set("X-USER-ID", user)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// payOnce creates an order and pays it; it returns the payment's status and body.
func payOnce(t *testing.T, base string) (int, []byte) {
	t.Helper()
	st, b := do(t, "POST", base+"/api/v1/orders", "u1", `{"amount":5000}`)
	if st != 200 {
		t.Fatalf("create order: %d %s", st, b)
	}
	var o struct{ OrderID string }
	if err := json.Unmarshal(b, &o); err != nil || o.OrderID == "" {
		t.Fatalf("create order answer %s: %v", b, err)
	}
	return do(t, "POST", base+"/api/v1/payments", "u1",
		fmt.Sprintf(`{"orderId":%q,"cardType":"SAMSUNG","cardNo":"1234-5678-9814-1451","amount":5000}`, o.OrderID))
}

func mustParse(t testing.TB, yml string) *springconf.File {
	t.Helper()
	f, err := springconf.Parse("test.yml", []byte(yml), springconf.YAML)
	if err != nil {
		t.Fatalf("parse config: %v", err)
	}
	return f
}

// TestDefaultSettingOpensWithin40Payments is the end-to-end check: with the
// embedded reference setting and gateway, sequential payments open the breaker;
// the actuator shows OPEN, the events show the exceeded event and the
// transition, and the Prometheus state gauge reads 1 for open.
func TestDefaultSettingOpensWithin40Payments(t *testing.T) {
	// Speed 50: gateway latencies 2-10 ms, 500 ms retry waits 10 ms, 10 s open wait 200 ms.
	s := startService(t, Config{Seed: 7, Speed: 50})
	base := s.URL()
	opened := 0
	for i := 1; i <= 40 && opened == 0; i++ {
		st, b := payOnce(t, base)
		if st == 503 && bytes.Contains(b, []byte(CodeCircuitOpen)) {
			opened = i
		}
	}
	if opened == 0 {
		t.Fatal("breaker did not reject a payment within 40 sequential payments")
	}
	t.Logf("first CIRCUIT_OPEN answer at payment %d", opened)
	// The open wait is 200 ms real at speed 50: read everything at once.
	_, cbs := do(t, "GET", base+"/actuator/circuitbreakers", "", "")
	_, prom := do(t, "GET", base+"/actuator/prometheus", "", "")
	_, evs := do(t, "GET", base+"/actuator/circuitbreakerevents", "", "")
	var doc struct {
		CircuitBreakers map[string]struct{ State string } `json:"circuitBreakers"`
	}
	if err := json.Unmarshal(cbs, &doc); err != nil {
		t.Fatalf("circuitbreakers %s: %v", cbs, err)
	}
	if got := doc.CircuitBreakers[FeignName].State; got != "OPEN" {
		t.Errorf("state %q, want OPEN (%s)", got, cbs)
	}
	wantGauge := `resilience4j_circuitbreaker_state{group="` + FeignName + `",name="` + FeignName + `",state="open"} 1.0`
	if !bytes.Contains(prom, []byte(wantGauge)) {
		t.Errorf("prometheus lacks %s", wantGauge)
	}
	var ev struct {
		CircuitBreakerEvents []struct{ Type, StateTransition string } `json:"circuitBreakerEvents"`
	}
	if err := json.Unmarshal(evs, &ev); err != nil {
		t.Fatalf("events: %v", err)
	}
	exceeded, transition := -1, -1
	for i, e := range ev.CircuitBreakerEvents {
		if exceeded < 0 && (e.Type == "SLOW_CALL_RATE_EXCEEDED" || e.Type == "FAILURE_RATE_EXCEEDED") {
			exceeded = i
		}
		if transition < 0 && e.StateTransition == "CLOSED_TO_OPEN" {
			transition = i
		}
	}
	if exceeded < 0 || transition < 0 || exceeded > transition {
		t.Errorf("want a *_RATE_EXCEEDED event before CLOSED_TO_OPEN, got indexes %d and %d", exceeded, transition)
	}
}

func TestBadRequests(t *testing.T) {
	s := startService(t, Config{Seed: 1, Speed: 100, DBLatency: NoDBLatency})
	base := s.URL()
	tests := []struct {
		name, method, path, user, body string
		status                         int
		code                           string
	}{
		{"order without user", "POST", "/api/v1/orders", "", `{"amount":5000}`, 400, CodeBadRequest},
		{"order bad json", "POST", "/api/v1/orders", "u1", `{"amount":`, 400, CodeBadRequest},
		{"order empty body", "POST", "/api/v1/orders", "u1", ``, 400, CodeBadRequest},
		{"order negative amount", "POST", "/api/v1/orders", "u1", `{"amount":-5}`, 400, CodeBadRequest},
		{"order amount as text", "POST", "/api/v1/orders", "u1", `{"amount":"x"}`, 400, CodeBadRequest},
		{"order array body", "POST", "/api/v1/orders", "u1", `[1,2]`, 400, CodeBadRequest},
		{"payment unknown order", "POST", "/api/v1/payments", "u1", `{"orderId":"ORD-99999999","cardType":"SAMSUNG","cardNo":"1234-5678-9814-1451"}`, 404, CodeNotFound},
		{"payment bad card type", "POST", "/api/v1/payments", "u1", `{"orderId":"ORD-00000001","cardType":"VISA","cardNo":"1234-5678-9814-1451"}`, 400, CodeBadRequest},
		{"payment bad card number", "POST", "/api/v1/payments", "u1", `{"orderId":"ORD-00000001","cardType":"KB","cardNo":"1234"}`, 400, CodeBadRequest},
		{"payment no order id", "POST", "/api/v1/payments", "u1", `{"cardType":"KB","cardNo":"1234-5678-9814-1451"}`, 400, CodeBadRequest},
		{"unknown order", "GET", "/api/v1/orders/nope", "u1", ``, 404, CodeNotFound},
		{"callback unknown order", "POST", "/api/v1/payments/callback", "", `{"orderId":"nope","status":"SUCCESS"}`, 404, CodeNotFound},
		{"callback bad status", "POST", "/api/v1/payments/callback", "", `{"orderId":"x","status":"MAYBE"}`, 400, CodeBadRequest},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st, b := do(t, tc.method, base+tc.path, tc.user, tc.body)
			var e apiError
			if st != tc.status || json.Unmarshal(b, &e) != nil || e.Code != tc.code || e.Message == "" {
				t.Errorf("got %d %s, want %d with code %s", st, b, tc.status, tc.code)
			}
		})
	}
}

func TestOrderLifecycleWithCallback(t *testing.T) {
	// A gateway that always accepts at once and settles fast.
	bh := behavior.DefaultBehavior()
	bh.ErrorRate, bh.Latency = 0, mustDist(t, "1ms")
	gw := pgsim.Config{Behavior: bh}
	s := startService(t, Config{Seed: 3, Speed: 50, Gateway: gw, DBLatency: NoDBLatency})
	st, b := payOnce(t, s.URL())
	if st != 200 {
		t.Fatalf("payment: %d %s", st, b)
	}
	var p paymentAnswer
	if err := json.Unmarshal(b, &p); err != nil || p.TransactionKey == "" || p.Status != "PENDING" {
		t.Fatalf("payment answer %s: %v", b, err)
	}
	// Settlement takes 1-5 s of gateway time: 20-100 ms at speed 50.
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, ob := do(t, "GET", s.URL()+"/api/v1/orders/"+p.OrderID, "u1", "")
		var o Order
		if err := json.Unmarshal(ob, &o); err != nil {
			t.Fatal(err)
		}
		if o.Status == OrderPaid || o.Status == OrderPaymentFailed {
			if o.TransactionKey != p.TransactionKey {
				t.Errorf("order key %q, payment key %q", o.TransactionKey, p.TransactionKey)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("order still %s after the callback deadline", o.Status)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Another user cannot read the order.
	if st, _ := do(t, "GET", s.URL()+"/api/v1/orders/"+p.OrderID, "u2", ""); st != 404 {
		t.Errorf("other user's read: %d, want 404", st)
	}
}

func mustDist(t *testing.T, s string) behavior.Distribution {
	t.Helper()
	d, err := behavior.ParseDistribution(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestConfigErrorsStopStartUp(t *testing.T) {
	tests := []struct {
		name, yml, key string
	}{
		{"retry attempts", "pg:\n  retry-max-attempts: 0\n", "pg.retry-max-attempts"},
		{"retry wait", "pg:\n  retry-wait: soon\n", "pg.retry-wait"},
		{"retry on rejection", "pg:\n  retry-on-rejection: maybe\n", "pg.retry-on-rejection"},
		{"base url", "pg:\n  base-url: localhost:8082\n", "pg.base-url"},
		{"db latency", "demo:\n  db-latency: -3ms\n", "demo.db-latency"},
		{"threshold", "resilience4j:\n  circuitbreaker:\n    configs:\n      default:\n        failure-rate-threshold: 0\n", "failure-rate-threshold"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := springconf.Parse("bad.yml", []byte(tc.yml), springconf.YAML)
			if err == nil {
				_, err = New(Config{Spring: f}, nil)
			}
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), tc.key) {
				t.Errorf("error %q does not name %s", err, tc.key)
			}
			var ec interface{ ExitCode() int }
			if !errors.As(err, &ec) || ec.ExitCode() != 2 {
				t.Errorf("error %v has no ExitCode 2", err)
			}
		})
	}
}

func TestActuatorExposureAndUpdateState(t *testing.T) {
	f := mustParse(t, `
resilience4j:
  circuitbreaker:
    configs:
      default:
        register-health-indicator: true
    instances:
      pg-simulator:
        failure-rate-threshold: 30
        allow-health-indicator-to-fail: true
management:
  endpoints:
    web:
      exposure:
        include: health,circuitbreakers,circuitbreakerevents
  health:
    circuitbreakers:
      enabled: true
  endpoint:
    health:
      show-details: always
pg:
  base-url: http://127.0.0.1:1
`)
	s := startService(t, Config{Spring: f, Speed: 100, DBLatency: NoDBLatency})
	base := s.URL()
	// Eager instance only: the Feign breaker is created on first use.
	_, b := do(t, "GET", base+"/actuator/circuitbreakers", "", "")
	if !strings.Contains(string(b), `"pg-simulator":{"failureRate":"-1.0%","slowCallRate":"-1.0%","failureRateThreshold":"30.0%"`) || strings.Contains(string(b), "PgPaymentClient") {
		t.Errorf("circuitbreakers before first call: %s", b)
	}
	for _, p := range []string{"/actuator/prometheus", "/actuator/retries", "/actuator/timelimiterevents"} {
		if st, _ := do(t, "GET", base+p, "", ""); st != 404 {
			t.Errorf("GET %s: %d, want 404 (not exposed)", p, st)
		}
	}
	tests := []struct {
		name, path, body string
		status           int
		want             string
	}{
		{"force open", "/actuator/circuitbreakers/pg-simulator", `{"updateState":"FORCE_OPEN"}`, 200, `{"circuitBreakerName":"pg-simulator","currentState":"FORCED_OPEN","message":"pg-simulator state has been changed successfully"}`},
		{"unknown name is created", "/actuator/circuitbreakers/other", `{"updateState":"DISABLE"}`, 200, `"currentState":"DISABLED"`},
		{"close", "/actuator/circuitbreakers/pg-simulator", `{"updateState":"CLOSE"}`, 200, `"currentState":"CLOSED"`},
		{"bad state", "/actuator/circuitbreakers/pg-simulator", `{"updateState":"OPEN"}`, 400, `"status":400`},
		{"bad body", "/actuator/circuitbreakers/pg-simulator", `nope`, 400, `"error":"Bad Request"`},
		{"Feign name, escaped", "/actuator/circuitbreakers/PgPaymentClient%23requestPayment(String,PaymentRequest)", `{"updateState":"FORCE_OPEN"}`, 200, `"circuitBreakerName":"` + FeignName + `"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st, b := do(t, "POST", base+tc.path, "", tc.body)
			if st != tc.status || !strings.Contains(string(b), tc.want) {
				t.Errorf("got %d %s, want %d containing %s", st, b, tc.status, tc.want)
			}
		})
	}
	// A forced-open Feign breaker rejects payments without reaching the gateway.
	st, b := payOnce(t, base)
	if st != 503 || !strings.Contains(string(b), CodeCircuitOpen) {
		t.Errorf("payment with FORCED_OPEN breaker: %d %s", st, b)
	}
	_, evs := do(t, "GET", base+"/actuator/circuitbreakerevents/pg-simulator/state_transition", "", "")
	want := []string{"CLOSED_TO_FORCED_OPEN", "FORCED_OPEN_TO_CLOSED"}
	var ev struct {
		CircuitBreakerEvents []struct{ StateTransition string } `json:"circuitBreakerEvents"`
	}
	if err := json.Unmarshal(evs, &ev); err != nil || len(ev.CircuitBreakerEvents) != 2 ||
		ev.CircuitBreakerEvents[0].StateTransition != want[0] || ev.CircuitBreakerEvents[1].StateTransition != want[1] {
		t.Errorf("filtered events %s, want %v", evs, want)
	}
	if st, _ := do(t, "GET", base+"/actuator/circuitbreakerevents/pg-simulator/BOGUS", "", ""); st != 500 {
		t.Errorf("unknown event type: %d, want 500", st)
	}
	// Health: FORCED_OPEN is UNKNOWN, CLOSED (pg-simulator) is UP, DISABLED 'other' is UNKNOWN: component UP.
	st, hb := do(t, "GET", base+"/actuator/health/circuitBreakers", "", "")
	if st != 200 || !strings.HasPrefix(string(hb), `{"status":"UP","details":{`) || !strings.Contains(string(hb), `"`+FeignName+`":{"status":"UNKNOWN"`) {
		t.Errorf("health/circuitBreakers: %d %s", st, hb)
	}
}

// TestHealthDownWhenAllowedToFail: an OPEN breaker with allow-health-indicator-to-fail makes the app DOWN (503).
func TestHealthDownWhenAllowedToFail(t *testing.T) {
	f := mustParse(t, `
resilience4j:
  circuitbreaker:
    instances:
      pgsim:
        register-health-indicator: true
        allow-health-indicator-to-fail: true
management:
  health:
    circuitbreakers:
      enabled: true
`)
	s := startService(t, Config{Spring: f, Speed: 100, DBLatency: NoDBLatency, PGBaseURL: "http://127.0.0.1:1"})
	cb := s.BreakerNamed("pgsim")
	if cb == nil {
		t.Fatal("eager instance pgsim missing")
	}
	if st, b := do(t, "GET", s.URL()+"/actuator/health", "", ""); st != 200 || string(b) != `{"status":"UP"}` {
		t.Errorf("closed: %d %s", st, b)
	}
	if err := cb.TransitionTo(breaker.StateOpen); err != nil {
		t.Fatal(err)
	}
	if st, b := do(t, "GET", s.URL()+"/actuator/health", "", ""); st != 503 || string(b) != `{"status":"DOWN"}` {
		t.Errorf("open: %d %s, want 503 DOWN", st, b)
	}
}
