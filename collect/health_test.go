package collect

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestHealthLayouts: every /health layout gives the breakers and only them.
func TestHealthLayouts(t *testing.T) {
	tests := []struct {
		name  string
		body  []byte
		want  string // "name=STATE ..." sorted by name
		check func(t *testing.T, bs []BreakerSample)
	}{
		{"spring boot 2.0 resilience4j 0.x one indicator a breaker", testdata(t, "health-sb20-per-breaker.json"), "backendA=OPEN backendB=CLOSED",
			func(t *testing.T, bs []BreakerSample) {
				if a := bs[0]; a.FailureRate != 60 || a.FailureRateThreshold != 50 || a.Buffered != 10 || a.Failed != 6 || a.NotPermitted != 3 {
					t.Errorf("backendA %+v", a)
				}
			}},
		{"spring boot 2.1 resilience4j 1.x (2019)", testdata(t, "health-sb21-r4j-1x.json"), "backendA=CLOSED backendB=OPEN",
			func(t *testing.T, bs []BreakerSample) {
				if b := bs[1]; b.FailureRate != 100 || b.NotPermitted != 2 || b.SlowCallRateThreshold != 100 {
					t.Errorf("backendB %+v", b)
				}
			}},
		{"spring boot 1.5 inline details, resilience4j 0.13 without state", []byte(`{"status":"DOWN","backendACircuitBreaker":{"status":"DOWN","failureRate":"70.0%","failureRateThreshold":"50.0%","maxBufferedCalls":10,"bufferedCalls":10,"failedCalls":7,"notPermittedCalls":1},"diskSpace":{"status":"UP","total":1,"free":1,"threshold":1}}`),
			"backendA=OPEN", nil},
		{"spring boot 3 fixture", fixture(t, "actuator-health-selimhorri-sb2.json"), "proxyService=CLOSED", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			bs, err := ParseHealth(tc.body)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, b := range bs {
				got = append(got, b.Name+"="+b.State)
			}
			if strings.Join(got, " ") != tc.want {
				t.Fatalf("breakers %v, want %s", got, tc.want)
			}
			if tc.check != nil {
				tc.check(t, bs)
			}
		})
	}
}

// TestHealthErrorsNameTheCause: hidden details and breakers without a health
// indicator are told apart.
func TestHealthErrorsNameTheCause(t *testing.T) {
	tests := []struct{ name, body, want string }{
		{"status only", `{"status":"UP"}`, "show-details"},
		{"components without details", `{"status":"UP","components":{"circuitBreakers":{"status":"UP"},"diskSpace":{"status":"UP"},"ping":{"status":"UP"}}}`, "show-details"},
		{"no breaker registered", `{"status":"UP","components":{"circuitBreakers":{"status":"UNKNOWN"},"diskSpace":{"status":"UP","details":{"total":1,"free":1,"threshold":1}}}}`, "register-health-indicator"},
		{"no circuitBreakers component", `{"status":"UP","components":{"diskSpace":{"status":"UP","details":{"total":1,"free":1,"threshold":1}},"ping":{"status":"UP"}}}`, "management.health.circuitbreakers.enabled"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseHealth([]byte(tc.body))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one naming %s", err, tc.want)
			}
		})
	}
}

// TestBreakersMissingFromHealth: resilience4j before 2.0 lists names only;
// a listed breaker whose health indicator is off is kept (state unknown) and
// named in a notice, not dropped.
func TestBreakersMissingFromHealth(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/actuator/circuitbreakers":
			fmt.Fprint(w, `{"circuitBreakers":["backendA","backendB","backendC"]}`)
		case "/actuator/health":
			w.Write(testdata(t, "health-sb21-r4j-1x.json"))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	src := NewActuator(srv.URL, HTTPOptions{})
	s := pollOK(t, src)
	var got []string
	for _, b := range s.Breakers {
		got = append(got, b.Name+"="+b.State)
	}
	if strings.Join(got, " ") != "backendA=CLOSED backendB=OPEN backendC=" {
		t.Fatalf("breakers %v", got)
	}
	n := 0
	for _, x := range s.Notices {
		if strings.Contains(x, "backendC") && strings.Contains(x, "register-health-indicator") {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("want one notice naming backendC and register-health-indicator, got %q", s.Notices)
	}
	if s2 := pollOK(t, src); strings.Contains(strings.Join(s2.Notices, "|"), "backendC") {
		t.Errorf("notice repeated: %q", s2.Notices)
	}
}
