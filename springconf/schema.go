package springconf

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/cbprobe/cbprobe/breaker"
)

// valueKind is the Java type a Spring property binds to.
type valueKind int

const (
	kindFloat    valueKind = iota // java.lang.Float
	kindDouble                    // java.lang.Double
	kindInt                       // java.lang.Integer
	kindBool                      // java.lang.Boolean
	kindDuration                  // java.time.Duration
	kindWindow                    // SlidingWindowType
	kindState                     // CircuitBreaker.State
	kindClasses                   // Class<? extends Throwable>[]
	kindClass                     // a single class name (predicates)
	kindString                    // base-config
)

// spec describes one per-instance Spring key.
type spec struct {
	name  string // kebab-case
	kind  valueKind
	check func(v value) string // "" when valid, else the message after "<value> "
	// modelled is false for keys the breaker package cannot express.
	modelled bool
}

// value is a parsed setting.
type value struct {
	raw   string
	f     float64
	i     int
	b     bool
	d     time.Duration
	state breaker.State
	win   breaker.WindowType
	list  []string
}

func floatRange(lo, hi float64) func(v value) string {
	return func(v value) string {
		if v.f < lo || v.f > hi {
			return fmt.Sprintf("is not in %g..%g", lo, hi)
		}
		return ""
	}
}

func intAtLeast(n int) func(v value) string {
	return func(v value) string {
		if v.i < n {
			return fmt.Sprintf("must be at least %d", n)
		}
		return ""
	}
}

func durAtLeast(min time.Duration, trunc time.Duration) func(v value) string {
	return func(v value) string {
		if v.d/trunc*trunc < min {
			return "must be at least " + min.String()
		}
		return ""
	}
}

func durNotNegative(v value) string {
	if v.d < 0 {
		return "must not be negative"
	}
	return ""
}

func positiveDouble(v value) string {
	if !(v.f > 0) {
		return "must be greater than 0"
	}
	return ""
}

func unitInterval(v value) string {
	if !(v.f >= 0 && v.f < 1) {
		return "is not in [0, 1)"
	}
	return ""
}

func openOrClosed(v value) string {
	if v.state != breaker.StateOpen && v.state != breaker.StateClosed {
		return "must be OPEN or CLOSED"
	}
	return ""
}

// Setting names of the circuit breaker (kebab-case, as in Sources).
const (
	keyFailureRateThreshold      = "failure-rate-threshold"
	keySlowCallRateThreshold     = "slow-call-rate-threshold"
	keySlowCallDuration          = "slow-call-duration-threshold"
	keyWaitInOpen                = "wait-duration-in-open-state"
	keyPermittedInHalfOpen       = "permitted-number-of-calls-in-half-open-state"
	keyWindowType                = "sliding-window-type"
	keyWindowSize                = "sliding-window-size"
	keyMinimumCalls              = "minimum-number-of-calls"
	keyAutomaticTransition       = "automatic-transition-from-open-to-half-open-enabled"
	keyMaxWaitInHalfOpen         = "max-wait-duration-in-half-open-state"
	keyTransitionAfterWait       = "transition-to-state-after-wait-duration"
	keyInitialState              = "initial-state"
	keyWritableStackTrace        = "writable-stack-trace-enabled"
	keyRecordExceptions          = "record-exceptions"
	keyIgnoreExceptions          = "ignore-exceptions"
	keyRecordFailurePredicate    = "record-failure-predicate"
	keyIgnoreExceptionPredicate  = "ignore-exception-predicate"
	keyRecordResultPredicate     = "record-result-predicate"
	keyBaseConfig                = "base-config"
	keyRegisterHealthIndicator   = "register-health-indicator"
	keyAllowHealthIndicatorFail  = "allow-health-indicator-to-fail"
	keyEventConsumerBufferSize   = "event-consumer-buffer-size"
	keyEnableExponentialBackoff  = "enable-exponential-backoff"
	keyExponentialMultiplier     = "exponential-backoff-multiplier"
	keyExponentialMaxWaitInOpen  = "exponential-max-wait-duration-in-open-state"
	keyEnableRandomizedWait      = "enable-randomized-wait"
	keyRandomizedWaitFactor      = "randomized-wait-factor"
	keyIgnoreClassBindingExcepts = "ignore-class-binding-exceptions"

	keyTimeoutDuration     = "timeout-duration"
	keyCancelRunningFuture = "cancel-running-future"

	keyMaxAttempts                 = "max-attempts"
	keyWaitDuration                = "wait-duration"
	keyExponentialMaxWait          = "exponential-max-wait-duration"
	keyRetryExceptions             = "retry-exceptions"
	keyRetryExceptionPredicate     = "retry-exception-predicate"
	keyResultPredicate             = "result-predicate"
	keyConsumeResultBeforeRetry    = "consume-result-before-retry-attempt"
	keyFailAfterMaxAttempts        = "fail-after-max-attempts"
	keyIntervalBiFunction          = "interval-bi-function"
	libraryDefault                 = "library default"
	defaultConfigName              = "default"
	sectionCircuitBreaker          = "circuitbreaker"
	sectionTimeLimiter             = "timelimiter"
	sectionRetry                   = "retry"
	defaultEventConsumerBufferSize = 100
)

