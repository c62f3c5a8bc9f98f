package collect

import (
	"context"
	"math"
	"time"
)

// Source is one way of reading breaker metrics. Poll performs one read and
// returns what it saw; it is called from one goroutine at a time.
type Source interface {
	// Name describes the source for messages, e.g. "actuator http://127.0.0.1:8080".
	Name() string
	// Poll reads the source once.
	Poll(ctx context.Context) (Snapshot, error)
}

// Snapshot is the result of one poll.
type Snapshot struct {
	// Source is the Name of the source that produced the snapshot.
	Source string `json:"source"`
	// Sent is the local time the first request of the poll was sent.
	Sent time.Time `json:"sent"`
	// Received is the local time the last answer of the poll was read.
	Received time.Time `json:"received"`
	// Breakers holds one sample per breaker (and instance).
	Breakers []BreakerSample `json:"breakers"`
	// Events are the events first seen in this poll (de-duplicated), oldest first.
	// They happened after the source started: events older than that are in
	// History, never here, so nothing that counts Events counts history.
	Events []Event `json:"events,omitempty"`
	// History are events the service had buffered before the source started
	// (its first poll): shown with their date, never counted as transitions
	// during the run. Each has History set. See ActuatorSource for the rule.
	History []Event `json:"history,omitempty"`
	// Lost reports events dropped by the service's ring buffer between polls.
	Lost []LostEvents `json:"lost,omitempty"`
	// Limiters are time limiter counters (Prometheus sources only).
	Limiters []LimiterSample `json:"limiters,omitempty"`
	// Retries are retry counters (Prometheus sources only).
	Retries []RetrySample `json:"retries,omitempty"`
	// Restarts are service restarts the source itself noticed (event ring cleared,
	// process start time changed).
	Restarts []Reset `json:"restarts,omitempty"`
	// EventsOK is true when the breaker event endpoint was read in this poll, so
	// Events is complete unless Lost says otherwise.
	EventsOK bool `json:"eventsOK"`
	// Notices are one-time remarks about the source (an endpoint not exposed, a
	// pre-processed exposition); each is reported once per source.
	Notices []string `json:"notices,omitempty"`
	// Warnings are problems with optional endpoints in this poll (the poll still counts).
	Warnings []string `json:"warnings,omitempty"`
}

// BreakerSample is one breaker's metrics as read in one poll. Rates are
// percentages: -1 means the breaker reported no rate (fewer calls than its
// minimum), NaN means the source did not carry the value. Thresholds are NaN
// when unknown (Prometheus does not export them). Counts are float64 because
// Prometheus carries every value as a float; NaN means not reported.
type BreakerSample struct {
	// Name is the breaker's registry name.
	Name string `json:"breaker"`
	// Instance distinguishes replicas (the Prometheus "instance" label); "" for a single service.
	Instance string `json:"instance,omitempty"`
	// Sent and Received are the local send and receive times of the poll (see Snapshot).
	Sent time.Time `json:"sent"`
	// Received is the local receive time of the poll.
	Received time.Time `json:"received"`
	// ObservedAt is when the values were read at the service: Received for direct
	// reads, the Prometheus scrape time for the prom-api source.
	ObservedAt time.Time `json:"observedAt"`
	// State is the Java state name: CLOSED, OPEN, HALF_OPEN, DISABLED, FORCED_OPEN,
	// METRICS_ONLY; "" when the source did not say.
	State string `json:"state"`
	// FailureRate is the failure rate of the current window in percent.
	FailureRate float64 `json:"failureRate"`
	// SlowCallRate is the slow-call rate of the current window in percent.
	SlowCallRate float64 `json:"slowCallRate"`
	// FailureRateThreshold is the configured failure-rate threshold in percent.
	FailureRateThreshold float64 `json:"failureRateThreshold"`
	// SlowCallRateThreshold is the configured slow-call-rate threshold in percent.
	SlowCallRateThreshold float64 `json:"slowCallRateThreshold"`
	// Buffered is the number of calls in the current window.
	Buffered float64 `json:"buffered"`
	// Failed is the number of failed calls in the window (slow ones included).
	Failed float64 `json:"failed"`
	// Slow is the number of slow calls in the window (successful and failed).
	Slow float64 `json:"slow"`
	// SlowFailed is the number of calls in the window that were both slow and failed.
	SlowFailed float64 `json:"slowFailed"`
	// NotPermitted is the actuator's notPermittedCalls: refusals counted on the
	// current metrics object; it resets on most transitions.
	NotPermitted float64 `json:"notPermitted"`
	// NotPermittedTotal is Micrometer's monotonic not_permitted_calls counter
	// (Prometheus sources); it misses FORCED_OPEN refusals.
	NotPermittedTotal float64 `json:"notPermittedTotal"`
	// CallsSuccessful, CallsFailed and CallsIgnored are Micrometer's monotonic
	// call timer counts (Prometheus sources).
	CallsSuccessful float64 `json:"callsSuccessful"`
	// CallsFailed is the monotonic count of calls recorded as failures.
	CallsFailed float64 `json:"callsFailed"`
	// CallsIgnored is the monotonic count of ignored errors.
	CallsIgnored float64 `json:"callsIgnored"`
	// ProcessStart is process_start_time_seconds (Unix seconds) when scraped, else NaN.
	ProcessStart float64 `json:"processStart"`
}

