package collect

import (
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cbprobe/cbprobe/internal/testref"
)

func fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testref.FixturesDir(t), name))
	if err != nil {
		t.Fatalf("read fixture: %v", err)
	}
	return b
}

func TestActuatorBreakerFixtures(t *testing.T) {
	tests := []struct {
		file                 string
		state                string
		fail, slow           float64
		failTh, slowTh       float64
		buffered, failed     float64
		slowCalls, notPermit float64
	}{
		{"actuator-circuitbreakers-nbicocchi-sb3-open.json", "OPEN", 100, 0, 50, 100, 5, 5, 0, 0},
		{"actuator-circuitbreakers-nbicocchi-sb3-half-open.json", "HALF_OPEN", -1, -1, 50, 100, 0, 0, 0, 0},
		{"actuator-circuitbreakers-nbicocchi-sb3-closed.json", "CLOSED", -1, -1, 50, 100, 0, 0, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			got, names, err := ParseCircuitBreakers(fixture(t, tc.file))
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 || got[0].Name != "time" || len(names) != 1 {
				t.Fatalf("want one breaker 'time', got %+v", got)
			}
			b := got[0]
			if b.State != tc.state || b.FailureRate != tc.fail || b.SlowCallRate != tc.slow ||
				b.FailureRateThreshold != tc.failTh || b.SlowCallRateThreshold != tc.slowTh ||
				b.Buffered != tc.buffered || b.Failed != tc.failed || b.Slow != tc.slowCalls || b.NotPermitted != tc.notPermit {
				t.Errorf("got %+v", b)
			}
		})
	}
}

func TestActuatorNameListForm(t *testing.T) {
	samples, names, err := ParseCircuitBreakers([]byte(`{"circuitBreakers":["backendB","backendA"]}`))
	if err != nil || samples != nil || len(names) != 2 || names[0] != "backendA" {
		t.Fatalf("got %v %v %v", samples, names, err)
	}
}

func TestHealthFixture(t *testing.T) {
	got, err := ParseHealth(fixture(t, "actuator-health-selimhorri-sb2.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Name != "proxyService" || got[0].State != "CLOSED" || got[0].FailureRate != -1 ||
		got[0].FailureRateThreshold != 50 || got[0].SlowCallRateThreshold != 100 || got[0].Buffered != 0 {
		t.Fatalf("got %+v", got)
	}
	// The component endpoint (/actuator/health/circuitBreakers) has the same details one level up.
	comp := `{"status":"UP","details":{"pg":{"status":"CIRCUIT_OPEN","details":{"failureRate":"65.0%","failureRateThreshold":"60.0%","slowCallRate":"40.0%","slowCallRateThreshold":"50.0%","bufferedCalls":20,"slowCalls":8,"slowFailedCalls":0,"failedCalls":13,"notPermittedCalls":3,"state":"OPEN"}}}}`
	got, err = ParseHealth([]byte(comp))
	if err != nil || len(got) != 1 || got[0].State != "OPEN" || got[0].FailureRate != 65 || got[0].NotPermitted != 3 {
		t.Fatalf("component form: %+v %v", got, err)
	}
}

func TestEventFixtures(t *testing.T) {
	evs, err := ParseCircuitBreakerEvents(fixture(t, "actuator-circuitbreakerevents-resilience4j-demo-2017.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 4 {
		t.Fatalf("want 4 events, got %d", len(evs))
	}
	berlin := time.FixedZone("+01:00", 3600)
	want := time.Date(2017, 1, 10, 15, 39, 22, 341e6, berlin)
	if evs[2].Type != "STATE_TRANSITION" || evs[2].StateTransition != "CLOSED_TO_OPEN" || !evs[2].CreationTime.Equal(want) {
		t.Errorf("transition event: %+v", evs[2])
	}
	if evs[0].Type != "ERROR" || evs[0].DurationMs != 0 || evs[0].ErrorMessage != "org.springframework.web.client.HttpServerErrorException: 500 This is a remote exception" {
		t.Errorf("error event: %+v", evs[0])
	}
	if evs[3].Type != "NOT_PERMITTED" || evs[3].DurationMs != -1 {
		t.Errorf("not permitted event: %+v", evs[3])
	}
	rs, err := ParseRetryEvents(fixture(t, "actuator-retryevents-nbicocchi-sb3.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 3 || rs[2].Type != "ERROR" || rs[2].NumberOfAttempts != 3 || rs[0].Name != "time" ||
		!rs[0].CreationTime.Equal(time.Date(2024, 10, 15, 13, 22, 48, 477677565, time.UTC)) {
		t.Fatalf("retry events: %+v", rs)
	}
}

func TestParseJavaTime(t *testing.T) {
	tests := []struct {
		name, in string
		want     time.Time
	}{
		{"nanos utc zone", "2024-10-15T13:22:48.477677565Z[Etc/UTC]", time.Date(2024, 10, 15, 13, 22, 48, 477677565, time.UTC)},
		{"no seconds", "2017-01-10T15:39Z[Etc/UTC]", time.Date(2017, 1, 10, 15, 39, 0, 0, time.UTC)},
		{"offset no zone", "2022-07-14T12:20:51.352136+05:30", time.Date(2022, 7, 14, 6, 50, 51, 352136000, time.UTC)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseJavaTime(tc.in)
			if err != nil || !got.Equal(tc.want) {
				t.Fatalf("ParseJavaTime(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
			}
		})
	}
	if _, err := ParseJavaTime("yesterday"); err == nil {
		t.Fatal("want error")
	}
}

func TestPrometheusFixtures(t *testing.T) {
	t.Run("selimhorri sb2 simpleclient", func(t *testing.T) {
		res, err := ParsePrometheusText(fixture(t, "prometheus-selimhorri-ecommerce-sb2.txt"))
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Breakers) != 1 {
			t.Fatalf("breakers: %+v", res.Breakers)
		}
		b := res.Breakers[0]
		if b.Name != "proxyService" || b.State != "CLOSED" || b.FailureRate != -1 || b.SlowCallRate != -1 ||
			b.Buffered != 0 || b.Failed != 0 || b.NotPermittedTotal != 0 || b.CallsSuccessful != 0 || !math.IsNaN(b.FailureRateThreshold) {
			t.Errorf("got %+v", b)
		}
		if res.ProcessStart != 1.64088634006e9 || res.DroppedLines != 0 {
			t.Errorf("process start %v, dropped %d", res.ProcessStart, res.DroppedLines)
		}
	})
	t.Run("datadog legacy with repeated HELP", func(t *testing.T) {
		res, err := ParsePrometheusText(fixture(t, "prometheus-datadog-integrations-extras-legacy.txt"))
		if err != nil {
			t.Fatal(err)
		}
		if res.DroppedLines != 2 {
			t.Errorf("dropped %d repeated lines, want 2 (HELP and TYPE of calls_seconds)", res.DroppedLines)
		}
		b := res.Breakers[0]
		if len(res.Breakers) != 1 || b.Name != "backendA" || b.State != "CLOSED" || b.FailureRate != 20 ||
			b.NotPermittedTotal != 1 || b.Buffered != 0 || !math.IsNaN(b.SlowCallRate) {
			t.Errorf("breaker %+v", b)
		}
		if len(res.Retries) != 1 || res.Retries[0].Name != "backendA" {
			t.Errorf("retries %+v", res.Retries)
		}
		if len(res.Limiters) != 1 || res.Limiters[0].Timeout != 0 {
			t.Errorf("limiters %+v", res.Limiters)
		}
	})
	t.Run("dependency-track retry only", func(t *testing.T) {
		res, err := ParsePrometheusText(fixture(t, "prometheus-dependency-track-retry.txt"))
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Retries) != 1 {
			t.Fatalf("retries %+v", res.Retries)
		}
		r := res.Retries[0]
		if r.Name != "snyk-api" || r.SuccessfulWithRetry != 42 || r.SuccessfulWithoutRetry != 9014 || r.FailedWithRetry != 0 {
			t.Errorf("got %+v", r)
		}
	})
}

func TestPrometheusNewGeneration(t *testing.T) {
	text := `# HELP resilience4j_circuitbreaker_state The states of the circuit breaker
# TYPE resilience4j_circuitbreaker_state gauge
resilience4j_circuitbreaker_state{group="none",name="pg",state="closed"} 0.0
resilience4j_circuitbreaker_state{group="none",name="pg",state="open"} 1.0
resilience4j_circuitbreaker_failure_rate{name="pg"} 33.33333206176758
resilience4j_circuitbreaker_slow_call_rate{name="pg"} 66.66666412353516
# TYPE resilience4j_circuitbreaker_calls_seconds summary
resilience4j_circuitbreaker_calls_seconds_count{kind="failed",name="pg"} 5
resilience4j_circuitbreaker_calls_seconds_sum{kind="failed",name="pg"} 0.036
resilience4j_circuitbreaker_buffered_calls{kind="failed",name="pg"} 1.0
resilience4j_circuitbreaker_buffered_calls{kind="successful",name="pg"} 2.0
resilience4j_circuitbreaker_slow_calls{kind="failed",name="pg"} 1.0
resilience4j_circuitbreaker_slow_calls{kind="successful",name="pg"} 1.0
# TYPE resilience4j_timelimiter_calls_total counter
resilience4j_timelimiter_calls_total{kind="timeout",name="pg"} 3.0
`
	res, err := ParsePrometheusText([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	b := res.Breakers[0]
	if b.State != "OPEN" || float32(b.FailureRate) != float32(100.0/3) || b.CallsFailed != 5 || b.Buffered != 3 || b.Failed != 1 || b.Slow != 2 || b.SlowFailed != 1 {
		t.Fatalf("got %+v", b)
	}
	if res.Limiters[0].Timeout != 3 {
		t.Fatalf("limiter %+v", res.Limiters)
	}
}

func TestBadBodies(t *testing.T) {
	tests := []struct {
		name string
		body string
	}{
		{"empty", ""},
		{"html", "<html><body>Whitelabel Error Page</body></html>"},
		{"garbage", "\x00\x01garbage"},
		{"truncated json", `{"circuitBreakers":{"pg":{"failureRate":"10`},
		{"bad state", `{"circuitBreakers":{"pg":{"state":"AJAR"}}}`},
		{"bad percent", `{"circuitBreakers":{"pg":{"failureRate":"lots%","state":"OPEN"}}}`},
		{"json array", `[1,2]`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, _, err := ParseCircuitBreakers([]byte(tc.body)); err == nil {
				t.Error("circuitbreakers: want error")
			}
			if _, err := ParseCircuitBreakerEvents([]byte(tc.body)); err == nil {
				t.Error("events: want error")
			}
			if _, err := ParsePrometheusText([]byte(tc.body)); err == nil {
				t.Error("prometheus: want error")
			}
		})
	}
	if _, err := ParsePrometheusText([]byte("resilience4j_circuitbreaker_state{name=\"pg\",state=\"open\"} 1")); err == nil {
		t.Error("prometheus: truncated last line without newline: want error")
	}
}

func nan() float64 { return math.NaN() }
