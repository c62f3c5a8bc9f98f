package springconf

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cbprobe/cbprobe/breaker"
)

func mustLoad(t *testing.T, name string) *File {
	t.Helper()
	f, err := Load(filepath.Join("testdata", name))
	if err != nil {
		t.Fatalf("Load(%s): %v", name, err)
	}
	return f
}

func TestResolveFieldReport(t *testing.T) {
	tests := []struct {
		name, file, breakerName string
		wantMatched             string
		wantFailure             float32
		wantWindow              int
		wantSlow                time.Duration
		wantFailureSource       string
	}{
		{
			name: "configs.default applies to the Feign name", file: "field-report.yml", breakerName: DefaultBreakerName,
			wantFailure: 60, wantWindow: 20, wantSlow: 100 * time.Millisecond,
			wantFailureSource: "resilience4j.circuitbreaker.configs.default.failure-rate-threshold",
		},
		{
			name: "instances.pg-simulator does not apply to the Feign name", file: "field-report-pg-simulator.yml", breakerName: DefaultBreakerName,
			wantFailure: 60, wantWindow: 20, wantSlow: 100 * time.Millisecond,
			wantFailureSource: "resilience4j.circuitbreaker.configs.default.failure-rate-threshold",
		},
		{
			name: "instances.pg-simulator applies to a breaker named pg-simulator", file: "field-report-pg-simulator.yml", breakerName: "pg-simulator",
			wantMatched: "pg-simulator", wantFailure: 30, wantWindow: 10, wantSlow: 2 * time.Second,
			wantFailureSource: "resilience4j.circuitbreaker.instances.pg-simulator.failure-rate-threshold",
		},
		{
			name: "reference YAML", file: "", breakerName: DefaultBreakerName,
			wantFailure: 60, wantWindow: 20, wantSlow: 100 * time.Millisecond,
			wantFailureSource: "resilience4j.circuitbreaker.configs.default.failure-rate-threshold",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var f *File
			if tc.file == "" {
				var err error
				if f, err = Parse("reference.yml", ReferenceYAML(), YAML); err != nil {
					t.Fatal(err)
				}
			} else {
				f = mustLoad(t, tc.file)
			}
			r, err := f.Resolve(tc.breakerName)
			if err != nil {
				t.Fatal(err)
			}
			if r.MatchedInstance != tc.wantMatched {
				t.Errorf("MatchedInstance = %q, want %q", r.MatchedInstance, tc.wantMatched)
			}
			c := r.Config
			if c.FailureRateThreshold != tc.wantFailure || c.SlidingWindowSize != tc.wantWindow || c.SlowCallDurationThreshold != tc.wantSlow {
				t.Errorf("failure %v window %d slow %v, want %v %d %v", c.FailureRateThreshold, c.SlidingWindowSize, c.SlowCallDurationThreshold, tc.wantFailure, tc.wantWindow, tc.wantSlow)
			}
			if got := r.Sources[keyFailureRateThreshold]; got != tc.wantFailureSource {
				t.Errorf("source = %q, want %q", got, tc.wantFailureSource)
			}
			if got := r.Sources[keyMinimumCalls]; got != libraryDefault {
				t.Errorf("minimum-number-of-calls source = %q, want library default", got)
			}
			if c.MinimumNumberOfCalls != 100 || c.SlidingWindowType != breaker.CountBased {
				t.Errorf("minimum %d type %v, want 100 COUNT_BASED", c.MinimumNumberOfCalls, c.SlidingWindowType)
			}
			if err := c.Validate(); err != nil {
				t.Errorf("resolved config invalid: %v", err)
			}
		})
	}
}

