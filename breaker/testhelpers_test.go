package breaker

import (
	"testing"
	"time"
)

// t0 is the start of every virtual clock in these tests.
func t0() time.Time { return time.UnixMilli(1_700_000_000_000).UTC() }

// recorder collects events as "TYPE" or "STATE_TRANSITION X_TO_Y".
type recorder struct{ got []string }

func (r *recorder) add(e Event) {
	if e.Type == EventStateTransition {
		r.got = append(r.got, "STATE_TRANSITION "+e.Transition())
		return
	}
	r.got = append(r.got, e.Type.String())
}

func (r *recorder) take() []string {
	g := r.got
	r.got = nil
	return g
}

func newTestBreaker(t *testing.T, cfg Config) (*CircuitBreaker, *VirtualClock, *recorder) {
	t.Helper()
	clk := NewVirtualClock(t0())
	cb, err := New("test", cfg, WithClock(clk))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	rec := &recorder{}
	cb.Subscribe(rec.add)
	return cb, clk, rec
}

// boomError is the failure the tests' calls return.
type boomError struct{}

func (boomError) Error() string { return "boom" }

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
