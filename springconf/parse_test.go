package springconf

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestParseDuration(t *testing.T) {
	tests := []struct {
		in      string
		want    time.Duration
		wantErr bool
	}{
		{"100ms", 100 * time.Millisecond, false},
		{"10s", 10 * time.Second, false},
		{"1m", time.Minute, false},
		{"2h", 2 * time.Hour, false},
		{"1d", 24 * time.Hour, false},
		{"250", 250 * time.Millisecond, false},
		{"0", 0, false},
		{"-5s", -5 * time.Second, false},
		{"+5s", 5 * time.Second, false},
		{"10S", 10 * time.Second, false},
		{"500us", 500 * time.Microsecond, false},
		{"7ns", 7, false},
		{" 10s ", 10 * time.Second, false},
		{"PT0.5S", 500 * time.Millisecond, false},
		{"pt10s", 10 * time.Second, false},
		{"PT1M30S", 90 * time.Second, false},
		{"P1DT2H", 26 * time.Hour, false},
		{"PT-0.5S", -500 * time.Millisecond, false},
		{"-PT1S", -time.Second, false},
		{"PT0,25S", 250 * time.Millisecond, false},
		{"PT0.000000001S", 1, false},
		{"0.5s", 0, true},
		{"1.5m", 0, true},
		{"10 s", 0, true},
		{"10sec", 0, true},
		{"10w", 0, true},
		{"", 0, true},
		{"ms", 0, true},
		{"PT", 0, true},
		{"P", 0, true},
		{"PT1S1M", 0, true},
		{"P1H", 0, true},
		{"PT1.5M", 0, true},
		{"PT0.0000000001S", 0, true},
		{"99999999999999999999s", 0, true},
		{"PT9999999999999H", 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseDuration(tc.in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("ParseDuration(%q) error = %v, wantErr %v", tc.in, err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("ParseDuration(%q) = %v, want %v", tc.in, got, tc.want)
			}
		})
	}
}