func TestReferenceYAMLSettings(t *testing.T) {
	f, err := Parse("reference.yml", ReferenceYAML(), YAML)
	if err != nil {
		t.Fatal(err)
	}
	r, err := f.Resolve(DefaultBreakerName)
	if err != nil {
		t.Fatal(err)
	}
	want := breaker.DefaultConfig()
	want.SlidingWindowSize, want.FailureRateThreshold, want.SlowCallDurationThreshold = 20, 60, 100*time.Millisecond
	want.SlowCallRateThreshold, want.WaitDurationInOpenState, want.PermittedNumberOfCallsInHalfOpenState = 50, 10*time.Second, 5
	got := r.Config
	got.Classify = nil
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("config\n got %+v\nwant %+v", got, want)
	}
	if !r.RegisterHealthIndicator || r.EventConsumerBufferSize != 100 {
		t.Errorf("register %v buffer %d", r.RegisterHealthIndicator, r.EventConsumerBufferSize)
	}
	tl, _, err := f.ResolveTimeLimiter(DefaultBreakerName)
	if err != nil || tl.TimeoutDuration != 600*time.Millisecond {
		t.Errorf("time limiter %v %v", tl, err)
	}
	rt, _, err := f.ResolveRetry("anything")
	if err != nil || rt.MaxAttempts != 3 || rt.WaitDuration != 500*time.Millisecond {
		t.Errorf("retry %+v %v", rt, err)
	}
	m := f.Management()
	for _, id := range []string{"health", "circuitbreakers", "circuitbreakerevents", "prometheus", "retries", "retryevents", "timelimiters", "timelimiterevents"} {
		if !m.Exposed(id) {
			t.Errorf("%s not exposed", id)
		}
	}
	if !m.HealthCircuitBreakersEnabled {
		t.Error("health.circuitbreakers not enabled")
	}
}

func TestResolveInheritance(t *testing.T) {
	f := mustLoad(t, "inheritance.yml")
	const cfgs = "resilience4j.circuitbreaker.configs."
	tests := []struct {
		name        string
		breakerName string
		matched     string
		failure     float32
		window      int
		minCalls    int
		wait        time.Duration
		register    bool
		buffer      int
		srcWindow   string
	}{
		{"base-config: strict, built from library defaults", "with-base", "with-base", 30, 100, 7, 5 * time.Second, true, 50, libraryDefault},
		{"same-named config is the implicit base", "same", "same", 44, 33, 100, 60 * time.Second, true, 50, "resilience4j.circuitbreaker.instances.same.sliding-window-size"},
		{"configs.default is the implicit base", "plain", "plain", 61, 21, 100, 7 * time.Second, true, 50, cfgs + "default.sliding-window-size"},
		{"base-config chain", "via-chain", "via-chain", 30, 9, 7, 60 * time.Second, true, 50, cfgs + "chained.sliding-window-size"},
		{"lazy breaker named like a config uses it", "strict", "", 30, 100, 7, 60 * time.Second, true, 50, libraryDefault},
		{"lazy breaker uses configs.default", "PgPaymentClient#requestPayment(String,PaymentRequest)", "", 61, 21, 100, 60 * time.Second, true, 50, cfgs + "default.sliding-window-size"},
		{"lazy chained config follows its base", "chained", "", 30, 9, 7, 60 * time.Second, true, 50, cfgs + "chained.sliding-window-size"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := f.Resolve(tc.breakerName)
			if err != nil {
				t.Fatal(err)
			}
			c := r.Config
			got := fmt.Sprint(r.MatchedInstance, c.FailureRateThreshold, c.SlidingWindowSize, c.MinimumNumberOfCalls, c.WaitDurationInOpenState, r.RegisterHealthIndicator, r.EventConsumerBufferSize)
			want := fmt.Sprint(tc.matched, tc.failure, tc.window, tc.minCalls, tc.wait, tc.register, tc.buffer)
			if got != want {
				t.Errorf("matched/failure/window/min/wait/register/buffer = %s, want %s", got, want)
			}
			if r.Sources[keyWindowSize] != tc.srcWindow {
				t.Errorf("window source %q, want %q", r.Sources[keyWindowSize], tc.srcWindow)
			}
		})
	}
}