func specTable(specs ...spec) map[string]spec {
	m := make(map[string]spec, len(specs))
	for _, s := range specs {
		m[canon(s.name)] = s
	}
	return m
}

// circuitBreakerSpecs are the keys of CircuitBreakerConfigurationProperties.InstanceProperties
// with the Spring setters' checks (resilience4j.md §1.1).
func circuitBreakerSpecs() map[string]spec {
	return specTable(
		spec{keyFailureRateThreshold, kindFloat, floatRange(1, 100), true},
		spec{keySlowCallRateThreshold, kindFloat, floatRange(1, 100), true},
		spec{keySlowCallDuration, kindDuration, durAtLeast(time.Nanosecond, time.Nanosecond), true},
		spec{keyWaitInOpen, kindDuration, durAtLeast(time.Millisecond, time.Millisecond), true},
		spec{keyPermittedInHalfOpen, kindInt, intAtLeast(1), true},
		spec{keyWindowType, kindWindow, nil, true},
		spec{keyWindowSize, kindInt, intAtLeast(1), true},
		spec{keyMinimumCalls, kindInt, intAtLeast(1), true},
		spec{keyAutomaticTransition, kindBool, nil, true},
		spec{keyMaxWaitInHalfOpen, kindDuration, durNotNegative, true},
		spec{keyTransitionAfterWait, kindState, openOrClosed, true},
		spec{keyInitialState, kindState, nil, false},
		spec{keyWritableStackTrace, kindBool, nil, true},
		spec{keyRecordExceptions, kindClasses, nil, true},
		spec{keyIgnoreExceptions, kindClasses, nil, true},
		spec{keyRecordFailurePredicate, kindClass, nil, false},
		spec{keyIgnoreExceptionPredicate, kindClass, nil, false},
		spec{keyRecordResultPredicate, kindClass, nil, false},
		spec{keyBaseConfig, kindString, nil, true},
		spec{keyRegisterHealthIndicator, kindBool, nil, true},
		spec{keyAllowHealthIndicatorFail, kindBool, nil, true},
		spec{keyEventConsumerBufferSize, kindInt, intAtLeast(1), true},
		spec{keyEnableExponentialBackoff, kindBool, nil, false},
		spec{keyExponentialMultiplier, kindDouble, positiveDouble, false},
		spec{keyExponentialMaxWaitInOpen, kindDuration, durAtLeast(time.Millisecond, time.Millisecond), false},
		spec{keyEnableRandomizedWait, kindBool, nil, false},
		spec{keyRandomizedWaitFactor, kindDouble, unitInterval, false},
		spec{keyIgnoreClassBindingExcepts, kindBool, nil, true},
	)
}

// timeLimiterSpecs are the keys of TimeLimiterConfigurationProperties.InstanceProperties (§7.1).
func timeLimiterSpecs() map[string]spec {
	return specTable(
		spec{keyTimeoutDuration, kindDuration, durNotNegative, true},
		spec{keyCancelRunningFuture, kindBool, nil, true},
		spec{keyEventConsumerBufferSize, kindInt, intAtLeast(1), true},
		spec{keyBaseConfig, kindString, nil, true},
	)
}

