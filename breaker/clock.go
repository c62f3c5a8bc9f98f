package breaker

import (
	"container/heap"
	"sync"
	"time"
)

// Clock is the time source of a breaker, a time limiter and a retry: it reads the
// current instant and runs a function once after a duration of its own time.
type Clock interface {
	// Now returns the current instant of this clock.
	Now() time.Time
	// AfterFunc runs f once after d of this clock's time has passed.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a pending AfterFunc call.
type Timer interface {
	// Stop prevents the function from running. It reports whether it did so:
	// false means the function has already run or is running, or was stopped before.
	Stop() bool
}

// SystemClock returns the wall clock (time.Now, time.AfterFunc).
func SystemClock() Clock { return systemClock{} }

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

func (systemClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

// NewScaledClock returns a clock whose time runs speed times faster than the wall
// clock: Now starts at the real now and advances speed× faster, and AfterFunc(d)
// fires after d/speed of real time. A speed that is not positive means 1.
func NewScaledClock(speed float64) Clock {
	if !(speed > 0) {
		speed = 1
	}
	return &scaledClock{start: time.Now(), speed: speed}
}

type scaledClock struct {
	start time.Time
	speed float64
}

func (c *scaledClock) Now() time.Time {
	elapsed := time.Since(c.start)
	return c.start.Add(time.Duration(float64(elapsed) * c.speed))
}

func (c *scaledClock) AfterFunc(d time.Duration, f func()) Timer {
	return time.AfterFunc(time.Duration(float64(d)/c.speed), f)
}

// VirtualClock is a clock that moves only when told to (AdvanceTo, Advance).
// Its timers run synchronously inside AdvanceTo, in due-time order (ties in
// scheduling order); while a timer runs, Now reads that timer's due time, so a
// timer scheduled from inside a timer counts from the first one's due time.
// It is safe for concurrent use, but AdvanceTo must not be called from a timer.
type VirtualClock struct {
	mu    sync.Mutex
	now   time.Time
	seq   uint64
	queue timerHeap
}

// NewVirtualClock returns a virtual clock that reads start until it is advanced.
func NewVirtualClock(start time.Time) *VirtualClock {
	return &VirtualClock{now: start}
}

// Now returns the clock's current instant (a timer's due time while it runs).
func (c *VirtualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// AfterFunc schedules f at Now()+d. A d of zero or less is due at once: it runs
// at the next AdvanceTo or Advance, even Advance(0).
func (c *VirtualClock) AfterFunc(d time.Duration, f func()) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	if d < 0 {
		d = 0
	}
	c.seq++
	t := &virtualTimer{clock: c, due: c.now.Add(d), seq: c.seq, f: f, index: -1}
	heap.Push(&c.queue, t)
	return t
}

// AdvanceTo moves the clock to t, first running every timer due at or before t
// in due-time order with Now reading each timer's due time. A t before Now
// runs the timers already due and leaves the clock where it is.
func (c *VirtualClock) AdvanceTo(t time.Time) {
	for {
		c.mu.Lock()
		if len(c.queue) == 0 || c.queue[0].due.After(t) {
			if t.After(c.now) {
				c.now = t
			}
			c.mu.Unlock()
			return
		}
		next := heap.Pop(&c.queue).(*virtualTimer)
		if next.due.After(c.now) {
			c.now = next.due
		}
		next.fired = true
		c.mu.Unlock()
		next.f()
	}
}

// Advance moves the clock forward by d (see AdvanceTo).
func (c *VirtualClock) Advance(d time.Duration) {
	c.AdvanceTo(c.Now().Add(d))
}

// NextDue reports the due time of the earliest pending timer, and false when
// no timer is pending.
func (c *VirtualClock) NextDue() (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.queue) == 0 {
		return time.Time{}, false
	}
	return c.queue[0].due, true
}

// Pending returns the number of timers not yet run nor stopped.
func (c *VirtualClock) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.queue)
}

type virtualTimer struct {
	clock *VirtualClock
	due   time.Time
	seq   uint64
	f     func()
	index int
	fired bool
}

// Stop removes the timer from its clock; false when it already ran or was stopped.
func (t *virtualTimer) Stop() bool {
	c := t.clock
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.fired || t.index < 0 {
		return false
	}
	heap.Remove(&c.queue, t.index)
	return true
}

type timerHeap []*virtualTimer

func (h timerHeap) Len() int { return len(h) }
func (h timerHeap) Less(i, j int) bool {
	if h[i].due.Equal(h[j].due) {
		return h[i].seq < h[j].seq
	}
	return h[i].due.Before(h[j].due)
}
func (h timerHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index = i
	h[j].index = j
}
func (h *timerHeap) Push(x any) {
	t := x.(*virtualTimer)
	t.index = len(*h)
	*h = append(*h, t)
}
func (h *timerHeap) Pop() any {
	old := *h
	n := len(old)
	t := old[n-1]
	old[n-1] = nil
	t.index = -1
	*h = old[:n-1]
	return t
}
