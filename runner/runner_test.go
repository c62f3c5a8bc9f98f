package runner

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cbprobe/cbprobe/attack"
	"github.com/cbprobe/cbprobe/results"
)

func TestTimelineToWall(t *testing.T) {
	wall0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	svc0 := time.Date(2030, 6, 1, 0, 0, 0, 0, time.UTC)
	tl := timeline{wall0: wall0, svc0: svc0, speed: 20}
	// 10 s on the service's clock at speed 20 is 500 ms of real time.
	if got := tl.toWall(svc0.Add(10 * time.Second)); !got.Equal(wall0.Add(500 * time.Millisecond)) {
		t.Errorf("toWall(svc0+10s) = %s, want wall0+500ms", got.Sub(wall0))
	}
	if got := tl.fromWall(wall0.Add(500 * time.Millisecond)); !got.Equal(svc0.Add(10 * time.Second)) {
		t.Errorf("fromWall(wall0+500ms) = %s, want svc0+10s", got.Sub(svc0))
	}
	if got := tl.toWall(time.Time{}); !got.IsZero() {
		t.Errorf("toWall(zero) = %s, want the zero time (unknown stays unknown)", got)
	}
}

// TestLag: the load generator falling behind is said above the stated
// threshold (1 % of the plan, at least one request), and only then.
func TestLag(t *testing.T) {
	tests := []struct {
		name          string
		planned, d, l int
		behind        bool
	}{
		{"on time", 1000, 0, 0, false},
		{"one late of 40 is allowed", 40, 0, 1, false},
		{"ten of 1000 is allowed", 1000, 5, 5, false},
		{"eleven of 1000 is behind", 1000, 6, 5, true},
		{"two of 40 is behind", 40, 1, 1, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := lagOf(attack.Summary{Phases: []attack.PhaseSummary{{Planned: tc.planned, Dropped: tc.d, Late: tc.l}}})
			if l.Behind != tc.behind || (l.Behind && !strings.Contains(l.Warning, "fell behind")) {
				t.Errorf("lag %+v, want behind=%v with a warning", l, tc.behind)
			}
		})
	}
}

// TestPick: the breaker an arm follows. With a configured name (Prefer) that
// the metrics do not show, only a single other breaker stands in for it (with
// a note); among several, none does: the arm follows the configured name,
// unobserved, so reconciliation makes it inconclusive and names them.
func TestPick(t *testing.T) {
	tests := []struct {
		name, breaker, prefer, leftClosed string
		seen                              []string
		want                              string
		note                              bool
	}{
		{"asked for", "b", "", "", []string{"a", "b@i1"}, "b@i1", false},
		{"asked for, not seen", "x", "", "", []string{"a"}, "x", false},
		{"preferred seen", "", "feign", "", []string{"a", "feign"}, "feign", false},
		{"preferred missing, one other", "", "feign", "", []string{"payments"}, "payments", true},
		{"preferred missing, two others", "", "feign", "inventory", []string{"inventory", "shipping"}, "feign", false},
		{"preferred missing, none", "", "feign", "", nil, "feign", false},
		{"no preference, one", "", "", "", []string{"a"}, "a", false},
		{"no preference, first to leave CLOSED", "", "", "b", []string{"a", "b"}, "b", true},
		{"no preference, first seen", "", "", "", []string{"a", "b"}, "a", true},
		{"no preference, none", "", "", "", nil, "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := &state{cfg: &Config{Breaker: tc.breaker, Prefer: tc.prefer}, seenOrder: tc.seen, leftClosed: tc.leftClosed}
			got, notes := st.pick()
			if got != tc.want || (len(notes) > 0) != tc.note {
				t.Errorf("pick = %q, notes %q; want %q, a note: %v", got, notes, tc.want, tc.note)
			}
		})
	}
}

// TestDrained: the drain waits for a poll newer than the last answer plus one
// interval, and stops early only when polling has been failing since after
// the last answer (three polls, or FailedDrain on one hanging poll).
func TestDrained(t *testing.T) {
	wall0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return wall0.Add(time.Duration(ms) * time.Millisecond) }
	const interval = 20 * time.Millisecond
	lastAnswer := at(100) // one request sent at +90 ms, answered at +100 ms
	tests := []struct {
		name            string
		lastPoll        time.Time
		streak          int
		failSince, fail time.Time
		now             time.Time
		want            bool
	}{
		{"fresh poll after the last answer", at(121), 0, time.Time{}, time.Time{}, at(130), true},
		{"last poll too old, no failure: wait", at(110), 0, time.Time{}, time.Time{}, at(200), false},
		{"one poll failed just now: wait", at(80), 1, at(80), at(150), at(150), false},
		{"three failed polls after the last answer", at(80), 3, at(80), at(190), at(190), true},
		{"one poll hung past FailedDrain", at(80), 1, at(80), at(2100), at(2100), true},
		{"failures only before the last answer: wait", at(80), 3, at(40), at(95), at(200), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := &state{cfg: &Config{Interval: interval}, tl: timeline{wall0: wall0, svc0: wall0, speed: 1},
				requests: []results.Request{{Sent: at(90), Latency: lastAnswer.Sub(at(90))}},
				lastPoll: tc.lastPoll, failStreak: tc.streak, failSince: tc.failSince, lastFail: tc.fail}
			if got := st.drained(tc.now); got != tc.want {
				t.Errorf("drained = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestNoticesDeliveredInOrderBeforeStop: every message sent is delivered, in
// order, by the time stop returns (none is printed after the run's output).
func TestNoticesDeliveredInOrderBeforeStop(t *testing.T) {
	var got []string // written only by the delivering goroutine, read after stop
	n := startNotices(func(m string) { got = append(got, m) })
	var want []string
	for i := range 200 {
		m := fmt.Sprint("notice ", i)
		want = append(want, m)
		n.send(m)
	}
	n.stop()
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("delivered %d notices %q…, want all 200 in order", len(got), got[:min(3, len(got))])
	}
}
