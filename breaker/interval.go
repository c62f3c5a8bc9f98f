package breaker

import (
	"math"
	"math/rand/v2"
	"sync"
	"time"
)

// IntervalFunction is Resilience4j's IntervalFunction: the wait before attempt n
// (1-based), in whole milliseconds. The circuit breaker calls it with the number
// of times it has opened in a row (1 the first time, +1 for each failed HALF_OPEN
// trial, back to 1 after CLOSED) to get the OPEN wait; Retry calls it with the
// number of failed attempts so far.
type IntervalFunction func(attempt int) time.Duration

// FixedInterval returns IntervalFunction.of(d): d (truncated to whole ms) for every attempt.
func FixedInterval(d time.Duration) IntervalFunction {
	ms := d.Milliseconds()
	return func(int) time.Duration { return millis(ms) }
}

// ExponentialInterval returns IntervalFunction.ofExponentialBackoff(initial,
// multiplier[, max]): initial for attempt 1, then each value is the previous one
// times multiplier, truncated to whole ms at every step (Java's (long) cast,
// which saturates at Long.MAX_VALUE); the result is capped at max when max >= 1 ms.
func ExponentialInterval(initial time.Duration, multiplier float64, max time.Duration) IntervalFunction {
	ms := initial.Milliseconds()
	return func(n int) time.Duration {
		x := exponentialMillis(ms, multiplier, n)
		if max >= time.Millisecond {
			x = min(x, max.Milliseconds())
		}
		return millis(x)
	}
}

// RandomizedInterval returns IntervalFunction.ofRandomized(initial, factor): for
// every attempt, (long) max(1, x - f·x + r·(2·f·x + 1)) with x = initial in ms and
// r uniform in [0, 1), so the wait is a whole number of ms in
// [max(1, x - f·x), x + f·x + 1) (see RandomizedRange). rng draws r (nil: a generator seeded from the runtime); it is used under
// a lock, so the function is safe for concurrent use.
func RandomizedInterval(initial time.Duration, factor float64, rng *rand.Rand) IntervalFunction {
	ms := initial.Milliseconds()
	draw := lockedFloat64(rng)
	return func(int) time.Duration { return millis(randomize(ms, factor, draw())) }
}

// ExponentialRandomInterval returns IntervalFunction.ofExponentialRandomBackoff(initial,
// multiplier, factor[, max]): the exponential value of ExponentialInterval
// (without cap), randomised as RandomizedInterval does, then capped at max when
// max >= 1 ms.
func ExponentialRandomInterval(initial time.Duration, multiplier, factor float64, max time.Duration, rng *rand.Rand) IntervalFunction {
	ms := initial.Milliseconds()
	draw := lockedFloat64(rng)
	return func(n int) time.Duration {
		x := randomize(exponentialMillis(ms, multiplier, n), factor, draw())
		if max >= time.Millisecond {
			x = min(x, max.Milliseconds())
		}
		return millis(x)
	}
}

// RandomizedRange returns the smallest and largest waits RandomizedInterval
// returns for a wait of d and factor f: the whole milliseconds in
// [max(1, x - f·x), x + f·x + 1), x = d in ms. (A draw within about 1e-13 of 1
// can round up to the excluded end, in Java as in Go; it is left out.)
func RandomizedRange(d time.Duration, factor float64) (lo, hi time.Duration) {
	x := float64(d.Milliseconds())
	delta := factor * x
	l := javaLong(math.Max(1, x-delta))
	h := javaLong(math.Ceil(x+delta+1)) - 1
	return millis(l), millis(max(h, l))
}

func lockedFloat64(rng *rand.Rand) func() float64 {
	if rng == nil {
		rng = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	var mu sync.Mutex
	return func() float64 {
		mu.Lock()
		defer mu.Unlock()
		return rng.Float64()
	}
}

// exponentialMillis iterates x -> (long)(x * multiplier) n-1 times from ms.
func exponentialMillis(ms int64, multiplier float64, n int) int64 {
	x := ms
	for i := 1; i < n; i++ {
		next := javaLong(float64(x) * multiplier)
		if next == x {
			break // a fixed point (multiplier 1, 0 ms, or saturated): later steps change nothing
		}
		x = next
	}
	return x
}

// javaLong is Java's (long) cast of a double: truncation toward zero, NaN -> 0,
// saturating at Long.MIN_VALUE and Long.MAX_VALUE.
func javaLong(v float64) int64 {
	switch {
	case v != v:
		return 0
	case v >= math.MaxInt64:
		return math.MaxInt64
	case v <= math.MinInt64:
		return math.MinInt64
	}
	return int64(v)
}

// randomize is IntervalFunction.randomize followed by the (long) cast.
func randomize(ms int64, factor, random float64) int64 {
	x := float64(ms)
	delta := factor * x
	lo, hi := x-delta, x+delta
	return javaLong(math.Max(1, lo+random*(hi-lo+1)))
}

// millis converts whole milliseconds to a Duration, saturating instead of overflowing.
func millis(ms int64) time.Duration {
	const maxMS = math.MaxInt64 / int64(time.Millisecond)
	switch {
	case ms > maxMS:
		return time.Duration(math.MaxInt64)
	case ms < -maxMS:
		return time.Duration(math.MinInt64)
	}
	return time.Duration(ms) * time.Millisecond
}
