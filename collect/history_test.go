package collect

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// historyService serves /actuator/circuitbreakers (one breaker, state set by
// the test) and /actuator/circuitbreakerevents from a body the test sets. Its
// clock runs skew ahead of this machine's: it writes that clock in its Date
// header, as a real service with a wrong clock would.
type historyService struct {
	mu        sync.Mutex
	name      string
	state     string
	events    string // the events body
	eventsErr bool   // answer 500 on the events endpoint
	skew      time.Duration
}

func (h *historyService) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	defer h.mu.Unlock()
	w.Header().Set("Date", time.Now().Add(h.skew).UTC().Format(http.TimeFormat))
	switch r.URL.Path {
	case "/actuator/circuitbreakers":
		fmt.Fprintf(w, `{"circuitBreakers":{%q:{"failureRate":"100.0%%","slowCallRate":"0.0%%","failureRateThreshold":"50.0%%","slowCallRateThreshold":"100.0%%","bufferedCalls":10,"failedCalls":10,"slowCalls":0,"slowFailedCalls":0,"notPermittedCalls":0,"state":%q}}}`, h.name, h.state)
	case "/actuator/circuitbreakerevents":
		if h.eventsErr {
			w.WriteHeader(500)
			return
		}
		w.Write([]byte(h.events))
	default:
		http.NotFound(w, r)
	}
}

func (h *historyService) set(f func(h *historyService)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	f(h)
}

// serviceEvent renders one breaker event as a JSON object at time t (the
// service's clock), in the zone of t.
func serviceEvent(name, typ, transition string, t time.Time) string {
	s := fmt.Sprintf(`{"circuitBreakerName":%q,"type":%q,"creationTime":%q`, name, typ, t.Format("2006-01-02T15:04:05.000000Z07:00")+"[Etc/UTC]")
	if transition != "" {
		s += fmt.Sprintf(`,"stateTransition":%q`, transition)
	}
	return s + "}"
}

func eventsBody(evs ...string) string {
	return `{"circuitBreakerEvents":[` + strings.Join(evs, ",") + `]}`
}

// TestHistoryIsNotNews: a service whose event buffer holds a breaker's
// transitions of 2022. The source's first poll must deliver them as history
// (dated, flagged) and none as events; the tracker must count no transition
// from them; a transition that happens after the start is news.
func TestHistoryIsNotNews(t *testing.T) {
	old, err := os.ReadFile("testdata/events-2022-kolkata.json")
	if err != nil {
		t.Fatal(err)
	}
	h := &historyService{name: "lookupTodos", state: "OPEN", events: string(old)}
	srv := httptest.NewServer(h)
	defer srv.Close()
	src := NewActuator(srv.URL, HTTPOptions{})
	tk := NewTracker(nil)

	s1 := pollOK(t, src)
	if len(s1.Events) != 0 {
		t.Fatalf("first poll: %d events delivered as news, want 0 (all predate the start)", len(s1.Events))
	}
	if len(s1.History) != 8 {
		t.Fatalf("first poll: %d history events, want 8", len(s1.History))
	}
	for _, e := range s1.History {
		if !e.History || e.CreationTime.Year() != 2022 {
			t.Errorf("history event %+v: want History set and its 2022 date", e)
		}
	}
	got, _ := tk.Observe(s1)
	if len(got) != 0 || len(tk.Transitions()) != 0 {
		t.Fatalf("history counted as transitions: %+v", tk.Transitions())
	}

	// After the start the breaker goes HALF_OPEN and closes: two new events.
	now := time.Now().UTC()
	body := strings.TrimSuffix(strings.TrimSpace(string(old)), "]}") + "," +
		serviceEvent("lookupTodos", "STATE_TRANSITION", "OPEN_TO_HALF_OPEN", now) + "," +
		serviceEvent("lookupTodos", "STATE_TRANSITION", "HALF_OPEN_TO_CLOSED", now.Add(time.Millisecond)) + "]}"
	h.set(func(h *historyService) { h.events, h.state = body, "CLOSED" })
	s2 := pollOK(t, src)
	if len(s2.Events) != 2 || len(s2.History) != 0 {
		t.Fatalf("second poll: %d events, %d history; want 2 and 0", len(s2.Events), len(s2.History))
	}
	tk.Observe(s2)
	tk.Flush()
	var seq []string
	for _, tr := range tk.Transitions() {
		seq = append(seq, tr.From+">"+tr.To)
	}
	if strings.Join(seq, " ") != "OPEN>HALF_OPEN HALF_OPEN>CLOSED" {
		t.Fatalf("transitions %v, want only the two after the start", seq)
	}
}

// TestHistoryWhenEventsReadLate: the event endpoint fails at the start and
// answers later. Its first answer holds an event from before the start and
// one from after; the service's clock is an hour ahead. Only the service's
// own clock (its Date header) tells them apart: on this machine's clock both
// look later than the start.
func TestHistoryWhenEventsReadLate(t *testing.T) {
	const skew = time.Hour
	h := &historyService{name: "pg", state: "CLOSED", eventsErr: true, skew: skew}
	srv := httptest.NewServer(h)
	defer srv.Close()
	src := NewActuator(srv.URL, HTTPOptions{})
	before := time.Now()
	s1 := pollOK(t, src)
	if len(s1.Warnings) == 0 {
		t.Fatalf("the events endpoint failed; want a warning")
	}
	// Service time: the old event 10 minutes before the start, the new one
	// 5 s after it (more than the 0.5 s + round-trip tolerance).
	svcStart := before.Add(skew).UTC()
	h.set(func(h *historyService) {
		h.eventsErr = false
		h.state = "OPEN"
		h.events = eventsBody(
			serviceEvent("pg", "STATE_TRANSITION", "CLOSED_TO_OPEN", svcStart.Add(-10*time.Minute)),
			serviceEvent("pg", "STATE_TRANSITION", "OPEN_TO_HALF_OPEN", svcStart.Add(-10*time.Minute+time.Second)),
			serviceEvent("pg", "STATE_TRANSITION", "HALF_OPEN_TO_CLOSED", svcStart.Add(-10*time.Minute+2*time.Second)),
			serviceEvent("pg", "STATE_TRANSITION", "CLOSED_TO_OPEN", svcStart.Add(5*time.Second)))
	})
	s2 := pollOK(t, src)
	if len(s2.History) != 3 || len(s2.Events) != 1 || s2.Events[0].StateTransition != "CLOSED_TO_OPEN" {
		t.Fatalf("late first read: history %+v events %+v; want the 3 old events as history, the new one as news", s2.History, s2.Events)
	}
	off, tol, ok := src.(*ActuatorSource).ServiceClockOffset()
	if !ok || off < skew-2*time.Second || off > skew+2*time.Second || tol < 500*time.Millisecond {
		t.Errorf("service clock offset %v ±%v (ok %v), want about %v ±0.5 s or more", off, tol, ok, skew)
	}
}
