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

// AdaptClock builds a Clock from any clock's Now and AfterFunc methods whose
// timer type has Stop, e.g. AdaptClock(c.Now, c.AfterFunc) for a breaker.Clock
// (a scaled or virtual clock), without collect importing that package.
func AdaptClock[T interface{ Stop() bool }](now func() time.Time, afterFunc func(time.Duration, func()) T) Clock {
	return adapted[T]{now, afterFunc}
}

type adapted[T interface{ Stop() bool }] struct {
	now   func() time.Time
	after func(time.Duration, func()) T
}

func (a adapted[T]) Now() time.Time { return a.now() }

func (a adapted[T]) AfterFunc(d time.Duration, f func()) Timer { return a.after(d, f) }
