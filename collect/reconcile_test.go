package collect

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestReconcile(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	key := BreakerKey{Name: "pg"}
	sample := func(ms int, state string) BreakerSample {
		s := newBreakerSample("pg", "")
		s.Received, s.ObservedAt, s.State = at(ms), at(ms), state
		return s
	}
	samples := func(from, to, step int, state string) []BreakerSample {
		var out []BreakerSample
		for ms := from; ms <= to; ms += step {
			out = append(out, sample(ms, state))
		}
		return out
	}
	// answers sends one request every 100 ms from +0 for n requests, each
	// answered after 10 ms; those from refusedFrom on are refused.
	answers := func(n, refusedFrom int) []Answer {
		var out []Answer
		for i := range n {
			out = append(out, Answer{Sent: at(100 * i), Done: at(100*i + 10), Refused: i >= refusedFrom})
		}
		return out
	}
	tests := []struct {
		name         string
		in           ReconcileInput
		inconclusive bool
		want         string // in a reason (inconclusive) or a note
		noKey        bool   // no breaker asked for (in.Breaker stays zero)
	}{
		{
			// The case: metrics stop answering just after the load
			// starts, the service refuses most requests: never "never opened".
			name: "refusals inside a polling gap",
			in: ReconcileInput{Samples: samples(0, 200, 100, "CLOSED"),
				Gaps:    []Gap{{From: at(200), Polls: 30, Reasons: []string{"dial tcp: connection refused"}}},
				Answers: answers(40, 10)},
			inconclusive: true, want: "30 refusals, no OPEN seen: metrics unreachable from +0.2 s (dial tcp: connection refused)",
		},
		{
			// A poll that answers part of its reads and hangs on the rest
			// returns a stale sample seconds later: the time it took is a gap.
			name: "refusals while a poll took seconds to answer",
			in: ReconcileInput{Samples: append(append(samples(0, 200, 100, "CLOSED"), func() BreakerSample {
				s := sample(2300, "CLOSED")
				s.Sent = at(300)
				return s
			}()), samples(2400, 4100, 100, "OPEN")...),
				Answers: answers(40, 10)},
			inconclusive: true, want: "13 refusals, no OPEN seen: metrics unreachable from +0.2 s to +2.3 s (a poll took 2.0 s to answer)",
		},
		{
			name: "short gap with nothing happening is only noted",
			in: ReconcileInput{Samples: append(samples(0, 1000, 100, "CLOSED"), samples(1500, 4100, 100, "CLOSED")...),
				Gaps:    []Gap{{From: at(1000), To: at(1490), Polls: 4, Reasons: []string{"timeout"}}},
				Answers: answers(40, 99)},
			want: "nothing that could change the state happened",
		},
		{
			// prom-api: the last scrape predates the refusals; polling ended
			// before a newer one.
			name:         "polling ended before a sample newer than the last request",
			in:           ReconcileInput{Samples: samples(0, 2000, 1000, "CLOSED"), Answers: answers(40, 15), Interval: time.Second},
			inconclusive: true, want: "no OPEN seen: polling ended at +2.0 s",
		},
		{
			name: "open seen: consistent",
			in: ReconcileInput{Samples: append(samples(0, 900, 100, "CLOSED"), samples(1000, 4100, 100, "OPEN")...),
				Answers: answers(40, 11)},
		},
		{
			// Under load a poll reads CLOSED just before the breaker opens and
			// answers after a refusal: the OPEN event before the refusal
			// explains it; the stale sample does not make the arm inconclusive.
			name: "stale CLOSED sample after an OPEN event",
			in: ReconcileInput{Samples: append(append(samples(0, 400, 100, "CLOSED"), func() BreakerSample {
				s := sample(700, "CLOSED")
				s.Sent = at(450)
				return s
			}()), samples(900, 4100, 100, "OPEN")...),
				Transitions: []Transition{{Breaker: key, From: "CLOSED", To: "OPEN", Time: at(500), Earliest: at(500), Latest: at(500), TimeSource: TimeFromEvent}},
				Answers:     answers(40, 6)},
		},
		{
			// The real Spring service, first second of an arm: the first poll of a
			// cold JVM takes 1.3 s (a gap); requests sent in it retry after timeouts
			// and are refused at +2.1 s, after the OPEN event at +1.9 s. Sent in the
			// gap, refused after an OPEN was seen: explained, not a hidden OPEN.
			name: "sent in a gap, refused after an OPEN event",
			in: ReconcileInput{Samples: append(samples(1300, 1800, 100, "CLOSED"), samples(2500, 4100, 100, "OPEN")...),
				Gaps:        []Gap{{From: at(0), To: at(1300), Polls: 1, Reasons: []string{"a poll took 1.3 s to answer"}}},
				Transitions: []Transition{{Breaker: key, From: "CLOSED", To: "OPEN", Time: at(1900), Earliest: at(1900), Latest: at(1900), TimeSource: TimeFromEvent}},
				Answers: []Answer{{Sent: at(500), Done: at(2100), Refused: true}, {Sent: at(600), Done: at(2150), Refused: true},
					{Sent: at(700), Done: at(900)}, {Sent: at(2200), Done: at(2210), Refused: true}}},
			want: "metrics unreachable from +0.0 s to +1.3 s",
		},
		{
			// Under -race a poll started at +0.8 s read HALF_OPEN and answered at
			// +1.0 s, after the OPEN event at +0.9 s; the next poll took 0.5 s. The
			// event inside the first poll's span times the change: no hidden OPEN.
			name: "state change timed by an event inside the previous poll",
			in: ReconcileInput{Samples: func() []BreakerSample {
				a, b := sample(1000, "HALF_OPEN"), sample(1600, "OPEN")
				a.Sent, b.Sent = at(800), at(1100)
				return append(append(samples(0, 700, 100, "OPEN"), a, b), samples(1700, 4100, 100, "OPEN")...)
			}(),
				Transitions: []Transition{{Breaker: key, From: "HALF_OPEN", To: "OPEN", Time: at(900), Earliest: at(900), Latest: at(900), TimeSource: TimeFromEvent}},
				Interval:    100 * time.Millisecond},
			want: "a poll took 0.5 s to answer",
		},
		{
			name:         "refusals while every sample said CLOSED",
			in:           ReconcileInput{Samples: samples(0, 4100, 100, "CLOSED"), Answers: answers(40, 20)},
			inconclusive: true, want: "20 refusals from +2.0 s while every sample of pg around them said CLOSED",
		},
		{
			name: "never observed: the cause is the polling error",
			in: ReconcileInput{Gaps: []Gap{{Polls: 40, Reasons: []string{"health JSON: circuitBreakers shows no details (set management.endpoint.health.show-details=always)"}}},
				Answers: answers(40, 20)},
			inconclusive: true, want: "show-details=always",
		},
		{
			// The metrics went away before the first poll answered: the
			// refusals are named with the gap, not only "never observed".
			name: "never observed: refusals inside the failed polls",
			in: ReconcileInput{Gaps: []Gap{{Polls: 2, Reasons: []string{"timeout: no answer within 2s"}}},
				Answers: answers(40, 10)},
			inconclusive: true, want: "30 refusals, no OPEN seen: metrics unreachable from +0.0 s (timeout: no answer within 2s)",
		},
		{
			// With no breaker asked for (attack without --breaker) the
			// message names none instead of an empty name.
			name: "never observed: no breaker asked for",
			in: ReconcileInput{Gaps: []Gap{{Polls: 40, Reasons: []string{"HTTP 404"}}},
				Answers: answers(40, 99)},
			noKey: true, inconclusive: true, want: "no breaker was ever observed (found: no breaker at all): every poll failed (HTTP 404)",
		},
		{
			name: "never observed: other breakers",
			in: ReconcileInput{Samples: []BreakerSample{func() BreakerSample { s := sample(0, "CLOSED"); s.Name = "other"; return s }()},
				Answers: answers(3, 9)},
			inconclusive: true, want: "found: other; set --breaker",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if !tc.noKey {
				tc.in.Breaker = key
			}
			tc.in.Start = t0
			r := Reconcile(tc.in)
			if r.Inconclusive != tc.inconclusive {
				t.Fatalf("inconclusive = %v, want %v (reasons %q, notes %q)", r.Inconclusive, tc.inconclusive, r.Reasons, r.Notes)
			}
			all := strings.Join(append(append([]string{}, r.Reasons...), r.Notes...), " | ")
			if tc.want != "" && !strings.Contains(all, tc.want) {
				t.Errorf("reasons and notes %q lack %q", all, tc.want)
			}
			if r.Inconclusive && len(r.Fix) == 0 {
				t.Errorf("inconclusive without a fix: %q", r.Reasons)
			}
		})
	}
}