func TestValidationErrors(t *testing.T) {
	tests := []struct {
		name   string
		format Format
		data   string
		want   string
	}{
		{"failure rate 0", YAML, "resilience4j:\n  circuitbreaker:\n    configs:\n      default:\n        failure-rate-threshold: 0\n",
			"app.yml:5: resilience4j.circuitbreaker.configs.default.failure-rate-threshold: 0 is not in 1..100"},
		{"failure rate 0.5 (Spring is stricter than the builder)", YAML, "resilience4j.circuitbreaker.configs.default.failureRateThreshold: 0.5\n",
			"app.yml:1: resilience4j.circuitbreaker.configs.default.failure-rate-threshold: 0.5 is not in 1..100"},
		{"slow rate 101", Properties, "# c\nresilience4j.circuitbreaker.instances.[A#b()].slow-call-rate-threshold=101\n",
			"app.yml:2: resilience4j.circuitbreaker.instances[A#b()].slow-call-rate-threshold: 101 is not in 1..100"},
		{"wait 0", YAML, "resilience4j.circuitbreaker.instances.pg.wait-duration-in-open-state: 0\n",
			"app.yml:1: resilience4j.circuitbreaker.instances.pg.wait-duration-in-open-state: 0 must be at least 1ms"},
		{"wait below a millisecond", YAML, "resilience4j.circuitbreaker.instances.pg.wait-duration-in-open-state: 999us\n",
			"app.yml:1: resilience4j.circuitbreaker.instances.pg.wait-duration-in-open-state: 999us must be at least 1ms"},
		{"slow duration 0", YAML, "resilience4j.circuitbreaker.instances.pg.slow-call-duration-threshold: 0s\n",
			"app.yml:1: resilience4j.circuitbreaker.instances.pg.slow-call-duration-threshold: 0s must be at least 1ns"},
		{"window 0", YAML, "resilience4j.circuitbreaker.configs.default.sliding-window-size: 0\n",
			"app.yml:1: resilience4j.circuitbreaker.configs.default.sliding-window-size: 0 must be at least 1"},
		{"not a number", YAML, "resilience4j.circuitbreaker.configs.default.minimum-number-of-calls: ten\n",
			`app.yml:1: resilience4j.circuitbreaker.configs.default.minimum-number-of-calls: "ten" is not an integer`},
		{"bad window type", YAML, "resilience4j.circuitbreaker.configs.default.sliding-window-type: SESSION\n",
			`app.yml:1: resilience4j.circuitbreaker.configs.default.sliding-window-type: "SESSION" is not one of COUNT_BASED, TIME_BASED`},
		{"transition to HALF_OPEN", YAML, "resilience4j.circuitbreaker.configs.default.transition-to-state-after-wait-duration: HALF_OPEN\n",
			"app.yml:1: resilience4j.circuitbreaker.configs.default.transition-to-state-after-wait-duration: HALF_OPEN must be OPEN or CLOSED"},
		{"fractional simple duration", YAML, "resilience4j.timelimiter.configs.default.timeout-duration: 0.5s\n",
			`app.yml:1: resilience4j.timelimiter.configs.default.timeout-duration: "0.5s" is not a duration`},
		{"negative timeout", YAML, "resilience4j.timelimiter.configs.default.timeout-duration: -1s\n",
			"app.yml:1: resilience4j.timelimiter.configs.default.timeout-duration: -1s must not be negative"},
		{"max attempts 0", YAML, "resilience4j:\n  retry:\n    instances:\n      pg:\n        maxAttempts: 0\n",
			"app.yml:5: resilience4j.retry.instances.pg.max-attempts: 0 must be at least 1"},
		{"randomized factor 1", YAML, "resilience4j.retry.configs.default.randomized-wait-factor: 1\n",
			"app.yml:1: resilience4j.retry.configs.default.randomized-wait-factor: 1 is not in [0, 1)"},
		{"buffer 0", YAML, "resilience4j.circuitbreaker.configs.default.event-consumer-buffer-size: 0\n",
			"app.yml:1: resilience4j.circuitbreaker.configs.default.event-consumer-buffer-size: 0 must be at least 1"},
		{"bad boolean", YAML, "resilience4j.circuitbreaker.configs.default.register-health-indicator: maybe\n",
			`app.yml:1: resilience4j.circuitbreaker.configs.default.register-health-indicator: "maybe" is not a boolean (want true or false)`},
		{"exponential and randomized", YAML, "resilience4j.circuitbreaker.configs.default:\n  enable-exponential-backoff: true\n  enable-randomized-wait: true\n",
			"app.yml:3: resilience4j.circuitbreaker.configs.default.enable-randomized-wait: enable-exponential-backoff and enable-randomized-wait cannot both be true"},
		{"YAML syntax", YAML, "a:\n  b: [1,\n", "app.yml:2: YAML: did not find expected node content"},
		{"duplicate YAML key", YAML, "a:\n  b: 1\n  b: 2\n", "app.yml:3: a.b: duplicate YAML key (first at line 2)"},
		{"unclosed bracket", Properties, "a.[b.c=1\n", "app.yml:1: a.[b.c: unclosed '['"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("app.yml", []byte(tc.data), tc.format)
			if err == nil {
				t.Fatalf("no error, want %q", tc.want)
			}
			if !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("error\n got %q\nwant %q...", err.Error(), tc.want)
			}
			var e *Error
			if !errors.As(err, &e) || e.ExitCode() != 2 {
				t.Errorf("error is not an *Error with exit code 2: %T", err)
			}
		})
	}
}

func TestParseAllErrorsReported(t *testing.T) {
	_, err := Parse("a.yml", []byte("resilience4j.circuitbreaker.configs.default:\n  failure-rate-threshold: 0\n  sliding-window-size: 0\n"), YAML)
	if err == nil || strings.Count(err.Error(), "\n") != 1 {
		t.Fatalf("want two errors, got %v", err)
	}
}

