package breaker

import (
	"fmt"
	"time"
)

// State is a circuit breaker state, named as Resilience4j's CircuitBreaker.State enum.
type State int

// The six states of Resilience4j's CircuitBreaker. The numeric values equal the
// library's State.order, which is also the value its micrometer gauges use.
const (
	StateClosed      State = 0
	StateOpen        State = 1
	StateHalfOpen    State = 2
	StateDisabled    State = 3
	StateForcedOpen  State = 4
	StateMetricsOnly State = 5
)

// AllStates lists every state in the library's order.
func AllStates() []State {
	return []State{StateClosed, StateOpen, StateHalfOpen, StateDisabled, StateForcedOpen, StateMetricsOnly}
}

// String returns the Java enum name, for example "HALF_OPEN".
func (s State) String() string {
	switch s {
	case StateClosed:
		return "CLOSED"
	case StateOpen:
		return "OPEN"
	case StateHalfOpen:
		return "HALF_OPEN"
	case StateDisabled:
		return "DISABLED"
	case StateForcedOpen:
		return "FORCED_OPEN"
	case StateMetricsOnly:
		return "METRICS_ONLY"
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// ParseState parses a Java enum name such as "OPEN" or "FORCED_OPEN".
func ParseState(s string) (State, error) {
	for _, st := range AllStates() {
		if st.String() == s {
			return st, nil
		}
	}
	return 0, fmt.Errorf("unknown circuit breaker state %q (want one of CLOSED, OPEN, HALF_OPEN, DISABLED, FORCED_OPEN, METRICS_ONLY)", s)
}

// WindowType is the kind of sliding window: the last N calls or the last N seconds.
type WindowType int

const (
	// CountBased keeps the outcomes of the last SlidingWindowSize calls.
	CountBased WindowType = iota
	// TimeBased keeps the outcomes of the last SlidingWindowSize epoch seconds.
	TimeBased
)

// String returns the Spring/Java name, "COUNT_BASED" or "TIME_BASED".
func (w WindowType) String() string {
	if w == TimeBased {
		return "TIME_BASED"
	}
	return "COUNT_BASED"
}

// ParseWindowType parses "COUNT_BASED" or "TIME_BASED" (case-insensitive, '-' accepted for '_').
func ParseWindowType(s string) (WindowType, error) {
	switch normaliseEnum(s) {
	case "COUNT_BASED":
		return CountBased, nil
	case "TIME_BASED":
		return TimeBased, nil
	}
	return 0, fmt.Errorf("unknown sliding window type %q (want COUNT_BASED or TIME_BASED)", s)
}

func normaliseEnum(s string) string {
	b := []byte(s)
	for i, c := range b {
		switch {
		case c >= 'a' && c <= 'z':
			b[i] = c - 'a' + 'A'
		case c == '-':
			b[i] = '_'
		}
	}
	return string(b)
}

// Classifier decides what a circuit breaker does with an error returned by a call.
type Classifier func(err error) Outcome

// Outcome is how a finished call is counted.
type Outcome int

const (
	// OutcomeSuccess records the call as successful (still slow when too long).
	OutcomeSuccess Outcome = iota
	// OutcomeFailure records the call as failed.
	OutcomeFailure
	// OutcomeIgnored records nothing and, in HALF_OPEN, gives the permit back.
	OutcomeIgnored
)

// Config is a CircuitBreakerConfig with Resilience4j's field names and units.
// DefaultConfig returns the library's defaults; a zero Config is not valid.
type Config struct {
	// FailureRateThreshold is a percentage in (0, 100]; the breaker trips at rate >= threshold.
	FailureRateThreshold float32
	// SlowCallRateThreshold is a percentage in (0, 100].
	SlowCallRateThreshold float32
	// SlowCallDurationThreshold: a call strictly longer than this is slow.
	SlowCallDurationThreshold time.Duration
	// WaitDurationInOpenState is how long OPEN refuses calls before HALF_OPEN is allowed.
	WaitDurationInOpenState time.Duration
	// WaitIntervalFunctionInOpenState, when set, replaces the fixed
	// WaitDurationInOpenState (waitIntervalFunctionInOpenState): the OPEN wait is
	// f(attempts), attempts being the number of times the breaker opened in a row
	// (1 from CLOSED, +1 per failed HALF_OPEN trial or manual OPEN/FORCED_OPEN).
	// Spring's enable-exponential-backoff and enable-randomized-wait build it with
	// ExponentialInterval and RandomizedInterval.
	WaitIntervalFunctionInOpenState IntervalFunction
	// PermittedNumberOfCallsInHalfOpenState is the number of trial calls (>= 1).
	PermittedNumberOfCallsInHalfOpenState int
	// SlidingWindowType selects COUNT_BASED (calls) or TIME_BASED (seconds).
	SlidingWindowType WindowType
	// SlidingWindowSize is in calls for COUNT_BASED and in seconds for TIME_BASED (>= 1).
	SlidingWindowSize int
	// MinimumNumberOfCalls is the number of calls needed before rates are computed (>= 1).
	// COUNT_BASED caps it at SlidingWindowSize at run time; TIME_BASED does not.
	MinimumNumberOfCalls int
	// AutomaticTransitionFromOpenToHalfOpenEnabled starts a timer that moves OPEN to
	// HALF_OPEN at exactly entry + WaitDurationInOpenState.
	AutomaticTransitionFromOpenToHalfOpenEnabled bool
	// MaxWaitDurationInHalfOpenState: when >= 1 ms, HALF_OPEN moves to
	// TransitionToStateAfterWaitDuration after this long; 0 means wait forever.
	MaxWaitDurationInHalfOpenState time.Duration
	// TransitionToStateAfterWaitDuration is StateOpen (the default) or StateClosed.
	TransitionToStateAfterWaitDuration State
	// InitialState is the state New starts in (initialState; the zero value is
	// CLOSED). OPEN starts a wait of f(1) with an empty window, HALF_OPEN a trial,
	// each with its timer when configured; no event is published.
	InitialState State
	// Classify maps a call's error to an outcome. Nil means the library default:
	// every error is a failure, nothing is ignored.
	Classify Classifier
}

// DefaultConfig returns Resilience4j's CircuitBreakerConfig.ofDefaults().
func DefaultConfig() Config {
	return Config{
		FailureRateThreshold:                  50,
		SlowCallRateThreshold:                 100,
		SlowCallDurationThreshold:             60 * time.Second,
		WaitDurationInOpenState:               60 * time.Second,
		PermittedNumberOfCallsInHalfOpenState: 10,
		SlidingWindowType:                     CountBased,
		SlidingWindowSize:                     100,
		MinimumNumberOfCalls:                  100,
		TransitionToStateAfterWaitDuration:    StateOpen,
	}
}

// Validate applies the library builder's checks and names the first field at fault.
func (c Config) Validate() error {
	switch {
	case c.FailureRateThreshold <= 0 || c.FailureRateThreshold > 100:
		return fmt.Errorf("failureRateThreshold: %v is not in (0, 100]", c.FailureRateThreshold)
	case c.SlowCallRateThreshold <= 0 || c.SlowCallRateThreshold > 100:
		return fmt.Errorf("slowCallRateThreshold: %v is not in (0, 100]", c.SlowCallRateThreshold)
	case c.SlowCallDurationThreshold < time.Nanosecond:
		return fmt.Errorf("slowCallDurationThreshold: %v must be at least 1ns", c.SlowCallDurationThreshold)
	case c.WaitDurationInOpenState < time.Millisecond:
		return fmt.Errorf("waitDurationInOpenState: %v must be at least 1ms", c.WaitDurationInOpenState)
	case c.PermittedNumberOfCallsInHalfOpenState < 1:
		return fmt.Errorf("permittedNumberOfCallsInHalfOpenState: %d must be at least 1", c.PermittedNumberOfCallsInHalfOpenState)
	case c.SlidingWindowSize < 1:
		return fmt.Errorf("slidingWindowSize: %d must be at least 1", c.SlidingWindowSize)
	case c.MinimumNumberOfCalls < 1:
		return fmt.Errorf("minimumNumberOfCalls: %d must be at least 1", c.MinimumNumberOfCalls)
	case c.MaxWaitDurationInHalfOpenState < 0:
		return fmt.Errorf("maxWaitDurationInHalfOpenState: %v must not be negative", c.MaxWaitDurationInHalfOpenState)
	case c.TransitionToStateAfterWaitDuration != StateOpen && c.TransitionToStateAfterWaitDuration != StateClosed:
		return fmt.Errorf("transitionToStateAfterWaitDuration: %v must be OPEN or CLOSED", c.TransitionToStateAfterWaitDuration)
	case c.InitialState < StateClosed || c.InitialState > StateMetricsOnly:
		return fmt.Errorf("initialState: %v is not a state", c.InitialState)
	}
	return nil
}

// TimeLimiterConfig is Resilience4j's TimeLimiterConfig.
type TimeLimiterConfig struct {
	// TimeoutDuration is how long a call may run; 0 times out at once.
	TimeoutDuration time.Duration
	// CancelRunningFuture cancels the call's context on timeout (library default true).
	CancelRunningFuture bool
}

// DefaultTimeLimiterConfig returns the library defaults: 1 s, cancel on timeout.
func DefaultTimeLimiterConfig() TimeLimiterConfig {
	return TimeLimiterConfig{TimeoutDuration: time.Second, CancelRunningFuture: true}
}

// RetryConfig is Resilience4j's RetryConfig.
type RetryConfig struct {
	// MaxAttempts counts the first call: 3 means one call and up to two retries (>= 1).
	MaxAttempts int
	// WaitDuration is the wait before the first retry (>= 0).
	WaitDuration time.Duration
	// EnableExponentialBackoff multiplies the wait by ExponentialBackoffMultiplier per retry.
	EnableExponentialBackoff bool
	// ExponentialBackoffMultiplier is > 0; the library default is 1.5.
	ExponentialBackoffMultiplier float64
	// ExponentialMaxWaitDuration caps an exponential wait; 0 means no cap.
	ExponentialMaxWaitDuration time.Duration
	// EnableRandomizedWait spreads each wait by ±RandomizedWaitFactor.
	EnableRandomizedWait bool
	// RandomizedWaitFactor is in [0, 1); the library default is 0.5.
	RandomizedWaitFactor float64
	// Retryable says whether an error is retried. Nil means the library default:
	// every error is retried (CallNotPermitted included).
	Retryable func(err error) bool
	// RetryOnResult says whether a call's result (a call that returned no
	// error) is retried (retryOnResult / Spring's result-predicate). Nil: never.
	RetryOnResult func(result any) bool
	// FailAfterMaxAttempts makes ExecuteResult return *MaxRetriesExceededError
	// when the last attempt's result still asked for a retry (failAfterMaxAttempts,
	// default false: that result is returned).
	FailAfterMaxAttempts bool
}

// DefaultRetryConfig returns the library defaults: 3 attempts, 500 ms fixed wait.
func DefaultRetryConfig() RetryConfig {
	return RetryConfig{MaxAttempts: 3, WaitDuration: 500 * time.Millisecond, ExponentialBackoffMultiplier: 1.5, RandomizedWaitFactor: 0.5}
}

// Validate applies the library builder's checks.
func (c RetryConfig) Validate() error {
	switch {
	case c.MaxAttempts < 1:
		return fmt.Errorf("maxAttempts: %d must be at least 1", c.MaxAttempts)
	case c.WaitDuration < 0:
		return fmt.Errorf("waitDuration: %v must not be negative", c.WaitDuration)
	case c.EnableExponentialBackoff && c.ExponentialBackoffMultiplier <= 0:
		return fmt.Errorf("exponentialBackoffMultiplier: %v must be > 0", c.ExponentialBackoffMultiplier)
	case c.EnableRandomizedWait && (c.RandomizedWaitFactor < 0 || c.RandomizedWaitFactor >= 1):
		return fmt.Errorf("randomizedWaitFactor: %v is not in [0, 1)", c.RandomizedWaitFactor)
	}
	return nil
}