// TestReconcileInfersHalfOpen: calls counted between two samples that both
// say OPEN mean a HALF_OPEN trial ran unseen (the watch case with a
// 1 s scrape): the trial is inferred, marked so, and the arm is inconclusive.
func TestReconcileInfersHalfOpen(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	mk := func(s int, calls float64) BreakerSample {
		b := newBreakerSample("pg", "")
		b.State, b.Received, b.ObservedAt = "OPEN", t0.Add(time.Duration(s)*time.Second), t0.Add(time.Duration(s)*time.Second)
		b.CallsSuccessful, b.CallsFailed, b.NotPermittedTotal = calls, 0, 0
		return b
	}
	r := Reconcile(ReconcileInput{Breaker: BreakerKey{Name: "pg"}, Start: t0, Interval: time.Second,
		Samples: []BreakerSample{mk(0, 20), mk(1, 20), mk(2, 25), mk(3, 25)}})
	if !r.Inconclusive || len(r.Inferred) != 2 {
		t.Fatalf("inconclusive %v with %d inferred transitions, want true and 2 (OPEN→HALF_OPEN→OPEN); reasons %q", r.Inconclusive, len(r.Inferred), r.Reasons)
	}
	for _, tr := range r.Inferred {
		if !tr.Inferred || tr.Earliest != t0.Add(time.Second) || tr.Latest != t0.Add(2*time.Second) {
			t.Errorf("inferred transition %+v: want Inferred between +1 s and +2 s", tr)
		}
	}
	if !strings.Contains(r.Reasons[0], "5 calls recorded between +1.0 s and +2.0 s") {
		t.Errorf("reason %q does not give the evidence", r.Reasons[0])
	}
	// NaN counters (an actuator source) never infer anything.
	n := math.NaN()
	a, b := mk(0, n), mk(1, n)
	if r := Reconcile(ReconcileInput{Breaker: BreakerKey{Name: "pg"}, Samples: []BreakerSample{a, b}}); r.Inconclusive {
		t.Errorf("unknown counters made the arm inconclusive: %q", r.Reasons)
	}
}
