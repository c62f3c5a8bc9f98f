package runner

import (
	"strings"
	"testing"
	"time"

	"github.com/cbprobe/cbprobe/attack"
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
