package collect

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// addTestdata adds the named files of this package's testdata as seeds.
func addTestdata(f *testing.F, names ...string) {
	f.Helper()
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join("testdata", n))
		if err != nil {
			f.Fatalf("seed: %v", err)
		}
		f.Add(b)
	}
}

func FuzzActuatorBreakers(f *testing.F) {
	f.Add(fixture(f, "actuator-circuitbreakers-nbicocchi-sb3-open.json"))
	f.Add(fixture(f, "actuator-circuitbreakers-nbicocchi-sb3-closed.json"))
	f.Add(fixture(f, "actuator-circuitbreakers-nbicocchi-sb3-half-open.json"))
	f.Add([]byte(`{"circuitBreakers":["a","b"]}`))
	f.Add([]byte(`{"circuitBreakers":{"pg":{"failureRate":"NaN%","state":"OPEN"}}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		samples, names, err := ParseCircuitBreakers(b)
		if err == nil && samples != nil && len(samples) != len(names) {
			t.Fatalf("%d samples, %d names", len(samples), len(names))
		}
	})
}

func FuzzActuatorEvents(f *testing.F) {
	f.Add(fixture(f, "actuator-circuitbreakerevents-resilience4j-demo-2017.json"))
	f.Add(fixture(f, "actuator-retryevents-nbicocchi-sb3.json"))
	f.Fuzz(func(t *testing.T, b []byte) {
		evs, err := ParseCircuitBreakerEvents(b)
		if err != nil {
			return
		}
		for _, e := range evs {
			if e.Type == "STATE_TRANSITION" {
				if _, _, ok := splitTransition(e.StateTransition); !ok {
					t.Fatalf("accepted bad transition %q", e.StateTransition)
				}
			}
		}
		_, _ = ParseRetryEvents(b)
		_, _ = ParseTimeLimiterEvents(b)
	})
}

func FuzzActuatorHealth(f *testing.F) {
	f.Add(fixture(f, "actuator-health-selimhorri-sb2.json"))
	addTestdata(f, "health-sb20-per-breaker.json", "health-sb21-r4j-1x.json")
	f.Add([]byte(`{"status":"UP"}`))
	f.Add([]byte(`<html><body>Whitelabel Error Page</body></html>`))
	f.Fuzz(func(t *testing.T, b []byte) { _, _ = ParseHealth(b) })
}

func FuzzPrometheusText(f *testing.F) {
	f.Add(fixture(f, "prometheus-datadog-integrations-extras-legacy.txt"))
	f.Add(fixture(f, "prometheus-dependency-track-retry.txt"))
	f.Add(fixture(f, "prometheus-selimhorri-ecommerce-sb2.txt"))
	addTestdata(f, "prom-openmetrics-sb35.txt", "prom-r4j-0.13-exports.txt", "prom-r4j-0.14-micrometer.txt")
	f.Add([]byte("resilience4j_circuitbreaker_state{name=\"pg\",state=\"open\",} 1.0\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		res, err := ParsePrometheusText(b)
		if err == nil && len(res.Breakers)+len(res.Limiters)+len(res.Retries) == 0 {
			t.Fatal("no error but nothing parsed")
		}
	})
}

func FuzzJavaTime(f *testing.F) {
	f.Add("2024-10-15T13:22:48.477677565Z[Etc/UTC]")
	f.Add("2017-01-10T15:39+01:00[Europe/Berlin]")
	f.Add("2024-10-15T13:22:48Z")
	f.Add("2024-10-15T13:22:48.1-05:00")
	f.Add("2024-10-15T13:22:48+01:00[No/Such_Zone]")
	f.Fuzz(func(t *testing.T, s string) { _, _ = ParseJavaTime(s) })
}

// FuzzEventCache checks that the incremental event parser gives exactly what
// parseEvents gives (events and errors) for a sequence of answers, the
// second one parsed with the first one's events cached.
func FuzzEventCache(f *testing.F) {
	cb := fixture(f, "actuator-circuitbreakerevents-resilience4j-demo-2017.json")
	re := fixture(f, "actuator-retryevents-nbicocchi-sb3.json")
	f.Add(cb, cb[:len(cb)/2])
	f.Add(re, re)
	f.Add([]byte(`{"circuitBreakerEvents":[]}`), []byte(` { "circuitBreakerEvents" : [ {"circuitBreakerName":"a","type":"SUCCESS","creationTime":"2024-10-15T13:22:48Z[Etc/UTC]"} ] } `))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		for _, k := range []struct{ key, kind string }{{"circuitBreakerEvents", KindCircuitBreaker}, {"retryEvents", KindRetry}} {
			c := newEventCache(k.key, k.kind)
			for i, body := range [][]byte{a, b, a} {
				want, werr := parseEvents(body, k.key, k.kind)
				got, err := c.parse(body)
				if (werr == nil) != (err == nil) || werr != nil && werr.Error() != err.Error() {
					t.Fatalf("%s answer %d: error %v, want %v", k.key, i, err, werr)
				}
				if len(got) != len(want) {
					t.Fatalf("%s answer %d: %d events, want %d", k.key, i, len(got), len(want))
				}
				for j := range want {
					if !reflect.DeepEqual(got[j], want[j]) {
						t.Fatalf("%s answer %d event %d: %+v, want %+v", k.key, i, j, got[j], want[j])
					}
				}
			}
		}
	})
}
