package collect

import (
	"sort"
	"time"
)

// Tracker detects transitions in a stream of snapshots and labels them. The
// Sampler feeds it live; Analyze feeds it a recording. Not safe for concurrent use.
type Tracker struct {
	th       Thresholds
	br       map[BreakerKey]*btrack
	limEv    map[string][]Event
	limLast  map[BreakerKey]LimiterSample
	all      []*Transition
	resets   []Reset
	maxOutEv int
}

type btrack struct {
	state    string
	last     *BreakerSample
	outcomes []Event
	exceeded []string
	pending  []*Transition
	prevTime time.Time // time of the previous transition (start of the window)
	limBase  LimiterSample
	hasBase  bool
}

// NewTracker returns a tracker using th for thresholds the source does not
// export (nil: none).
func NewTracker(th Thresholds) *Tracker {
	if th == nil {
		th = func(string) (Threshold, bool) { return Threshold{}, false }
	}
	return &Tracker{th: th, br: map[BreakerKey]*btrack{}, limEv: map[string][]Event{}, limLast: map[BreakerKey]LimiterSample{}, maxOutEv: 4096}
}

// Transitions returns every transition seen so far, settled or not, in order.
func (t *Tracker) Transitions() []Transition {
	out := make([]Transition, 0, len(t.all))
	for _, tr := range t.all {
		out = append(out, *tr)
	}
	return out
}

// Resets returns the resets (service restarts) seen so far.
func (t *Tracker) Resets() []Reset { return append([]Reset(nil), t.resets...) }

// Flush settles every pending transition (end of a run) and returns them.
func (t *Tracker) Flush() []Transition {
	var out []Transition
	for _, k := range t.keys() {
		b := t.br[k]
		for _, p := range b.pending {
			out = append(out, t.settle(k, p, nil))
		}
		b.pending = nil
	}
	return out
}

func (t *Tracker) keys() []BreakerKey {
	ks := make([]BreakerKey, 0, len(t.br))
	for k := range t.br {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool { return keyLess(ks[i], ks[j]) })
	return ks
}

func (t *Tracker) track(k BreakerKey) *btrack {
	b := t.br[k]
	if b == nil {
		b = &btrack{}
		t.br[k] = b
	}
	return b
}

// snapshotIndex is one snapshot's content per breaker.
type snapshotIndex struct {
	events    map[BreakerKey][]Event // circuit breaker events, oldest first
	samples   map[BreakerKey]*BreakerSample
	lost      map[BreakerKey]bool   // the event ring may have dropped events
	restarted map[BreakerKey]string // restart reason noticed by the source
}

// Observe feeds one snapshot and returns the transitions that became final
// (their evidence complete) and the resets it revealed. Per breaker, in key
// order: a reset settles everything pending and starts over; otherwise the
// poll's events create transitions and the poll's sample settles those it
// follows (or reveals a transition no event showed).
func (t *Tracker) Observe(s Snapshot) ([]Transition, []Reset) {
	var out []Transition
	var resets []Reset
	t.recordLimiters(s)
	in := t.index(s)
	for _, k := range t.keys() {
		b := t.br[k]
		smp := in.samples[k]
		if reason := t.resetReason(b, smp, in.restarted[k]); reason != "" {
			r := Reset{Breaker: k, Received: s.Received, Reason: reason}
			resets = append(resets, r)
			t.resets = append(t.resets, r)
			out = append(out, t.restart(k, b, smp, s, reason)...)
			continue
		}
		chain, made, created := t.applyEvents(k, b, in.events[k], in.lost[k], s.Received)
		if smp == nil || smp.State == "" {
			b.pending = append(b.pending, created...)
			continue
		}
		out = append(out, t.placeSample(k, b, smp, s, chain, made, created)...)
		t.updateLimiterBase(k, b, smp)
		b.last = smp
	}
	return out, resets
}

// recordLimiters keeps the snapshot's time limiter events (the last maxOutEv
// per limiter name) and counters, for the timeout share.
func (t *Tracker) recordLimiters(s Snapshot) {
	for _, e := range s.Events {
		if e.Kind == KindTimeLimiter {
			l := append(t.limEv[e.Name], e)
			if len(l) > t.maxOutEv {
				l = l[len(l)-t.maxOutEv:]
			}
			t.limEv[e.Name] = l
		}
	}
	for _, l := range s.Limiters {
		t.limLast[BreakerKey{l.Name, l.Instance}] = l
	}
}

// index sorts the snapshot's breaker events, samples, losses and restarts by
// breaker, and starts tracking every breaker it names.
func (t *Tracker) index(s Snapshot) snapshotIndex {
	in := snapshotIndex{events: map[BreakerKey][]Event{}, samples: map[BreakerKey]*BreakerSample{},
		lost: map[BreakerKey]bool{}, restarted: map[BreakerKey]string{}}
	for _, e := range s.Events {
		if e.Kind == KindCircuitBreaker {
			k := BreakerKey{e.Name, e.Instance}
			in.events[k] = append(in.events[k], e)
			t.track(k)
		}
	}
	for i := range s.Breakers {
		k := s.Breakers[i].Key()
		in.samples[k] = &s.Breakers[i]
		t.track(k)
	}
	for _, l := range s.Lost {
		if l.Kind == KindCircuitBreaker {
			in.lost[BreakerKey{l.Name, l.Instance}] = true
		}
	}
	for _, r := range s.Restarts {
		for _, k := range t.keys() {
			if r.Breaker.Name == "" || r.Breaker == k {
				in.restarted[k] = r.Reason
			}
		}
	}
	return in
}

// updateLimiterBase takes the time limiter counters as the base of the next
// window while the breaker is CLOSED (or when there is no base yet).
func (t *Tracker) updateLimiterBase(k BreakerKey, b *btrack, smp *BreakerSample) {
	if smp.State == "CLOSED" || !b.hasBase {
		if l, ok := t.limLast[k]; ok {
			b.limBase, b.hasBase = l, true
		}
	}
}
