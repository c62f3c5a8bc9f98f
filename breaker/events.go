package breaker

import (
	"errors"
	"fmt"
	"time"
)

// EventType is the type of a circuit breaker event (CircuitBreakerEvent.Type).
type EventType int

// The event types Resilience4j publishes.
const (
	// EventSuccess: a call was recorded as a success (ElapsedDuration set).
	EventSuccess EventType = iota
	// EventError: a call was recorded as a failure (ElapsedDuration, Err set).
	EventError
	// EventIgnoredError: a call's error was ignored (ElapsedDuration, Err set).
	EventIgnoredError
	// EventNotPermitted: a permit was refused.
	EventNotPermitted
	// EventStateTransition: the state changed (From, To set); always published.
	EventStateTransition
	// EventReset: Reset was called; always published.
	EventReset
	// EventFailureRateExceeded: the failure rate reached its threshold (FailureRate set).
	EventFailureRateExceeded
	// EventSlowCallRateExceeded: the slow-call rate reached its threshold (SlowCallRate set).
	EventSlowCallRateExceeded
)

// String returns the Java enum name, for example "NOT_PERMITTED".
func (t EventType) String() string {
	switch t {
	case EventSuccess:
		return "SUCCESS"
	case EventError:
		return "ERROR"
	case EventIgnoredError:
		return "IGNORED_ERROR"
	case EventNotPermitted:
		return "NOT_PERMITTED"
	case EventStateTransition:
		return "STATE_TRANSITION"
	case EventReset:
		return "RESET"
	case EventFailureRateExceeded:
		return "FAILURE_RATE_EXCEEDED"
	case EventSlowCallRateExceeded:
		return "SLOW_CALL_RATE_EXCEEDED"
	}
	return fmt.Sprintf("EventType(%d)", int(t))
}

// ParseEventType parses a Java enum name such as "STATE_TRANSITION".
func ParseEventType(s string) (EventType, error) {
	for t := EventSuccess; t <= EventSlowCallRateExceeded; t++ {
		if t.String() == s {
			return t, nil
		}
	}
	return 0, fmt.Errorf("unknown circuit breaker event type %q", s)
}

// forcePublish reports whether the event passes the publication filter in every state.
func (t EventType) forcePublish() bool {
	return t == EventStateTransition || t == EventReset
}

// Event is a circuit breaker event as Resilience4j publishes it.
type Event struct {
	// BreakerName is the name of the breaker that published the event.
	BreakerName string
	// Type is the event type.
	Type EventType
	// CreationTime is the breaker clock's time when the event was built.
	CreationTime time.Time
	// From and To are set for STATE_TRANSITION only.
	From, To State
	// ElapsedDuration is the call's duration, for SUCCESS, ERROR and IGNORED_ERROR.
	ElapsedDuration time.Duration
	// Err is the call's error, for ERROR and IGNORED_ERROR.
	Err error
	// FailureRate and SlowCallRate are percentages read when a FAILURE_RATE_EXCEEDED
	// or SLOW_CALL_RATE_EXCEEDED event was published.
	FailureRate, SlowCallRate float32
}

// Transition returns the StateTransition name such as "CLOSED_TO_OPEN" for a
// STATE_TRANSITION event and "" for any other type.
func (e Event) Transition() string {
	if e.Type != EventStateTransition {
		return ""
	}
	return e.From.String() + "_TO_" + e.To.String()
}

// CallNotPermittedError is returned by Execute when the breaker refuses a call
// (Resilience4j's CallNotPermittedException).
type CallNotPermittedError struct {
	// Name is the breaker's name.
	Name string
	// State is the breaker's state when it refused.
	State State
}

// Error returns the library's message, e.g. "CircuitBreaker 'pg' is OPEN and does not permit further calls".
func (e *CallNotPermittedError) Error() string {
	return fmt.Sprintf("CircuitBreaker '%s' is %s and does not permit further calls", e.Name, e.State)
}

// IsCallNotPermitted reports whether err is or wraps a *CallNotPermittedError.
func IsCallNotPermitted(err error) bool {
	var e *CallNotPermittedError
	return errors.As(err, &e)
}

// IllegalTransitionError is returned by TransitionTo for a pair of states that
// Resilience4j's StateTransition does not allow (IllegalStateTransitionException).
type IllegalTransitionError struct {
	// Name is the breaker's name.
	Name string
	// From is the current state, To the refused target.
	From, To State
}

// Error returns the library's message.
func (e *IllegalTransitionError) Error() string {
	return fmt.Sprintf("CircuitBreaker '%s' tried an illegal state transition from %s to %s", e.Name, e.From, e.To)
}

// ResultRecordedAsFailureError is the error recorded when a call's result (not an
// error) is classified as a failure (ResultRecordedAsFailureException).
type ResultRecordedAsFailureError struct {
	// Name is the breaker's name.
	Name string
	// Result is the result's string form.
	Result string
}

// Error returns the library's message.
func (e *ResultRecordedAsFailureError) Error() string {
	return fmt.Sprintf("CircuitBreaker '%s' has recorded '%s' as a failure", e.Name, e.Result)
}

// legalTransition reports whether Resilience4j's StateTransition enum holds from→to.
// Same-state pairs are legal "internal" transitions that publish no event.
func legalTransition(from, to State) bool {
	switch {
	case from == StateClosed && to == StateHalfOpen:
		return false
	case from == StateMetricsOnly && (to == StateOpen || to == StateHalfOpen):
		return false
	}
	return from >= StateClosed && from <= StateMetricsOnly && to >= StateClosed && to <= StateMetricsOnly
}