func TestResolveTimeLimiterAndRetryInheritance(t *testing.T) {
	f := mustLoad(t, "inheritance.yml")
	tlTests := []struct {
		name, limiter string
		timeout       time.Duration
		cancel        bool
		src           string
	}{
		{"instance without base uses configs.default, not the same-named config", "same", 600 * time.Millisecond, false, "resilience4j.timelimiter.configs.default.timeout-duration"},
		{"base-config", "based", 200 * time.Millisecond, false, "resilience4j.timelimiter.configs.fast.timeout-duration"},
		{"lazy limiter named like a config", "same-but-not-instance", 600 * time.Millisecond, true, "resilience4j.timelimiter.configs.default.timeout-duration"},
		{"lazy limiter uses configs.<name>", "fast", 200 * time.Millisecond, false, "resilience4j.timelimiter.configs.fast.timeout-duration"},
	}
	for _, tc := range tlTests {
		t.Run("timelimiter/"+tc.name, func(t *testing.T) {
			c, src, err := f.ResolveTimeLimiter(tc.limiter)
			if err != nil {
				t.Fatal(err)
			}
			if c.TimeoutDuration != tc.timeout || c.CancelRunningFuture != tc.cancel || src[keyTimeoutDuration] != tc.src {
				t.Errorf("got %v %v %q, want %v %v %q", c.TimeoutDuration, c.CancelRunningFuture, src[keyTimeoutDuration], tc.timeout, tc.cancel, tc.src)
			}
		})
	}
	t.Run("retry/named config inherits configs.default", func(t *testing.T) {
		c, src, err := f.ResolveRetry("a")
		if err != nil {
			t.Fatal(err)
		}
		if c.MaxAttempts != 5 || c.WaitDuration != 100*time.Millisecond {
			t.Errorf("got %d %v", c.MaxAttempts, c.WaitDuration)
		}
		if src[keyMaxAttempts] != "resilience4j.retry.configs.default.max-attempts" {
			t.Errorf("source %q", src[keyMaxAttempts])
		}
		if c.Retryable == nil || c.Retryable(&breaker.CallNotPermittedError{Name: "x"}) || !c.Retryable(errors.New("boom")) {
			t.Error("retry predicate should skip CallNotPermitted and retry other errors")
		}
	})
}