// newBreakerSample returns a sample with every value unknown (NaN).
func newBreakerSample(name, instance string) BreakerSample {
	n := math.NaN()
	return BreakerSample{Name: name, Instance: instance, FailureRate: n, SlowCallRate: n,
		FailureRateThreshold: n, SlowCallRateThreshold: n, Buffered: n, Failed: n, Slow: n,
		SlowFailed: n, NotPermitted: n, NotPermittedTotal: n, CallsSuccessful: n, CallsFailed: n,
		CallsIgnored: n, ProcessStart: n}
}

// Key identifies a breaker across samples: name and instance.
func (s BreakerSample) Key() BreakerKey { return BreakerKey{Name: s.Name, Instance: s.Instance} }

// BreakerKey identifies one breaker of one replica.
type BreakerKey struct {
	// Name is the breaker's registry name.
	Name string `json:"breaker"`
	// Instance is the replica ("" for a single service).
	Instance string `json:"instance,omitempty"`
}

// String returns "name" or "name@instance".
func (k BreakerKey) String() string {
	if k.Instance == "" {
		return k.Name
	}
	return k.Name + "@" + k.Instance
}

// Event kinds.
const (
	KindCircuitBreaker = "circuitbreaker"
	KindTimeLimiter    = "timelimiter"
	KindRetry          = "retry"
)

// Event is one actuator event (circuit breaker, time limiter or retry).
type Event struct {
	// Kind is KindCircuitBreaker, KindTimeLimiter or KindRetry.
	Kind string `json:"kind"`
	// Name is the breaker, limiter or retry name.
	Name string `json:"name"`
	// Instance is the replica ("" for a single service).
	Instance string `json:"instance,omitempty"`
	// Type is the Java event type, e.g. "STATE_TRANSITION", "TIMEOUT", "RETRY".
	Type string `json:"type"`
	// CreationTime is the event's creation time at the service (its wall clock).
	CreationTime time.Time `json:"creationTime"`
	// RawTime is creationTime exactly as the service wrote it.
	RawTime string `json:"rawTime"`
	// StateTransition is e.g. "CLOSED_TO_OPEN" (STATE_TRANSITION only).
	StateTransition string `json:"stateTransition,omitempty"`
	// ErrorMessage is the Java throwable.toString() (ERROR, IGNORED_ERROR, retry events).
	ErrorMessage string `json:"errorMessage,omitempty"`
	// DurationMs is the call's elapsed time in milliseconds; -1 when absent.
	DurationMs int64 `json:"durationMs"`
	// NumberOfAttempts is the retry attempt count (retry events only).
	NumberOfAttempts int `json:"numberOfAttempts,omitempty"`
	// Polled is the local receive time of the poll that first delivered the event.
	Polled time.Time `json:"polled"`
	// History is true for an event that happened before the source started
	// (before the watch or the arm): it is evidence of the past, not of the run.
	History bool `json:"history,omitempty"`
}

