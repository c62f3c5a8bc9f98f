package collect

import (
	"testing"
	"time"
)

// TestLateEventAfterPolledChange: a poll shows the breaker OPEN before its
// CLOSED_TO_OPEN event has been read (the event endpoint lagged); the next poll
// brings the event, which upgrades the poll-based transition, with the sample
// still OPEN. The event extends the chain of states without creating a
// transition, which once made Observe slice past the created ones and panic
// (seen in a fleet run on a loaded machine). The transition must be kept once,
// timed by its event.
func TestLateEventAfterPolledChange(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	k := BreakerKey{Name: "pg"}
	snap := func(i int, state string, events ...Event) Snapshot {
		at := t0.Add(time.Duration(i) * 100 * time.Millisecond)
		s := newBreakerSample("pg", "")
		s.State, s.Sent, s.Received, s.ObservedAt = state, at, at, at
		return Snapshot{Source: "test", Sent: at, Received: at, Breakers: []BreakerSample{s}, Events: events, EventsOK: true}
	}
	event := Event{Kind: KindCircuitBreaker, Name: k.Name, Type: "STATE_TRANSITION", StateTransition: "CLOSED_TO_OPEN", CreationTime: t0.Add(170 * time.Millisecond)}
	for _, tc := range []struct {
		name  string
		polls []Snapshot
		to    []string // the states the transitions go to, in order
	}{
		{"event after the OPEN sample", []Snapshot{snap(1, "CLOSED"), snap(2, "OPEN"), snap(3, "OPEN", event)}, []string{"OPEN"}},
		{"event then HALF_OPEN in one poll", []Snapshot{snap(1, "CLOSED"), snap(2, "OPEN"),
			snap(3, "HALF_OPEN", event, Event{Kind: KindCircuitBreaker, Name: k.Name, Type: "STATE_TRANSITION", StateTransition: "OPEN_TO_HALF_OPEN", CreationTime: t0.Add(250 * time.Millisecond)})},
			[]string{"OPEN", "HALF_OPEN"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tk := NewTracker(nil)
			for _, s := range tc.polls {
				tk.Observe(s)
			}
			tk.Flush()
			var to []string
			for _, tr := range tk.Transitions() {
				to = append(to, tr.To)
			}
			if len(to) != len(tc.to) {
				t.Fatalf("transitions to %v, want %v", to, tc.to)
			}
			for i := range to {
				if to[i] != tc.to[i] {
					t.Fatalf("transitions to %v, want %v", to, tc.to)
				}
			}
			if first := tk.Transitions()[0]; first.TimeSource != TimeFromEvent || !first.Time.Equal(event.CreationTime) {
				t.Errorf("CLOSED→OPEN timed %v from %v, want the event's %v", first.Time, first.TimeSource, event.CreationTime)
			}
		})
	}
}
