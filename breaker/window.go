package breaker

import (
	"math"
	"time"
)

// noSecond is the clock reading passed to metrics.record when none was taken.
const noSecond int64 = math.MinInt64

// outcome codes stored per call in a window.
const (
	codeEmpty uint8 = iota // a slot of a COUNT_BASED ring that holds no call yet
	codeSuccess
	codeError
	codeSlowSuccess
	codeSlowError
)

// aggregation is the sum of a set of recorded calls.
type aggregation struct {
	calls, failed, slow, slowFailed int
}

func (a *aggregation) add(code uint8) {
	a.calls++
	switch code {
	case codeError:
		a.failed++
	case codeSlowSuccess:
		a.slow++
	case codeSlowError:
		a.failed++
		a.slow++
		a.slowFailed++
	}
}

func (a *aggregation) remove(code uint8) {
	a.calls--
	switch code {
	case codeError:
		a.failed--
	case codeSlowSuccess:
		a.slow--
	case codeSlowError:
		a.failed--
		a.slow--
		a.slowFailed--
	}
}

func (a *aggregation) removeBucket(b *bucket) {
	a.calls -= b.calls
	a.failed -= b.failed
	a.slow -= b.slow
	a.slowFailed -= b.slowFailed
}

// bucket is one epoch second of a TIME_BASED window.
type bucket struct {
	aggregation
	epochSecond int64
}

// result of a threshold check (CircuitBreakerMetrics.Result).
type result uint8

const (
	belowMinimumCalls result = iota
	belowThresholds
	failureRateAbove
	slowCallRateAbove
	aboveThresholds
)

func (r result) exceeded() bool        { return r >= failureRateAbove }
func (r result) failureExceeded() bool { return r == failureRateAbove || r == aboveThresholds }
func (r result) slowExceeded() bool    { return r == slowCallRateAbove || r == aboveThresholds }

// metrics is a CircuitBreakerMetrics object: a sliding window (COUNT_BASED ring of
// calls or TIME_BASED ring of epoch-second buckets), its minimum number of calls
// and the not-permitted counter. It is guarded by the breaker's mutex.
//
// The fields a record writes (total, head) come first, with the ones it reads,
// so that they share one 64-byte cache line (the struct is 120 bytes, a
// 128-byte size class: objects start on a line).
type metrics struct {
	total        aggregation
	head         int
	size         int
	minCalls     int
	timeBased    bool
	ring         []uint8 // COUNT_BASED: one code per call
	buckets      []bucket
	notPermitted int64
}

// newCountMetrics builds a COUNT_BASED window of size calls (size 0: never records).
func newCountMetrics(size, minCalls int) *metrics {
	// Capacity rounded up to whole 64-byte lines: the ring is written by every
	// record and should not share a cache line with another object.
	return &metrics{size: size, minCalls: minCalls, ring: make([]uint8, size, (size+63)&^63)}
}

// newTimeMetrics builds a TIME_BASED window of size seconds whose head is nowSec.
func newTimeMetrics(size, minCalls int, nowSec int64) *metrics {
	m := &metrics{timeBased: true, size: size, minCalls: minCalls, buckets: make([]bucket, size)}
	for i := range m.buckets {
		m.buckets[i].epochSecond = nowSec + int64(i)
	}
	return m
}

// record adds one call. A TIME_BASED window records it at sec, a clock reading
// (epoch seconds) its caller took before taking the breaker's lock, unless sec
// is older than the window's head second (or noSecond): then it reads now
// itself, as the library does under its lock.
//
// Why an earlier reading is exact: every operation that reads the window
// slides it to its own clock reading first, so no reading applied to it is
// later than the head second. When sec is newer, recording at sec is what the
// library does for a caller that takes the lock at the instant it read the
// clock; when sec equals the head second, it is what the library does for a
// caller linearized just after the last operation that slid the window, an
// instant within the caller's call and within that second. If sec is older
// (another caller's later reading got the lock first, or the wall clock
// stepped back), it is discarded and the library's rule applies to a fresh
// reading.
func (m *metrics) record(code uint8, sec int64, now func() time.Time) {
	m.total.add(code)
	if m.timeBased {
		if sec < m.buckets[m.head].epochSecond {
			sec = now().Unix()
		}
		m.moveTo(sec).add(code)
		return
	}
	if m.size == 0 {
		// The library counts the call, then fails with / by zero: not covered.
		return
	}
	m.head++
	if m.head == m.size {
		m.head = 0
	}
	if old := m.ring[m.head]; old != codeEmpty {
		m.total.remove(old)
	}
	m.ring[m.head] = code
}

// moveTo slides a TIME_BASED window to nowSec and returns the head bucket
// (SlidingTimeWindowMetrics.moveWindowToCurrentEpochSecond).
func (m *metrics) moveTo(nowSec int64) *bucket {
	b := &m.buckets[m.head]
	d := nowSec - b.epochSecond
	if d == 0 {
		return b
	}
	steps := d
	if steps > int64(m.size) {
		steps = int64(m.size)
	}
	for {
		steps--
		m.head++
		if m.head == m.size {
			m.head = 0
		}
		b = &m.buckets[m.head]
		m.total.removeBucket(b)
		b.aggregation = aggregation{}
		b.epochSecond = nowSec - steps
		if steps <= 0 {
			return b
		}
	}
}

// snapshot returns the window's totals, sliding a TIME_BASED window first.
func (m *metrics) snapshot(now func() time.Time) aggregation {
	if m.timeBased {
		m.moveTo(now().Unix())
	}
	return m.total
}

// rate is count*100/calls in float32, or -1 below the minimum number of calls.
func (m *metrics) rate(count, calls int) float32 {
	if calls == 0 || calls < m.minCalls {
		return -1
	}
	return float32(float32(count)*100) / float32(calls)
}

// check classifies a snapshot against the thresholds (checkIfThresholdsExceeded).
func (m *metrics) check(a aggregation, failureThreshold, slowThreshold float32) result {
	fr := m.rate(a.failed, a.calls)
	sr := m.rate(a.slow, a.calls)
	if fr == -1 || sr == -1 {
		return belowMinimumCalls
	}
	f := fr >= failureThreshold
	s := sr >= slowThreshold
	switch {
	case f && s:
		return aboveThresholds
	case f:
		return failureRateAbove
	case s:
		return slowCallRateAbove
	}
	return belowThresholds
}