// retrySpecs are the keys of RetryConfigurationProperties.InstanceProperties (§8.1).
func retrySpecs() map[string]spec {
	return specTable(
		spec{keyMaxAttempts, kindInt, intAtLeast(1), true},
		spec{keyWaitDuration, kindDuration, durNotNegative, true},
		spec{keyEnableExponentialBackoff, kindBool, nil, true},
		spec{keyExponentialMultiplier, kindDouble, positiveDouble, true},
		spec{keyExponentialMaxWait, kindDuration, durNotNegative, true},
		spec{keyEnableRandomizedWait, kindBool, nil, true},
		spec{keyRandomizedWaitFactor, kindDouble, unitInterval, true},
		spec{keyRetryExceptions, kindClasses, nil, true},
		spec{keyIgnoreExceptions, kindClasses, nil, true},
		spec{keyRetryExceptionPredicate, kindClass, nil, false},
		spec{keyResultPredicate, kindClass, nil, false},
		spec{keyConsumeResultBeforeRetry, kindClass, nil, false},
		spec{keyFailAfterMaxAttempts, kindBool, nil, true},
		spec{keyIntervalBiFunction, kindClass, nil, false},
		spec{keyEventConsumerBufferSize, kindInt, intAtLeast(1), true},
		spec{keyBaseConfig, kindString, nil, true},
	)
}

// sectionGlobals are the keys allowed directly under resilience4j.<section> (besides the maps).
func sectionGlobals(section string) map[string]bool {
	m := map[string]bool{"tags": true, "metrics": true}
	switch section {
	case sectionCircuitBreaker:
		m["circuitbreakeraspectorder"] = true
	case sectionTimeLimiter:
		m["timelimiteraspectorder"] = true
	case sectionRetry:
		m["retryaspectorder"] = true
	}
	return m
}

// parseValue converts raw text as Spring's converters would.
func parseValue(k valueKind, raw string) (value, error) {
	v := value{raw: raw}
	t := strings.TrimSpace(raw)
	switch k {
	case kindFloat, kindDouble:
		bits := 64
		if k == kindFloat {
			bits = 32
		}
		if n := len(t); n > 1 && strings.ContainsRune("fFdD", rune(t[n-1])) && t[n-2] >= '0' && t[n-2] <= '9' {
			t = t[:n-1] // Java's Float.valueOf accepts a type suffix: 60f, 60d
		}
		f, err := strconv.ParseFloat(t, bits)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return v, fmt.Errorf("%q is not a number", raw)
		}
		v.f = f
	case kindInt:
		var n int64
		var err error
		if strings.HasPrefix(t, "0x") || strings.HasPrefix(t, "0X") || strings.HasPrefix(t, "#") {
			n, err = strconv.ParseInt(strings.TrimLeft(t[1:], "xX"), 16, 32)
		} else {
			n, err = strconv.ParseInt(t, 10, 32)
		}
		if err != nil {
			return v, fmt.Errorf("%q is not an integer", raw)
		}
		v.i = int(n)
	case kindBool:
		switch strings.ToLower(t) {
		case "true", "on", "yes", "1":
			v.b = true
		case "false", "off", "no", "0":
		default:
			return v, fmt.Errorf("%q is not a boolean (want true or false)", raw)
		}
	case kindDuration:
		d, err := ParseDuration(t)
		if err != nil {
			return v, err
		}
		v.d = d
	case kindWindow:
		switch canon(t) {
		case "countbased":
			v.win = breaker.CountBased
		case "timebased":
			v.win = breaker.TimeBased
		default:
			return v, fmt.Errorf("%q is not one of COUNT_BASED, TIME_BASED", raw)
		}
	case kindState:
		found := false
		for _, s := range breaker.AllStates() {
			if canon(s.String()) == canon(t) {
				v.state, found = s, true
			}
		}
		if !found {
			return v, fmt.Errorf("%q is not one of CLOSED, OPEN, HALF_OPEN, DISABLED, FORCED_OPEN, METRICS_ONLY", raw)
		}
	case kindClasses:
		for _, p := range strings.Split(t, ",") {
			if p = strings.TrimSpace(p); p != "" {
				if !validClassName(p) {
					return v, fmt.Errorf("%q is not a Java class name", p)
				}
				v.list = append(v.list, p)
			}
		}
	case kindClass:
		if !validClassName(t) {
			return v, fmt.Errorf("%q is not a Java class name", raw)
		}
	case kindString:
		v.raw = t
	}
	return v, nil
}

// validClassName accepts a binary class name such as java.util.concurrent.TimeoutException
// or org.example.Outer$Inner.
func validClassName(s string) bool {
	if s == "" {
		return false
	}
	for _, part := range strings.Split(s, ".") {
		if part == "" {
			return false
		}
		for i, r := range part {
			ok := r == '_' || r == '$' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r > 127 || (i > 0 && r >= '0' && r <= '9')
			if !ok {
				return false
			}
		}
	}
	return true
}