// LostEvents says that a service's event ring buffer may have dropped events of
// one breaker (or limiter, or retry) between two polls: every buffered event
// was newer than the last one seen and the buffer was full.
type LostEvents struct {
	// Kind is the event kind (KindCircuitBreaker, ...).
	Kind string `json:"kind"`
	// Name is the breaker, limiter or retry name.
	Name string `json:"name"`
	// Instance is the replica.
	Instance string `json:"instance,omitempty"`
	// After is the creation time of the last event seen before the gap.
	After time.Time `json:"after"`
	// Before is the creation time of the oldest event in the poll that found the gap.
	Before time.Time `json:"before"`
	// AtLeast is a proven lower bound of the number of events lost, from the
	// breaker's counters (notPermittedCalls and bufferedCalls grew by more than
	// the events seen); 0 means none could be proven, though some may be lost.
	AtLeast int `json:"atLeast"`
	// BufferSize is the ring size assumed (event-consumer-buffer-size).
	BufferSize int `json:"bufferSize"`
	// Polled is the local receive time of the poll that found the gap.
	Polled time.Time `json:"polled"`
}

// LimiterSample is one time limiter's monotonic counters (Prometheus sources).
type LimiterSample struct {
	// Name is the time limiter's name.
	Name string `json:"name"`
	// Instance is the replica.
	Instance string `json:"instance,omitempty"`
	// Received is the local receive time of the poll.
	Received time.Time `json:"received"`
	// Successful, Failed and Timeout count SUCCESS, ERROR and TIMEOUT events.
	Successful float64 `json:"successful"`
	// Failed counts calls that failed within the time limit.
	Failed float64 `json:"failed"`
	// Timeout counts calls cut by the time limit.
	Timeout float64 `json:"timeout"`
}

// RetrySample is one retry's monotonic counters (Prometheus sources).
type RetrySample struct {
	// Name is the retry's name.
	Name string `json:"name"`
	// Instance is the replica.
	Instance string `json:"instance,omitempty"`
	// Received is the local receive time of the poll.
	Received time.Time `json:"received"`
	// The four kinds of resilience4j_retry_calls.
	SuccessfulWithoutRetry float64 `json:"successfulWithoutRetry"`
	// SuccessfulWithRetry counts calls that succeeded after at least one retry.
	SuccessfulWithRetry float64 `json:"successfulWithRetry"`
	// FailedWithoutRetry counts failures that were not retryable.
	FailedWithoutRetry float64 `json:"failedWithoutRetry"`
	// FailedWithRetry counts calls that failed after all attempts.
	FailedWithRetry float64 `json:"failedWithRetry"`
}

// Reset is a detected service restart (or metrics reset) of one breaker.
type Reset struct {
	// Breaker identifies the breaker ("" name: the whole service).
	Breaker BreakerKey `json:"breaker"`
	// Received is the local receive time of the poll that revealed it.
	Received time.Time `json:"received"`
	// Reason says what showed the reset.
	Reason string `json:"reason"`
}

// Gap is a stretch of failed polls.
type Gap struct {
	// From is the receive time of the last good poll (zero: none yet).
	From time.Time `json:"from"`
	// To is the send time of the poll that worked again (zero: still failing).
	To time.Time `json:"to"`
	// Polls is the number of failed polls.
	Polls int `json:"polls"`
	// Reasons lists the distinct errors, in order of first appearance.
	Reasons []string `json:"reasons"`
}
