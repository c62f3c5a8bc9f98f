package springconf

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cbprobe/cbprobe/breaker"
)

// findingSet renders findings as "id severity key:line" for comparison.
func findingSet(fs []Finding) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = fmt.Sprintf("%s %s %s:%d", f.ID, f.Severity, f.Key, f.Line)
	}
	return out
}

func has(fs []Finding, id string) (Finding, bool) {
	for _, f := range fs {
		if f.ID == id {
			return f, true
		}
	}
	return Finding{}, false
}

func TestLintFieldReport(t *testing.T) {
	got := findingSet(Lint(mustLoad(t, "field-report.yml"), LintOptions{}))
	want := []string{
		// The file's timelimiter configs.default ties a TimeLimiter to the breakers without
		// an instance; no retry is in the file, so the retry finding is an assumption (info).
		"timeouts-count-as-slow-failures warning resilience4j.timelimiter.configs.default.timeout-duration:14",
		"health-indicator-not-registered warning resilience4j.circuitbreaker.configs.default.register-health-indicator:0",
		"health-indicator-not-registered warning management.health.circuitbreakers.enabled:0",
		"endpoints-not-exposed warning management.endpoints.web.exposure.include:0",
		"retry-retries-rejections info resilience4j.retry.configs.default.ignore-exceptions:0",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("findings\n got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestLintInstanceKeyLine(t *testing.T) {
	for _, tc := range []struct {
		file, key string
		line      int
		opt       LintOptions
	}{
		{"field-report-pg-simulator.yml", "resilience4j.circuitbreaker.instances.pg-simulator", 14, LintOptions{BreakerName: DefaultBreakerName}},
		{"brackets.properties", "resilience4j.circuitbreaker.instances.PgPaymentClient#cancel(String)", 5, LintOptions{}},
	} {
		f, ok := has(Lint(mustLoad(t, tc.file), tc.opt), "instance-name-never-matches")
		if !ok || f.Key != tc.key || f.Line != tc.line {
			t.Errorf("%s: finding %+v, want key %s line %d", tc.file, f, tc.key, tc.line)
		}
	}
}

func TestLintReferenceIsQuiet(t *testing.T) {
	f, err := Parse("reference.yml", ReferenceYAML(), YAML)
	if err != nil {
		t.Fatal(err)
	}
	no := false
	got := findingSet(Lint(f, LintOptions{RetryOnRejection: &no}))
	want := []string{"timeouts-count-as-slow-failures warning resilience4j.timelimiter.configs.default.timeout-duration:21"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("findings\n got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestLintRules(t *testing.T) {
	yes, no := true, false
	tests := []struct {
		name     string
		file     string
		opt      LintOptions
		id       string // "" with absent: no finding with absentID
		severity string
		key      string
		absent   bool
		contains string
	}{
		{name: "instances.pg-simulator never matches the Feign name", file: "field-report-pg-simulator.yml", opt: LintOptions{BreakerName: DefaultBreakerName}, id: "instance-name-never-matches", severity: "error",
			key: "resilience4j.circuitbreaker.instances.pg-simulator", contains: `"PgPaymentClient#requestPayment(String,PaymentRequest)"`},
		{name: "instances.pg-simulator is fine for a breaker of that name", file: "field-report-pg-simulator.yml", opt: LintOptions{BreakerName: "pg-simulator"}, id: "instance-name-never-matches", absent: true},
		{name: "unbracketed Feign key is stripped", file: "brackets.yml", id: "instance-name-never-matches", severity: "error",
			key: "resilience4j.circuitbreaker.instances.PgPaymentClient#cancel(String)", contains: `binds as "PgPaymentClientcancelString"`},
		{name: "a dotted instance key nests and is reported", file: "brackets.yml", id: "unknown-key", severity: "warning",
			key: "resilience4j.circuitbreaker.instances.pg.simulator", contains: `the instance is "pg"`},
		{name: "typo is an unknown key", file: "traps.yml", id: "unknown-key", severity: "warning", key: "resilience4j.circuitbreaker.configs.default.failure-rate-treshold"},
		{name: "live threshold differs", file: "field-report.yml", opt: LintOptions{BreakerName: DefaultBreakerName, Live: &breaker.Config{FailureRateThreshold: 50, SlowCallRateThreshold: 50}}, id: "live-threshold-differs", severity: "error",
			key: "resilience4j.circuitbreaker.configs.default.failure-rate-threshold", contains: "reports failure-rate-threshold 50.0%, but this file resolves 60.0%"},
		{name: "live thresholds equal", file: "field-report.yml", opt: LintOptions{BreakerName: DefaultBreakerName, Live: &breaker.Config{FailureRateThreshold: 60, SlowCallRateThreshold: 50}}, id: "live-threshold-differs", absent: true},
		{name: "slow threshold above the timeout", file: "traps.yml", id: "slow-threshold-not-below-timeout", severity: "warning",
			key: "resilience4j.circuitbreaker.configs.default.slow-call-duration-threshold", contains: "is not below the TimeLimiter timeout 600ms"},
		{name: "TIME_BASED minimum unreachable at 5/s", file: "traps.yml", opt: LintOptions{Rate: 5}, id: "time-based-min-calls-unreachable", severity: "warning",
			key: "resilience4j.circuitbreaker.configs.default.minimum-number-of-calls", contains: "holds at most 50 calls, below minimum-number-of-calls 100"},
		{name: "TIME_BASED minimum reachable at 15/s", file: "traps.yml", opt: LintOptions{Rate: 15}, id: "time-based-min-calls-unreachable", absent: true},
		{name: "half-open trial cannot pass when every success is slow", file: "field-report.yml",
			opt: LintOptions{Gateway: &breaker.CallOutcomeProbabilities{SlowSuccess: 0.6, FastFailure: 0.4}}, id: "half-open-trial-cannot-pass", severity: "error",
			key: "resilience4j.circuitbreaker.configs.default.permitted-number-of-calls-in-half-open-state", contains: "cannot close while the gateway behaves so"},
		{name: "half-open trial unlikely to pass", file: "field-report.yml",
			opt: LintOptions{Gateway: &breaker.CallOutcomeProbabilities{FastSuccess: 0.5, FastFailure: 0.5}}, id: "half-open-trial-cannot-pass", severity: "warning", contains: "passes with probability"},
		{name: "healthy gateway passes the trial", file: "field-report.yml",
			opt: LintOptions{Gateway: &breaker.CallOutcomeProbabilities{FastSuccess: 1}}, id: "half-open-trial-cannot-pass", absent: true},
		{name: "retry ignoring CallNotPermitted", file: "inheritance.yml", id: "retry-retries-rejections", absent: true},
		{name: "caller does not retry rejections", file: "field-report.yml", opt: LintOptions{RetryOnRejection: &no}, id: "retry-retries-rejections", absent: true},
		{name: "caller retries rejections", file: "field-report.yml", opt: LintOptions{RetryOnRejection: &yes, AssumeRetry: true}, id: "retry-retries-rejections", severity: "warning", contains: "up to 3 attempts"},
		{name: "single attempt retries nothing", file: "traps.yml", id: "retry-retries-rejections", absent: true},
		{name: "everything exposed", file: "traps.yml", id: "endpoints-not-exposed", absent: true},
		{name: "health registered", file: "traps.yml", id: "health-indicator-not-registered", absent: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fs := Lint(mustLoad(t, tc.file), tc.opt)
			f, ok := has(fs, tc.id)
			if tc.absent {
				if ok {
					t.Fatalf("unexpected finding %+v", f)
				}
				return
			}
			if !ok {
				t.Fatalf("no %s finding in\n%s", tc.id, strings.Join(findingSet(fs), "\n"))
			}
			if f.Severity != tc.severity || (tc.key != "" && f.Key != tc.key) || !strings.Contains(f.Message, tc.contains) || f.Fix == "" {
				t.Errorf("finding %+v\nwant severity %s key %s message containing %q", f, tc.severity, tc.key, tc.contains)
			}
		})
	}
}

func TestLintIDsAreKebabCase(t *testing.T) {
	no := false
	opt := LintOptions{Rate: 1, Gateway: &breaker.CallOutcomeProbabilities{SlowSuccess: 1}, RetryOnRejection: &no, LiveByName: map[string]*breaker.Config{"pg": {FailureRateThreshold: 1}}}
	for _, file := range []string{"field-report.yml", "field-report-pg-simulator.yml", "brackets.yml", "traps.yml", "inheritance.yml", "relaxed.yml", "relaxed.properties", "brackets.properties"} {
		for _, f := range Lint(mustLoad(t, file), opt) {
			if f.ID == "" || strings.Trim(f.ID, "abcdefghijklmnopqrstuvwxyz-") != "" || f.Message == "" || f.Fix == "" {
				t.Errorf("%s: bad finding %+v", file, f)
			}
			if f.Severity != SeverityError && f.Severity != SeverityWarning && f.Severity != SeverityInfo {
				t.Errorf("%s: bad severity %+v", file, f)
			}
		}
	}
}
