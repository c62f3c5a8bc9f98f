package main

import (
	"bytes"
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cbprobe/cbprobe/collect"
)

// historyActuator serves an OPEN breaker whose event buffer holds its
// transitions of 2022 (collect/testdata/events-2022-kolkata.json).
func historyActuator(t *testing.T) *httptest.Server {
	t.Helper()
	events, err := os.ReadFile("../../collect/testdata/events-2022-kolkata.json")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/actuator/circuitbreakers":
			w.Write([]byte(`{"circuitBreakers":{"lookupTodos":{"failureRate":"100.0%","slowCallRate":"0.0%","failureRateThreshold":"50.0%","slowCallRateThreshold":"100.0%","bufferedCalls":1,"failedCalls":1,"slowCalls":0,"slowFailedCalls":0,"notPermittedCalls":0,"state":"OPEN"}}}`))
		case "/actuator/circuitbreakerevents":
			w.Write(events)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestWatchShowsHistoryAsHistory: a one-second watch of a service whose
// event buffer is from 2022 prints those transitions with their date, as
// history, and counts none of them.
func TestWatchShowsHistoryAsHistory(t *testing.T) {
	srv := historyActuator(t)
	out, errOut, code := runWatchCLI(t, "watch", "--actuator", srv.URL, "--duration", "1s", "--interval", "100ms")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		"history: 2022-07-14 12:20:50.902 +05:30 lookupTodos  CLOSED -> OPEN  (before this watch)",
		"history: 2022-07-14 12:21:01.500 +05:30 lookupTodos  HALF_OPEN -> OPEN  (before this watch)",
		"0 transitions during the watch, 0 into OPEN/FORCED_OPEN",
		"(3 earlier transitions from the service's event buffer were shown as history, not counted)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// A transition line without a date (the live format) must not show up.
	if m := regexp.MustCompile(`(?m)^\s*\d\d:\d\d:\d\d\.\d{3}[^\n]*lookupTodos`).FindString(out); m != "" {
		t.Errorf("history shown as news: %q", m)
	}
}

func TestWatchJSONHistory(t *testing.T) {
	srv := historyActuator(t)
	out, errOut, code := runWatchCLI(t, "watch", "--actuator", srv.URL, "--json", "--duration", "1s", "--interval", "100ms")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	history, transitions := 0, 0
	var summary map[string]any
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var rec struct {
			Type string          `json:"type"`
			Data json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("not JSON: %q", line)
		}
		switch rec.Type {
		case "history":
			var e collect.Event
			if err := json.Unmarshal(rec.Data, &e); err != nil || !e.History || e.CreationTime.Year() != 2022 {
				t.Errorf("history record %s", rec.Data)
			}
			history++
		case "event", "transition":
			transitions++
		case "summary":
			json.Unmarshal(rec.Data, &summary)
		}
	}
	if history != 8 || transitions != 0 || summary["transitions"] != 0.0 || summary["historyTransitions"] != 3.0 {
		t.Fatalf("history %d, events+transitions %d, summary %v; want 8, 0, 0 transitions and 3 from history", history, transitions, summary)
	}
}

// TestWatchUnknownValuesShown: a breaker whose state and counts are unknown
// (NaN gauges, health indicator off) shows "?", never a blank or "NaN".
func TestWatchUnknownValuesShown(t *testing.T) {
	var buf bytes.Buffer
	v := &watchView{w: &buf, tty: true, latest: map[collect.BreakerKey]collect.BreakerSample{}, last: map[collect.BreakerKey]collect.Transition{}}
	n := math.NaN()
	b := collect.BreakerSample{Name: "upstream", FailureRate: n, SlowCallRate: n, FailureRateThreshold: n, SlowCallRateThreshold: n, Buffered: n}
	v.update(collect.Update{Snapshot: &collect.Snapshot{Breakers: []collect.BreakerSample{b}, Notices: []string{"breaker upstream: NaN (resilience4j issue #1330)"}}})
	out := buf.String()
	// The breaker's own line (not the notice, which quotes the NaN) shows no NaN.
	var line string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "upstream ") {
			line = l
		}
	}
	if line == "" || strings.Contains(line, "NaN") || !strings.Contains(line, " ?  ") {
		t.Fatalf("breaker line %q in live view:\n%s", line, out)
	}
	if !regexp.MustCompile(`upstream\s+\?\s+failure \?/\?  slow \?/\?  calls \?`).MatchString(out) {
		t.Fatalf("live view does not show unknown values as '?':\n%s", out)
	}
	if !strings.Contains(out, "note: breaker upstream: NaN (resilience4j issue #1330)") {
		t.Fatalf("notice missing:\n%s", out)
	}
}

// TestWatchWarnsOfUnseenHalfOpenTrial: two polls both say OPEN while the breaker's call
// counters rose between them, so a HALF_OPEN trial (shorter than the poll interval) ran
// unobserved; watch says so and shows the inferred transitions, and says nothing when the
// counters stayed put.
func TestWatchWarnsOfUnseenHalfOpenTrial(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	sample := func(at time.Duration, calls float64) collect.BreakerSample {
		return collect.BreakerSample{Name: "pg", State: "OPEN", Sent: t0.Add(at), Received: t0.Add(at), ObservedAt: t0.Add(at),
			CallsSuccessful: calls, FailureRate: 100, SlowCallRate: 0, FailureRateThreshold: 50, SlowCallRateThreshold: 100}
	}
	for _, tc := range []struct {
		name  string
		calls float64
		want  bool
	}{{"calls rose while OPEN", 15, true}, {"nothing recorded", 10, false}} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			v := &watchView{w: &buf, interval: time.Second, latest: map[collect.BreakerKey]collect.BreakerSample{}, last: map[collect.BreakerKey]collect.Transition{}}
			v.update(collect.Update{Snapshot: &collect.Snapshot{Breakers: []collect.BreakerSample{sample(0, 10)}}})
			v.update(collect.Update{Snapshot: &collect.Snapshot{Breakers: []collect.BreakerSample{sample(time.Second, tc.calls)}}})
			out := buf.String()
			got := strings.Contains(out, "warning: pg: 5 calls recorded between") && strings.Contains(out, "HALF_OPEN trial (or more) ran unobserved") &&
				strings.Contains(out, "(inferred)")
			if got != tc.want || (!tc.want && strings.Contains(out, "warning")) {
				t.Fatalf("warned of an unseen trial: %v, want %v:\n%s", got, tc.want, out)
			}
		})
	}
}
