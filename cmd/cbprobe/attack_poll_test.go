package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/cbprobe/cbprobe/demo"
	"github.com/cbprobe/cbprobe/results"
)

// trippingService opens its "breaker" after `after` payments (by slow-call
// rate, as the actuator and its events say) and rejects every payment after.
type trippingService struct {
	mu       sync.Mutex
	after    int
	payments int
	openedAt time.Time
}

func (s *trippingService) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/v1/orders", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`{"orderId":"o-1"}`))
	})
	mux.HandleFunc("POST /api/v1/payments", func(w http.ResponseWriter, _ *http.Request) {
		s.mu.Lock()
		open := !s.openedAt.IsZero()
		if !open {
			s.payments++
			if s.payments == s.after {
				s.openedAt = time.Now()
			}
		}
		s.mu.Unlock()
		if open {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"code":"CIRCUIT_OPEN"}`))
			return
		}
		_, _ = w.Write([]byte(`{"status":"SUCCESS"}`))
	})
	mux.HandleFunc("GET /actuator/circuitbreakers", func(w http.ResponseWriter, _ *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		state, fr, sr, buf := "CLOSED", "-1.0%", "-1.0%", s.payments
		if !s.openedAt.IsZero() {
			state, fr, sr = "OPEN", "30.0%", "70.0%"
		}
		fmt.Fprintf(w, `{"circuitBreakers":{"pg":{"failureRate":%q,"slowCallRate":%q,"failureRateThreshold":"60.0%%",`+
			`"slowCallRateThreshold":"50.0%%","bufferedCalls":%d,"failedCalls":6,"slowCalls":14,"slowFailedCalls":0,`+
			`"notPermittedCalls":0,"state":%q}}}`, fr, sr, buf, state)
	})
	mux.HandleFunc("GET /actuator/circuitbreakerevents", func(w http.ResponseWriter, _ *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		var ev []demo.CBEventView
		if !s.openedAt.IsZero() {
			ev = []demo.CBEventView{
				{Breaker: "pg", Type: "SLOW_CALL_RATE_EXCEEDED", Time: s.openedAt},
				{Breaker: "pg", Type: "STATE_TRANSITION", Time: s.openedAt, StateTransition: "CLOSED_TO_OPEN"},
			}
		}
		_, _ = w.Write(demo.RenderCBEvents(ev, demo.DefaultZone(), false))
	})
	mux.HandleFunc("GET /", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNotFound) })
	return mux
}

// TestAttackPollsBreaker runs an attack with --actuator against a service
// whose breaker opens after 20 payments: the run records samples, the
// CLOSED→OPEN transition with its cause, and the first OPEN request.
func TestAttackPollsBreaker(t *testing.T) {
	svc := &trippingService{after: 20}
	srv := httptest.NewServer(svc.handler())
	defer srv.Close()
	dir := filepath.Join(t.TempDir(), "run")
	stdout, stderr, code := runCLI(context.Background(), "attack", "--target", srv.URL, "--phases", "40/s:1500ms",
		"--actuator", srv.URL, "--poll-interval", "50ms", "--out", dir)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	rec, err := results.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	arm := rec.Run.Arms[0]
	if arm.Breaker != "pg" || arm.Thresholds.FailureRate != 60 || arm.Thresholds.SlowCallRate != 50 {
		t.Errorf("breaker %q thresholds %+v, want pg 60/50", arm.Breaker, arm.Thresholds)
	}
	if len(rec.Samples) < 5 {
		t.Errorf("%d samples, want one per 50 ms poll", len(rec.Samples))
	}
	if len(arm.Transitions) != 1 {
		t.Fatalf("transitions %+v, want one CLOSED→OPEN", arm.Transitions)
	}
	tr := arm.Transitions[0]
	if tr.From != "CLOSED" || tr.To != "OPEN" || tr.Cause != "slow-call-rate" || tr.Evidence.SlowCallRate != 70 {
		t.Errorf("transition %+v, want CLOSED→OPEN by slow-call-rate at 70%%", tr)
	}
	// Payments are counted in arrival order; at 40/s with sub-millisecond
	// answers arrival order is send order, so the 21st request is the first
	// one after the breaker opened. ±2 allows for two requests overtaking.
	if arm.FirstOpenRequest < 19 || arm.FirstOpenRequest > 23 {
		t.Errorf("first OPEN request %d, want about 21", arm.FirstOpenRequest)
	}
	if arm.FirstRejectedRequest < 19 || arm.FirstRejectedRequest > 23 {
		t.Errorf("first rejected request %d, want about 21", arm.FirstRejectedRequest)
	}
	if got := arm.Totals().Rejected; got < 30 {
		t.Errorf("%d rejected, want the ~40 requests after the 20th", got)
	}
}
