package springconf

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cbprobe/cbprobe/breaker"
)

func TestOverlay(t *testing.T) {
	base, err := Parse("reference.yml", ReferenceYAML(), YAML)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		props map[string]string
		check func(t *testing.T, r *Resolved, tl breaker.TimeLimiterConfig, f *File)
	}{
		{"window type and size", map[string]string{
			"resilience4j.circuitbreaker.configs.default.sliding-window-type": "TIME_BASED",
			"resilience4j.circuitbreaker.configs.default.slidingWindowSize":   "10",
		}, func(t *testing.T, r *Resolved, _ breaker.TimeLimiterConfig, _ *File) {
			if r.Config.SlidingWindowType != breaker.TimeBased || r.Config.SlidingWindowSize != 10 {
				t.Errorf("window = %v %d, want TIME_BASED 10", r.Config.SlidingWindowType, r.Config.SlidingWindowSize)
			}
			if r.Config.FailureRateThreshold != 60 {
				t.Errorf("failure threshold = %v, want the base file's 60", r.Config.FailureRateThreshold)
			}
		}},
		{"time limiter", map[string]string{"resilience4j.timelimiter.configs.default.timeout-duration": "1000ms"},
			func(t *testing.T, _ *Resolved, tl breaker.TimeLimiterConfig, _ *File) {
				if tl.TimeoutDuration != time.Second {
					t.Errorf("timeout = %v, want 1s", tl.TimeoutDuration)
				}
			}},
		{"plain property", map[string]string{"pg.retry-max-attempts": "1"},
			func(t *testing.T, _ *Resolved, _ breaker.TimeLimiterConfig, f *File) {
				if v, ok := f.Get("pg.retryMaxAttempts"); !ok || v != "1" {
					t.Errorf("Get = %q, %v; want 1", v, ok)
				}
			}},
		{"bracketed instance", map[string]string{
			"resilience4j.circuitbreaker.instances.[PgPaymentClient#requestPayment(String,PaymentRequest)].failure-rate-threshold": "30",
		}, func(t *testing.T, r *Resolved, _ breaker.TimeLimiterConfig, _ *File) {
			if r.Config.FailureRateThreshold != 30 || r.MatchedInstance == "" {
				t.Errorf("threshold %v matched %q, want 30 from the bracketed instance", r.Config.FailureRateThreshold, r.MatchedInstance)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := base.Overlay("overrides", tc.props)
			if err != nil {
				t.Fatal(err)
			}
			r, err := f.Resolve(DefaultBreakerName)
			if err != nil {
				t.Fatal(err)
			}
			tl, _, err := f.ResolveTimeLimiter(DefaultBreakerName)
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, r, tl, f)
		})
	}
	// The base file is unchanged.
	r, err := base.Resolve(DefaultBreakerName)
	if err != nil || r.Config.SlidingWindowType != breaker.CountBased || r.Config.SlidingWindowSize != 20 {
		t.Errorf("base changed: %+v, %v", r, err)
	}
}

func TestOverlayValidates(t *testing.T) {
	base, err := Parse("reference.yml", ReferenceYAML(), YAML)
	if err != nil {
		t.Fatal(err)
	}
	_, err = base.Overlay("arm x", map[string]string{"resilience4j.circuitbreaker.configs.default.failure-rate-threshold": "0"})
	var se *Error
	if !errors.As(err, &se) || !strings.Contains(err.Error(), "failure-rate-threshold") || !strings.Contains(err.Error(), "arm x") {
		t.Fatalf("Overlay error = %v, want an *Error naming the key and the source", err)
	}
}

func TestOverlayIsNotADuplicate(t *testing.T) {
	base, err := Parse("reference.yml", ReferenceYAML(), YAML)
	if err != nil {
		t.Fatal(err)
	}
	f, err := base.Overlay("arm", map[string]string{"resilience4j.circuitbreaker.configs.default.sliding-window-size": "10"})
	if err != nil {
		t.Fatal(err)
	}
	for _, fd := range Lint(f, LintOptions{}) {
		if fd.ID == "duplicate-setting" {
			t.Errorf("overlay reported as a duplicate: %v", fd)
		}
	}
}
