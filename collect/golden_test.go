package collect

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// TestAnalyzeGolden analyses a recorded run (fixed times) with a trip by both
// rates, a failed half-open trial and a recovery, and compares the JSON with
// testdata/analyze.golden.json.
func TestAnalyzeGolden(t *testing.T) {
	t0 := time.Date(2026, 5, 5, 9, 0, 0, 0, time.UTC)
	poll := func(i int) (time.Time, time.Time) {
		s := t0.Add(time.Duration(i)*100*time.Millisecond + 50*time.Millisecond)
		return s, s.Add(2 * time.Millisecond)
	}
	var samples []BreakerSample
	var events []Event
	add := func(i int, state string, fail, slow, buffered, failed, slowN, slowFailed float64, evs ...Event) {
		s, r := poll(i)
		b := newBreakerSample("pg", "")
		b.Sent, b.Received, b.ObservedAt, b.State = s, r, r, state
		b.FailureRate, b.SlowCallRate, b.FailureRateThreshold, b.SlowCallRateThreshold = fail, slow, 60, 50
		b.Buffered, b.Failed, b.Slow, b.SlowFailed, b.NotPermitted = buffered, failed, slowN, slowFailed, 0
		samples = append(samples, b)
		for _, e := range evs {
			e.Kind, e.Name, e.Polled = KindCircuitBreaker, "pg", r
			if e.DurationMs == 0 {
				e.DurationMs = -1
			}
			events = append(events, e)
		}
	}
	ev := func(ms int, typ, tr, msg string) Event {
		c := t0.Add(time.Duration(ms) * time.Millisecond)
		return Event{Type: typ, CreationTime: c, RawTime: c.Format(time.RFC3339Nano) + "[Etc/UTC]", StateTransition: tr, ErrorMessage: msg}
	}
	timeout := "java.util.concurrent.TimeoutException: TimeLimiter 'pg' recorded a timeout exception."
	add(0, "CLOSED", -1, -1, 0, 0, 0, 0)
	add(1, "CLOSED", -1, -1, 3, 2, 2, 2, ev(110, "ERROR", "", timeout), ev(120, "ERROR", "", "java.io.IOException: reset"), ev(130, "SUCCESS", "", ""))
	add(2, "OPEN", 66.666664, 66.666664, 3, 2, 2, 2, ev(210, "FAILURE_RATE_EXCEEDED", "", ""), ev(211, "SLOW_CALL_RATE_EXCEEDED", "", ""), ev(212, "STATE_TRANSITION", "CLOSED_TO_OPEN", ""))
	add(3, "HALF_OPEN", -1, -1, 0, 0, 0, 0, ev(305, "STATE_TRANSITION", "OPEN_TO_HALF_OPEN", ""))
	add(4, "OPEN", 100, 0, 2, 2, 0, 0, ev(410, "ERROR", "", "java.io.IOException: reset"), ev(411, "STATE_TRANSITION", "HALF_OPEN_TO_OPEN", ""))
	add(5, "HALF_OPEN", -1, -1, 0, 0, 0, 0)
	add(6, "CLOSED", -1, -1, 0, 0, 0, 0, ev(601, "STATE_TRANSITION", "HALF_OPEN_TO_CLOSED", ""))
	got, err := json.MarshalIndent(Analyze(samples, events, nil), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "analyze.golden.json", got)
}

// checkGolden compares got (plus a final newline) with testdata/name, or
// rewrites the file with -update.
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	got = append(got, '\n')
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(want, got) {
		t.Errorf("output differs from %s (run with -update after checking):\n%s", path, got)
	}
}
