package demo

import (
	"time"

	"github.com/cbprobe/cbprobe/breaker"
)

// BreakerView is the state of one circuit breaker as the actuator and the
// Prometheus renderers read it: a copy, safe to keep.
type BreakerView struct {
	// Name is the breaker's registry name.
	Name string
	// State is the current state.
	State breaker.State
	// FailureRate and SlowCallRate are percentages, -1 below the minimum number of calls.
	FailureRate, SlowCallRate float32
	// FailureRateThreshold and SlowCallRateThreshold are the configured percentages.
	FailureRateThreshold, SlowCallRateThreshold float32
	// BufferedCalls, FailedCalls, SlowCalls, SlowFailedCalls count the current window.
	BufferedCalls, FailedCalls, SlowCalls, SlowFailedCalls int
	// NotPermittedCalls counts refusals on the current metrics object (it resets).
	NotPermittedCalls int64
	// Calls are the event-driven call timers by kind: successful, failed, ignored.
	Calls [3]TimerView
	// NotPermittedTotal is the monotonic NOT_PERMITTED event counter.
	NotPermittedTotal float64
}

// Timer kinds of resilience4j.circuitbreaker.calls, in BreakerView.Calls order.
const (
	KindSuccessful = 0
	KindFailed     = 1
	KindIgnored    = 2
)

// TimerView is a Micrometer timer's exported state.
type TimerView struct {
	// Count is the number of recorded calls.
	Count int64
	// Sum is the total recorded time in seconds.
	Sum float64
	// Max is the largest recorded time in seconds in the decaying window.
	Max float64
}

// TimeLimiterView is one time limiter's counters.
type TimeLimiterView struct {
	// Name is the registry name.
	Name string
	// Successful, Failed and Timeout count SUCCESS, ERROR and TIMEOUT events.
	Successful, Failed, Timeout float64
}

// BulkheadView is one thread-pool bulkhead's gauges (ThreadPoolBulkhead.Metrics), in threads or calls.
type BulkheadView struct {
	// Name is the registry name (Spring Cloud names it after the breaker).
	Name string
	// ActiveThreads run a call; AvailableThreads is MaxThreads minus ActiveThreads.
	ActiveThreads, AvailableThreads int
	// CoreThreads, MaxThreads and QueueCapacity are the configured sizes.
	CoreThreads, MaxThreads, QueueCapacity int
	// QueueDepth is the calls waiting for a thread; Threads the threads in the pool.
	QueueDepth, Threads int
}

// RetryView is one retry's counters (Retry.Metrics).
type RetryView struct {
	// Name is the registry name.
	Name string
	// The four counters of resilience4j.retry.calls.
	SuccessfulWithoutRetry, SuccessfulWithRetry, FailedWithoutRetry, FailedWithRetry float64
}

// HealthView is a breaker as the health indicator sees it.
type HealthView struct {
	BreakerView
	// AllowHealthIndicatorToFail reports OPEN as DOWN instead of CIRCUIT_OPEN.
	AllowHealthIndicatorToFail bool
}

// CBEventView is a circuit breaker event as the actuator lists it.
type CBEventView struct {
	// Breaker is the breaker's name.
	Breaker string
	// Type is the Java event type name, e.g. "STATE_TRANSITION".
	Type string
	// Time is the creation time.
	Time time.Time
	// ErrorMessage is throwable.toString(); empty when the event has none.
	ErrorMessage string
	// HasDuration says DurationMs is present (SUCCESS, ERROR, IGNORED_ERROR).
	HasDuration bool
	// DurationMs is the elapsed duration in whole milliseconds.
	DurationMs int64
	// StateTransition is e.g. "CLOSED_TO_OPEN"; empty otherwise.
	StateTransition string
}

// TLEventView is a time limiter event.
type TLEventView struct {
	// Limiter is the time limiter's name.
	Limiter string
	// Type is SUCCESS, TIMEOUT or ERROR.
	Type string
	// Time is the creation time.
	Time time.Time
}

// RetryEventView is a retry event.
type RetryEventView struct {
	// Retry is the retry's name.
	Retry string
	// Type is RETRY, ERROR, SUCCESS or IGNORED_ERROR.
	Type string
	// Time is the creation time.
	Time time.Time
	// ErrorMessage is throwable.toString(); empty when there is none.
	ErrorMessage string
	// NumberOfAttempts is the event's attempt count (0 for IGNORED_ERROR).
	NumberOfAttempts int
}
