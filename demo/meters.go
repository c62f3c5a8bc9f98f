package demo

import (
	"sync"
	"time"

	"github.com/cbprobe/cbprobe/breaker"
)

// ring is a fixed-size FIFO of the newest events (CircularEventConsumer).
type ring[T any] struct {
	mu    sync.Mutex
	buf   []T
	next  int
	full  bool
	total int64 // events ever added
}

func newRing[T any](size int) *ring[T] {
	if size < 1 {
		size = 1
	}
	return &ring[T]{buf: make([]T, size)}
}

func (r *ring[T]) add(v T) {
	r.mu.Lock()
	r.buf[r.next] = v
	r.next++
	r.total++
	if r.next == len(r.buf) {
		r.next, r.full = 0, true
	}
	r.mu.Unlock()
}

// snapshot returns the buffered events, oldest first.
func (r *ring[T]) snapshot() []T {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.full {
		return append([]T(nil), r.buf[:r.next]...)
	}
	out := make([]T, 0, len(r.buf))
	out = append(out, r.buf[r.next:]...)
	return append(out, r.buf[:r.next]...)
}

// Micrometer's Prometheus registry keeps a timer's max over its step (1 min)
// in a ring of 3 buckets rotated every 20 s (TimeWindowMax).
const (
	maxExpiry       = time.Minute
	maxBufferLength = 3
)

// windowMax is Micrometer's TimeWindowMax on a breaker clock.
type windowMax struct {
	ring       [maxBufferLength]time.Duration
	cur        int
	lastRotate time.Time
}

func (m *windowMax) rotate(now time.Time) {
	every := maxExpiry / maxBufferLength
	if m.lastRotate.IsZero() {
		m.lastRotate = now
		return
	}
	since := now.Sub(m.lastRotate)
	if since < every {
		return
	}
	if since >= maxExpiry {
		m.ring = [maxBufferLength]time.Duration{}
		m.cur = 0
		m.lastRotate = now.Add(-(since % every))
		return
	}
	for i := 0; since >= every && i < maxBufferLength; i++ {
		m.ring[m.cur] = 0
		m.cur = (m.cur + 1) % maxBufferLength
		since -= every
		m.lastRotate = m.lastRotate.Add(every)
	}
}

func (m *windowMax) record(now time.Time, d time.Duration) {
	m.rotate(now)
	for i := range m.ring {
		if d > m.ring[i] {
			m.ring[i] = d
		}
	}
}

func (m *windowMax) poll(now time.Time) time.Duration {
	m.rotate(now)
	return m.ring[m.cur]
}

// callTimer is a Micrometer timer fed by breaker events.
type callTimer struct {
	count int64
	total time.Duration
	max   windowMax
}

func (t *callTimer) record(now time.Time, d time.Duration) {
	if d < 0 {
		d = 0
	}
	t.count++
	t.total += d
	t.max.record(now, d)
}

func (t *callTimer) view(now time.Time) TimerView {
	return TimerView{Count: t.count, Sum: t.total.Seconds(), Max: t.max.poll(now).Seconds()}
}

// breakerMeters are the event-driven meters of one breaker (the timers and the
// not-permitted counter of TaggedCircuitBreakerMetricsPublisher).
type breakerMeters struct {
	mu           sync.Mutex
	clock        breaker.Clock
	calls        [3]callTimer
	notPermitted int64
}

func (m *breakerMeters) onEvent(e breaker.Event) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clock.Now()
	switch e.Type {
	case breaker.EventSuccess:
		m.calls[KindSuccessful].record(now, e.ElapsedDuration)
	case breaker.EventError:
		m.calls[KindFailed].record(now, e.ElapsedDuration)
	case breaker.EventIgnoredError:
		m.calls[KindIgnored].record(now, e.ElapsedDuration)
	case breaker.EventNotPermitted:
		m.notPermitted++
	}
}

func (m *breakerMeters) fill(v *BreakerView) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clock.Now()
	for k := range m.calls {
		v.Calls[k] = m.calls[k].view(now)
	}
	v.NotPermittedTotal = float64(m.notPermitted)
}
