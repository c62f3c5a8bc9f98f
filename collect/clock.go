package collect

import "time"

// Clock is the time source of a Sampler: the current time and one-shot timers.
// It has the same shape as breaker.Clock, so breaker's clocks fit with a
// one-line adapter.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// AfterFunc runs f once, after d of this clock's time.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a pending AfterFunc call.
type Timer interface {
	// Stop cancels the call; it reports whether the call was still pending.
	Stop() bool
}

type systemClock struct{}

// SystemClock returns the wall clock.
func SystemClock() Clock { return systemClock{} }

func (systemClock) Now() time.Time { return time.Now() }

func (systemClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }
