package collect

import (
	"os"
	"path/filepath"
	"testing"
)

// TestReadsSpringBoot4Captures reads what the Spring Boot 4.0.7 build of
// examples/spring-commerce answered after 22 payments into a gateway failing every
// call (testdata/spring-boot4, captured on 2026-12-01): Jackson 3 writes keys in
// alphabetical order and the stateTransition enum with its toString(), "State
// transition from CLOSED to OPEN", which an older cbprobe refused as malformed.
func TestReadsSpringBoot4Captures(t *testing.T) {
	const name = "PgPaymentClient#requestPayment(String,PaymentRequest)"
	read := func(f string) []byte {
		t.Helper()
		b, err := os.ReadFile(filepath.Join("testdata", "spring-boot4", f))
		if err != nil {
			t.Fatalf("the Spring Boot 4 capture is missing: %v", err)
		}
		return b
	}
	events, err := ParseCircuitBreakerEvents(read("circuitbreakerevents.json"))
	if err != nil {
		t.Fatalf("circuitbreakerevents: %v", err)
	}
	var transitions []string
	for _, e := range events {
		if e.Type == "STATE_TRANSITION" {
			transitions = append(transitions, e.StateTransition)
		}
	}
	if len(transitions) != 1 || transitions[0] != "CLOSED_TO_OPEN" {
		t.Errorf("transitions %q, want [CLOSED_TO_OPEN]", transitions)
	}
	cbs, _, err := ParseCircuitBreakers(read("circuitbreakers.json"))
	if err != nil || len(cbs) != 1 || cbs[0].Name != name || cbs[0].State != "OPEN" || cbs[0].Failed != 20 {
		t.Errorf("circuitbreakers: %+v, %v; want %s OPEN with 20 failed calls", cbs, err, name)
	}
	health, err := ParseHealth(read("health.json"))
	if err != nil || len(health) != 1 || health[0].State != "OPEN" {
		t.Errorf("health: %+v, %v; want one OPEN breaker", health, err)
	}
	for _, f := range []struct {
		file  string
		parse func([]byte) ([]Event, error)
	}{{"timelimiterevents.json", ParseTimeLimiterEvents}, {"retryevents.json", ParseRetryEvents}} {
		if evs, err := f.parse(read(f.file)); err != nil || len(evs) == 0 {
			t.Errorf("%s: %d events, %v", f.file, len(evs), err)
		}
	}
	prom, err := ParsePrometheusText(read("prometheus.txt"))
	if err != nil || len(prom.Breakers) != 1 || prom.Breakers[0].State != "OPEN" || prom.Breakers[0].NotPermittedTotal != 2 {
		t.Errorf("prometheus: %+v, %v; want one OPEN breaker with 2 refusals", prom.Breakers, err)
	}
}
