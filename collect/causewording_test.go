package collect

import (
	"github.com/cbprobe/cbprobe/breaker"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestCauseWordingWithoutEvents: a breaker opens while the event endpoint is
// not exposed and the first OPEN sample is below both thresholds. The cause
// is unknown and the reason says the events were unavailable, with no guess
// at what happened.
func TestCauseWordingWithoutEvents(t *testing.T) {
	for _, exposed := range []bool{false, true} {
		name := map[bool]string{false: "events endpoint absent", true: "events read, none published"}[exposed]
		t.Run(name, func(t *testing.T) {
			f := newFake()
			if !exposed {
				f.override["/actuator/circuitbreakerevents"] = func(w http.ResponseWriter) { w.WriteHeader(404) }
			}
			srv := httptest.NewServer(f)
			defer srv.Close()
			src := NewActuator(srv.URL, HTTPOptions{})
			tk := NewTracker(nil)
			tk.Observe(pollOK(t, src))
			f.mu.Lock()
			f.state, f.fail, f.slow, f.failed, f.buffered = "OPEN", "10.0%", "0.0%", 2, 20
			f.mu.Unlock()
			got, _ := tk.Observe(pollOK(t, src))
			if len(got) != 1 || got[0].Cause != breaker.CauseUnknown {
				t.Fatalf("transitions %+v", got)
			}
			tr := got[0]
			for _, guess := range []string{"manual", "TIME_BASED", "slid"} {
				if strings.Contains(tr.Reason, guess) {
					t.Errorf("reason speculates (%q): %s", guess, tr.Reason)
				}
			}
			want := "no threshold events"
			if !exposed {
				want = "breaker events unavailable"
			}
			if !strings.Contains(tr.Reason, want) || !strings.Contains(strings.Join(tr.Evidence.Missing, "|"), want) {
				t.Errorf("reason %q, missing %q: want both to say %q", tr.Reason, tr.Evidence.Missing, want)
			}
		})
	}
}