func TestPropertiesSyntax(t *testing.T) {
	data := "# comment\n  ! also a comment\nkey1=a\\\n   b\\\n  c\nkey2 : spaced value  \nkey3 plain\nkey4=\\u0041\\tx\nkey\\ 5=y\nempty=\n\nlast=end\\\n"
	f, err := Parse("x.properties", []byte(data), Properties)
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{"key1": "abc", "key2": "spaced value  ", "key3": "plain", "key4": "A\tx", "key 5": "y", "empty": "", "last": "end"} {
		if got, ok := f.Get(k); !ok || got != want {
			t.Errorf("Get(%q) = %q %v, want %q", k, got, ok, want)
		}
	}
}

func TestExposureAsListOrString(t *testing.T) {
	tests := []struct {
		name   string
		format Format
		data   string
		want   []string
	}{
		{"YAML list", YAML, "management.endpoints.web.exposure.include: [health, prometheus]\n", []string{"health", "prometheus"}},
		{"YAML string", YAML, "management:\n  endpoints:\n    web:\n      exposure:\n        include: health, prometheus\n", []string{"health", "prometheus"}},
		{"properties string", Properties, "management.endpoints.web.exposure.include=health,prometheus\n", []string{"health", "prometheus"}},
		{"properties indexed", Properties, "management.endpoints.web.exposure.include[1]=prometheus\nmanagement.endpoints.web.exposure.include[0]=health\n", []string{"health", "prometheus"}},
		{"default", YAML, "a: 1\n", []string{"health"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Parse("x", []byte(tc.data), tc.format)
			if err != nil {
				t.Fatal(err)
			}
			got := f.Management().ExposureInclude
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestYAMLFeatures(t *testing.T) {
	data := `base: &b
  failure-rate-threshold: 70
resilience4j:
  circuitbreaker:
    configs:
      default:
        <<: *b
        sliding-window-size: 11
---
spring:
  config:
    activate:
      on-profile: prod
resilience4j.circuitbreaker.configs.default.sliding-window-size: 99
`
	f, err := Parse("x.yml", []byte(data), YAML)
	if err != nil {
		t.Fatal(err)
	}
	r, err := f.Resolve("x")
	if err != nil {
		t.Fatal(err)
	}
	if r.Config.FailureRateThreshold != 70 || r.Config.SlidingWindowSize != 11 {
		t.Errorf("failure %v window %d, want 70 11 (merge key read, profile document skipped)", r.Config.FailureRateThreshold, r.Config.SlidingWindowSize)
	}
	var skipped bool
	for _, fd := range Lint(f, LintOptions{}) {
		skipped = skipped || fd.ID == "profile-document-skipped"
	}
	if !skipped {
		t.Error("no profile-document-skipped finding")
	}
}

func TestLoadErrors(t *testing.T) {
	if _, err := Load("testdata/nothing.yml"); err == nil || !strings.Contains(err.Error(), "testdata/nothing.yml: read:") {
		t.Errorf("missing file: %v", err)
	}
	if _, err := Load("testdata/app.json"); err == nil || !strings.Contains(err.Error(), "unknown file type") {
		t.Errorf("bad extension: %v", err)
	}
}

func TestEmptyBoundKeyIsUnknown(t *testing.T) {
	f, err := Parse("e.yml", []byte("resilience4j.circuitbreaker.instances:\n  \"#()\":\n    failure-rate-threshold: 30\n"), YAML)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(f.InstanceNames("circuitbreaker")); n != 0 {
		t.Errorf("%d instances, want 0", n)
	}
	fd, ok := has(Lint(f, LintOptions{}), "unknown-key")
	if !ok || !strings.Contains(fd.Message, "empty after Spring drops") || fd.Line != 2 {
		t.Errorf("finding %+v", fd)
	}
}
