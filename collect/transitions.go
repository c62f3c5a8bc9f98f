package collect

import (
	"fmt"
	"time"
)

// applyEvents feeds breaker k's events of one poll (received at polled): call
// outcomes and threshold events are kept for the evidence, and each
// STATE_TRANSITION event creates a transition (or upgrades a poll-based one).
// It returns the chain of states the events walked through (starting with the
// state before the poll, "" when unknown), made[i] = how many transitions were
// created up to chain[i] (an upgraded poll-based transition extends the chain
// without creating one), and the transitions created.
func (t *Tracker) applyEvents(k BreakerKey, b *btrack, events []Event, lost bool, polled time.Time) (chain []string, made []int, created []*Transition) {
	chain, made = []string{b.state}, []int{0}
	for _, e := range events {
		switch e.Type {
		case "SUCCESS", "ERROR":
			b.outcomes = append(b.outcomes, e)
			if len(b.outcomes) > t.maxOutEv {
				b.outcomes = b.outcomes[len(b.outcomes)-t.maxOutEv:]
			}
		case "FAILURE_RATE_EXCEEDED", "SLOW_CALL_RATE_EXCEEDED":
			b.exceeded = append(b.exceeded, e.Type)
		case "STATE_TRANSITION":
			from, to, _ := splitTransition(e.StateTransition)
			if up := t.upgrade(b, from, to, e); up {
				chain, made = append(chain, to), append(made, len(created))
				continue
			}
			tr := t.eventTransition(k, b, e, from, to, lost, polled)
			created = append(created, tr)
			chain, made = append(chain, to), append(made, len(created))
			b.state, b.outcomes, b.exceeded, b.prevTime = to, nil, nil, e.CreationTime
		}
	}
	return chain, made, created
}

// eventTransition records the transition a STATE_TRANSITION event shows, with
// the window's outcomes and threshold events as its evidence so far.
func (t *Tracker) eventTransition(k BreakerKey, b *btrack, e Event, from, to string, lost bool, polled time.Time) *Transition {
	tr := &Transition{Breaker: k, From: from, To: to, Time: e.CreationTime, Earliest: e.CreationTime, Latest: e.CreationTime,
		TimeSource: TimeFromEvent, DetectedAt: polled, Evidence: newEvidence(), outcomes: b.outcomes, lost: lost, windowStart: b.prevTime}
	tr.Evidence.ExceededEvents = b.exceeded
	if b.state != "" && b.state != from {
		tr.Evidence.Notes = append(tr.Evidence.Notes, fmt.Sprintf("state was %s before this event: transitions were missed", b.state))
	}
	t.all = append(t.all, tr)
	return tr
}

// placeSample places the poll's sample smp (with a state) on the chain of
// states the poll's events walked through, and settles the transitions it
// follows: the last of them with smp as its first sample in the new state. A
// state the chain does not contain is a transition no event showed.
func (t *Tracker) placeSample(k BreakerKey, b *btrack, smp *BreakerSample, s Snapshot, chain []string, made []int, created []*Transition) []Transition {
	if chain[0] == "" {
		chain[0] = smp.State
	}
	p := -1
	for i := len(chain) - 1; i >= 0; i-- {
		if chain[i] == smp.State {
			p = i
			break
		}
	}
	if p < 0 {
		return t.pollBased(k, b, smp, s, created)
	}
	var out []Transition
	// The sample was read at chain position p: after every earlier pending
	// transition and after this poll's transitions up to p.
	// (made[p] counts them: an upgrade moves along the chain without creating one.)
	cands := append(append([]*Transition(nil), b.pending...), created[:made[p]]...)
	for i, c := range cands {
		if i == len(cands)-1 && c.To == smp.State {
			out = append(out, t.settle(k, c, smp))
		} else {
			out = append(out, t.settle(k, c, nil))
		}
	}
	b.pending = append([]*Transition(nil), created[made[p]:]...)
	if b.state == "" {
		b.state = smp.State
	}
	return out
}

// pollBased handles a sample whose state the events do not explain: every
// pending and created transition is settled without a sample, and the change
// is recorded between the two polls (with the OPEN a CLOSED to HALF_OPEN
// change implies, marked inferred).
func (t *Tracker) pollBased(k BreakerKey, b *btrack, smp *BreakerSample, s Snapshot, created []*Transition) []Transition {
	var out []Transition
	for _, c := range append(b.pending, created...) {
		out = append(out, t.settle(k, c, nil))
	}
	b.pending = nil
	from := b.state
	if from == "CLOSED" && smp.State == "HALF_OPEN" {
		mid := t.pollTransition(k, b, smp, s, "CLOSED", "OPEN")
		mid.Inferred = true
		out = append(out, t.settle(k, mid, nil))
		from = "OPEN"
	}
	tr := t.pollTransition(k, b, smp, s, from, smp.State)
	out = append(out, t.settle(k, tr, smp))
	b.state = smp.State
	b.outcomes, b.exceeded = nil, nil
	return out
}

// upgrade merges an event into a poll-based transition detected earlier (the
// event endpoint failed in that poll). It reports whether it did.
func (t *Tracker) upgrade(b *btrack, from, to string, e Event) bool {
	if b.state != to {
		return false
	}
	for i := len(t.all) - 1; i >= 0; i-- {
		tr := t.all[i]
		if tr.Breaker != (BreakerKey{e.Name, e.Instance}) {
			continue
		}
		if tr.TimeSource != TimeFromPoll || tr.From != from || tr.To != to || tr.Inferred {
			return false
		}
		tr.Time, tr.Earliest, tr.Latest, tr.TimeSource = e.CreationTime, e.CreationTime, e.CreationTime, TimeFromEvent
		if len(b.exceeded) > 0 && tr.Evidence != nil {
			tr.Evidence.ExceededEvents = b.exceeded
			t.label(tr, nil)
		}
		b.exceeded = nil
		return true
	}
	return false
}

// pollTransition records a transition seen only by polling: its time is the
// middle of the interval between the previous sample and smp.
func (t *Tracker) pollTransition(k BreakerKey, b *btrack, smp *BreakerSample, s Snapshot, from, to string) *Transition {
	lo, hi := s.Sent, s.Received
	if b.last != nil {
		lo = b.last.Sent
		if !b.last.ObservedAt.IsZero() && !b.last.ObservedAt.Equal(b.last.Received) {
			lo = b.last.ObservedAt
		}
	}
	if !smp.ObservedAt.IsZero() && !smp.ObservedAt.Equal(smp.Received) {
		hi = smp.ObservedAt
	}
	tr := &Transition{Breaker: k, From: from, To: to, Earliest: lo, Latest: hi, Time: lo.Add(hi.Sub(lo) / 2),
		TimeSource: TimeFromPoll, DetectedAt: s.Received, Evidence: newEvidence(), outcomes: b.outcomes, noEvents: !s.EventsOK}
	t.all = append(t.all, tr)
	return tr
}
