package demo

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestBoot4Rendering: with Boot4 the demo answers as the Spring Boot 4.0.7 build of
// examples/spring-commerce does (collect/testdata/spring-boot4): the transition enum's
// toString() and the liveness and readiness probes; without it, as Boot 3.5.7.
func TestBoot4Rendering(t *testing.T) {
	ev := []CBEventView{{Breaker: "pg", Type: "STATE_TRANSITION", Time: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC), StateTransition: "HALF_OPEN_TO_OPEN"}}
	for _, tc := range []struct {
		boot4           bool
		transition      string
		probes, noProbe []string
	}{
		{true, `"stateTransition":"State transition from HALF_OPEN to OPEN"`, []string{"livenessState", "readinessState", `"groups":["liveness","readiness"]`}, nil},
		{false, `"stateTransition":"HALF_OPEN_TO_OPEN"`, nil, []string{"livenessState", "readinessState", "groups"}},
	} {
		if got := string(RenderCBEvents(ev, DefaultZone(), tc.boot4)); !strings.Contains(got, tc.transition) || !json.Valid([]byte(got)) {
			t.Errorf("boot4=%v: events %s, want %s", tc.boot4, got, tc.transition)
		}
		body, _ := RenderHealth(nil, HealthOptions{ShowComponents: true, ShowDetails: true, Boot4: tc.boot4})
		if !json.Valid(body) {
			t.Fatalf("boot4=%v: health is not JSON: %s", tc.boot4, body)
		}
		for _, p := range tc.probes {
			if !strings.Contains(string(body), p) {
				t.Errorf("boot4=%v: health %s lacks %s", tc.boot4, body, p)
			}
		}
		for _, p := range tc.noProbe {
			if strings.Contains(string(body), p) {
				t.Errorf("boot4=%v: health %s has %s", tc.boot4, body, p)
			}
		}
	}
}
