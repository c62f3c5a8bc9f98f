package breaker

import (
	"sync/atomic"
	"testing"
	"time"
)

func TestVirtualClockOrder(t *testing.T) {
	c := NewVirtualClock(t0())
	var got []string
	at := func(name string) func() {
		return func() { got = append(got, name+"@"+c.Now().Sub(t0()).String()) }
	}
	c.AfterFunc(2*time.Second, at("b"))
	c.AfterFunc(time.Second, func() {
		at("a")()
		// Scheduled from inside a timer: counts from this timer's due time (1s).
		c.AfterFunc(time.Second, at("c"))
	})
	c.AfterFunc(2*time.Second, at("b2")) // same due time as b, scheduled later
	stopped := c.AfterFunc(1500*time.Millisecond, at("stopped"))
	if !stopped.Stop() || stopped.Stop() {
		t.Fatal("Stop must report true once, then false")
	}
	if due, ok := c.NextDue(); !ok || !due.Equal(t0().Add(time.Second)) {
		t.Fatalf("NextDue = %v %v", due, ok)
	}
	c.AdvanceTo(t0().Add(2 * time.Second))
	want := []string{"a@1s", "b@2s", "b2@2s", "c@2s"}
	if !equalStrings(got, want) {
		t.Fatalf("fired %v, want %v", got, want)
	}
	if !c.Now().Equal(t0().Add(2 * time.Second)) {
		t.Errorf("Now = %v", c.Now())
	}
	if _, ok := c.NextDue(); ok || c.Pending() != 0 {
		t.Error("no timer should be pending")
	}
	c.AdvanceTo(t0()) // backwards: nothing moves
	if !c.Now().Equal(t0().Add(2 * time.Second)) {
		t.Error("AdvanceTo into the past moved the clock")
	}
	c.Advance(time.Second)
	if !c.Now().Equal(t0().Add(3 * time.Second)) {
		t.Errorf("Advance: Now = %v", c.Now())
	}
}

func TestScaledClock(t *testing.T) {
	const speed = 1000
	c := NewScaledClock(speed)
	start := c.Now()
	realStart := time.Now()
	time.Sleep(20 * time.Millisecond)
	// time.Sleep sleeps at least 20ms, so the scaled clock moved at least 20s.
	if got := c.Now().Sub(start); got < 20*time.Second {
		t.Errorf("scaled clock moved %v after 20ms real, want >= 20s", got)
	}
	var fired atomic.Int64
	done := make(chan struct{})
	c.AfterFunc(30*time.Second, func() { fired.Store(int64(time.Since(realStart))); close(done) })
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("AfterFunc(30s) at speed 1000 did not fire within 10s real")
	}
	if got := time.Duration(fired.Load()); got < 30*time.Millisecond {
		t.Errorf("fired after %v real, want >= 30ms", got)
	}
	if NewScaledClock(-1).(*scaledClock).speed != 1 {
		t.Error("a non-positive speed must mean 1")
	}
}

func TestSystemClock(t *testing.T) {
	c := SystemClock()
	done := make(chan struct{})
	tm := c.AfterFunc(time.Millisecond, func() { close(done) })
	<-done
	if tm.Stop() {
		t.Error("Stop after firing must report false")
	}
	if c.Now().IsZero() {
		t.Error("zero Now")
	}
}
