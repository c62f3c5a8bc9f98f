package breaker

import "errors"

// ErrorClassifier builds a Classifier with the library's precedence
// (CircuitBreakerStateMachine.handleThrowable): an error for which ignore is true
// is ignored; else one for which record is true is a failure; else it counts as
// a success. A nil record means every error is recorded (the default); a nil
// ignore ignores nothing.
func ErrorClassifier(record, ignore func(error) bool) Classifier {
	return func(err error) Outcome {
		if ignore != nil && ignore(err) {
			return OutcomeIgnored
		}
		if record == nil || record(err) {
			return OutcomeFailure
		}
		return OutcomeSuccess
	}
}

// ErrorOfType reports whether err is or wraps an error of type T (errors.As),
// the Go counterpart of matching an exception class with isAssignableFrom:
// ErrorClassifier(nil, ErrorOfType[*TimeoutError]) ignores timeouts.
func ErrorOfType[T error](err error) bool {
	var t T
	return errors.As(err, &t)
}

// AnyError returns a predicate that is true when err is or wraps one of targets (errors.Is).
func AnyError(targets ...error) func(error) bool {
	return func(err error) bool {
		for _, t := range targets {
			if errors.Is(err, t) {
				return true
			}
		}
		return false
	}
}