func TestBaseConfigErrors(t *testing.T) {
	_, err := Load(filepath.Join("testdata", "circular.yml"))
	if err == nil {
		t.Fatal("no error for circular.yml")
	}
	want := []string{
		`testdata/circular.yml:7: resilience4j.circuitbreaker.configs.b.base-config: circular base-config chain a -> b -> a (Spring fails to start with a StackOverflowError)`,
		`testdata/circular.yml:5: resilience4j.circuitbreaker.configs.a.base-config: circular base-config chain b -> a -> b (Spring fails to start with a StackOverflowError)`,
		`testdata/circular.yml:10: resilience4j.circuitbreaker.instances.self.base-config: circular reference: "self" names itself as base-config (Spring fails to start: "Circular reference detected in instance config: self")`,
		`testdata/circular.yml:14: resilience4j.circuitbreaker.instances.missing.base-config: configuration "nope" does not exist under resilience4j.circuitbreaker.configs (Spring fails to start: ConfigurationNotFoundException)`,
	}
	if got := strings.Split(err.Error(), "\n"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("errors\n got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	var e *Error
	if !errors.As(err, &e) || e.ExitCode() != 2 {
		t.Errorf("not an *Error with exit code 2: %T", err)
	}
}

func TestBaseConfigChainsThatStart(t *testing.T) {
	tests := []struct {
		name, data, section, lookup string
		want                        string
	}{
		{"instance a -> configs.b -> configs.a is no cycle", "resilience4j.circuitbreaker:\n  configs:\n    a: {sliding-window-size: 3}\n    b: {base-config: a}\n  instances:\n    a: {base-config: b}\n",
			"circuitbreaker", "a", "3"},
		{"retry instance may name its same-named config", "resilience4j.retry:\n  configs:\n    pg: {max-attempts: 4}\n  instances:\n    pg: {base-config: pg}\n",
			"retry", "pg", "4"},
		{"time limiter instance may name its same-named config", "resilience4j.timelimiter:\n  configs:\n    pg: {timeout-duration: 2s}\n  instances:\n    pg: {base-config: pg}\n",
			"timelimiter", "pg", "2s"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Parse("c.yml", []byte(tc.data), YAML)
			if err != nil {
				t.Fatal(err)
			}
			var got string
			switch tc.section {
			case "circuitbreaker":
				r, err := f.Resolve(tc.lookup)
				if err != nil {
					t.Fatal(err)
				}
				got = fmt.Sprint(r.Config.SlidingWindowSize)
			case "retry":
				c, _, err := f.ResolveRetry(tc.lookup)
				if err != nil {
					t.Fatal(err)
				}
				got = fmt.Sprint(c.MaxAttempts)
			case "timelimiter":
				c, _, err := f.ResolveTimeLimiter(tc.lookup)
				if err != nil {
					t.Fatal(err)
				}
				got = fmt.Sprint(c.TimeoutDuration)
			}
			if got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
	if _, err := Parse("c.yml", []byte("resilience4j.circuitbreaker:\n  configs:\n    pg: {}\n  instances:\n    pg: {base-config: pg}\n"), YAML); err == nil ||
		!strings.Contains(err.Error(), "names itself as base-config") {
		t.Errorf("circuit breaker instance naming itself: %v (Spring checks the name before looking at configs)", err)
	}
}

func TestBracketRule(t *testing.T) {
	for _, file := range []string{"brackets.yml", "brackets.properties"} {
		f := mustLoad(t, file)
		tests := []struct {
			name, breakerName, matched string
			failure                    float32
		}{
			{"bracketed Feign key matches the Feign name", DefaultBreakerName, "[PgPaymentClient#requestPayment(String,PaymentRequest)]", 30},
			{"unbracketed Feign key never matches the Feign name", "PgPaymentClient#cancel(String)", "", 60},
			{"unbracketed Feign key matches the stripped name", "PgPaymentClientcancelString", "PgPaymentClient#cancel(String)", 40},
		}
		for _, tc := range tests {
			t.Run(file+"/"+tc.name, func(t *testing.T) {
				r, err := f.Resolve(tc.breakerName)
				if err != nil {
					t.Fatal(err)
				}
				if r.MatchedInstance != tc.matched || r.Config.FailureRateThreshold != tc.failure {
					t.Errorf("matched %q failure %v, want %q %v", r.MatchedInstance, r.Config.FailureRateThreshold, tc.matched, tc.failure)
				}
			})
		}
	}
	t.Run("a dot in a YAML key nests", func(t *testing.T) {
		f := mustLoad(t, "brackets.yml")
		r, err := f.Resolve("pg.simulator")
		if err != nil {
			t.Fatal(err)
		}
		if r.MatchedInstance != "" || r.Config.FailureRateThreshold != 60 {
			t.Errorf("pg.simulator: matched %q failure %v", r.MatchedInstance, r.Config.FailureRateThreshold)
		}
		var found bool
		for _, k := range f.InstanceNames("circuitbreaker") {
			if k.Raw == "pg" && k.Bound == "pg" {
				found = true
			}
		}
		if !found {
			t.Errorf("instance names %+v lack the nested key pg", f.InstanceNames("circuitbreaker"))
		}
	})
}

func TestRelaxedBinding(t *testing.T) {
	for _, file := range []string{"relaxed.yml", "relaxed.properties"} {
		t.Run(file, func(t *testing.T) {
			f := mustLoad(t, file)
			r, err := f.Resolve("any")
			if err != nil {
				t.Fatal(err)
			}
			c := r.Config
			got := fmt.Sprint(c.FailureRateThreshold, c.SlowCallRateThreshold, c.SlidingWindowSize, c.SlidingWindowType, c.MinimumNumberOfCalls, c.WaitDurationInOpenState, c.SlowCallDurationThreshold, r.RecordExceptions)
			want := "55 45 12 TIME_BASED 3 500ms 250ms [java.io.IOException java.util.concurrent.TimeoutException]"
			if got != want {
				t.Errorf("got  %s\nwant %s", got, want)
			}
			if src := r.Sources[keyFailureRateThreshold]; src != "resilience4j.circuitbreaker.configs.default.failure-rate-threshold" {
				t.Errorf("source %q", src)
			}
			tl, _, err := f.ResolveTimeLimiter("any")
			if err != nil || tl.TimeoutDuration != time.Minute {
				t.Errorf("timeout %v %v", tl.TimeoutDuration, err)
			}
			for key, want := range map[string]string{"pg.base-url": "http://127.0.0.1:8082", "pg.baseUrl": "http://127.0.0.1:8082", "pg.retry-max-attempts": "3", "pg.retry-wait": "200ms"} {
				if v, ok := f.Get(key); !ok || v != want {
					t.Errorf("Get(%q) = %q %v, want %q", key, v, ok, want)
				}
			}
			if _, ok := f.Get("pg.missing"); ok {
				t.Error("Get of a missing key succeeded")
			}
			m := f.Management()
			if !m.Exposed("circuitbreakers") || m.Exposed("prometheus") || m.HealthCircuitBreakersEnabled {
				t.Errorf("management %+v", m)
			}
		})
	}
}

// javaErr is a test error naming a Java class.
type javaErr struct{ class string }

func (e javaErr) Error() string     { return e.class }
func (e javaErr) JavaClass() string { return e.class }

func TestClassifier(t *testing.T) {
	timeout := &breaker.TimeoutError{Name: "t"}
	wrappedTimeout := fmt.Errorf("call pg: %w", timeout)
	ioErr := javaErr{"java.net.SocketTimeoutException"}
	plain := errors.New("plain")
	tests := []struct {
		name           string
		record, ignore []string
		err            error
		want           breaker.Outcome
	}{
		{"no lists: nil classifier means failure", nil, nil, plain, breaker.OutcomeFailure},
		{"ignore wins over record", []string{"java.util.concurrent.TimeoutException"}, []string{"TimeoutException"}, timeout, breaker.OutcomeIgnored},
		{"record set: matching error fails", []string{"java.util.concurrent.TimeoutException"}, nil, wrappedTimeout, breaker.OutcomeFailure},
		{"record set: other error is a success", []string{"java.util.concurrent.TimeoutException"}, nil, plain, breaker.OutcomeSuccess},
		{"superclass matches subclass", []string{"java.io.IOException"}, nil, ioErr, breaker.OutcomeFailure},
		{"plain Go error is a RuntimeException", []string{"java.lang.RuntimeException"}, nil, plain, breaker.OutcomeFailure},
		{"checked TimeoutException is not a RuntimeException", []string{"java.lang.RuntimeException"}, nil, timeout, breaker.OutcomeSuccess},
		{"Exception matches everything", nil, []string{"java.lang.Exception"}, timeout, breaker.OutcomeIgnored},
		{"different packages do not match", []string{"feign.TimeoutException"}, nil, timeout, breaker.OutcomeSuccess},
		{"CallNotPermitted by simple name", nil, []string{"CallNotPermittedException"}, &breaker.CallNotPermittedError{Name: "x"}, breaker.OutcomeIgnored},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := NewClassifier(tc.record, tc.ignore)
			got := breaker.OutcomeFailure
			if c != nil {
				got = c(tc.err)
			} else if tc.record != nil || tc.ignore != nil {
				t.Fatal("nil classifier for non-empty lists")
			}
			if got != tc.want {
				t.Errorf("outcome %v, want %v", got, tc.want)
			}
		})
	}
}

func TestInstanceKeyBinding(t *testing.T) {
	data := "resilience4j.circuitbreaker:\n  instances:\n    PgA:\n      sliding-window-size: 3\n    pg_sim:\n      sliding-window-size: 4\n    \"[x.y]\":\n      sliding-window-size: 5\n  backends:\n    legacy:\n      sliding-window-size: 6\n"
	f, err := Parse("k.yml", []byte(data), YAML)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, breakerName, matched string
		window                     int
	}{
		{"map keys are case-sensitive", "pga", "", 100},
		{"exact case matches", "PgA", "PgA", 3},
		// Checked on Spring Boot 3.5.7 + resilience4j-spring-boot3 2.4.0: instances.my_name
		// created the breaker "my_name".
		{"underscore is kept in an unbracketed key", "pg_sim", "pg_sim", 4},
		{"the name without underscore does not match", "pgsim", "", 100},
		{"bracketed key keeps its dot", "x.y", "[x.y]", 5},
		{"backends is an alias of instances", "legacy", "legacy", 6},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := f.Resolve(tc.breakerName)
			if err != nil {
				t.Fatal(err)
			}
			if r.MatchedInstance != tc.matched || r.Config.SlidingWindowSize != tc.window {
				t.Errorf("matched %q window %d, want %q %d", r.MatchedInstance, r.Config.SlidingWindowSize, tc.matched, tc.window)
			}
		})
	}
	keys := f.InstanceNames("circuitbreaker")
	got := fmt.Sprint(keys)
	want := "[{instances PgA PgA 3} {instances pg_sim pg_sim 5} {instances [x.y] x.y 7} {backends legacy legacy 10}]"
	if got != want {
		t.Errorf("InstanceNames = %s, want %s", got, want)
	}
}
