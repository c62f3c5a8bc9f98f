package collect

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"
)

// Causes of a transition into OPEN or FORCED_OPEN.
const (
	CauseFailureRate   = "failure-rate"
	CauseSlowCallRate  = "slow-call-rate"
	CauseBoth          = "both"
	CauseHalfOpenTrial = "half-open-trial"
	CauseForced        = "forced"
	CauseUnknown       = "unknown"
)

// Where a transition's time comes from.
const (
	// TimeFromEvent: the STATE_TRANSITION event's creationTime (service clock).
	TimeFromEvent = "event"
	// TimeFromPoll: between two polls that saw different states.
	TimeFromPoll = "poll"
)

// Threshold is a breaker's configured rate thresholds in percent.
type Threshold struct {
	// FailureRate is failure-rate-threshold in percent.
	FailureRate float64
	// SlowCallRate is slow-call-rate-threshold in percent.
	SlowCallRate float64
	// Source says where the values come from, e.g. "config application.yml".
	Source string
}

// Thresholds looks up the thresholds for a breaker name when the source does
// not export them (Prometheus). ok=false means unknown.
type Thresholds func(breaker string) (th Threshold, ok bool)

// StaticThresholds returns a Thresholds reading m; the key "" applies to every
// breaker not listed.
func StaticThresholds(m map[string]Threshold) Thresholds {
	return func(name string) (Threshold, bool) {
		if t, ok := m[name]; ok {
			return t, true
		}
		t, ok := m[""]
		return t, ok
	}
}

// Transition is one state change of one breaker.
type Transition struct {
	// Breaker identifies the breaker.
	Breaker BreakerKey `json:"breaker"`
	// From and To are Java state names.
	From string `json:"from"`
	// To is the state entered.
	To string `json:"to"`
	// Time is the best estimate: the event's creationTime, or the middle of the
	// poll interval the change fell in.
	Time time.Time `json:"time"`
	// Earliest and Latest bound Time (equal for event times).
	Earliest time.Time `json:"earliest"`
	// Latest is the upper bound of Time.
	Latest time.Time `json:"latest"`
	// TimeSource is TimeFromEvent or TimeFromPoll.
	TimeSource string `json:"timeSource"`
	// DetectedAt is the local receive time of the poll that revealed the transition.
	DetectedAt time.Time `json:"detectedAt"`
	// Inferred marks a transition no poll or event showed but the state rules
	// require (CLOSED then HALF_OPEN means OPEN happened in between).
	Inferred bool `json:"inferred,omitempty"`
	// Cause is set for transitions into OPEN and FORCED_OPEN (Cause* constants).
	Cause string `json:"cause,omitempty"`
	// Reason explains the cause in one sentence (and why it is unknown).
	Reason string `json:"reason,omitempty"`
	// Note carries remarks such as "service restart".
	Note string `json:"note,omitempty"`
	// Evidence is what the cause was decided on.
	Evidence *Evidence `json:"evidence,omitempty"`

	outcomes    []Event // SUCCESS/ERROR events of the window before the transition
	windowStart time.Time
	lost        bool
	settled     bool
	noEvents    bool // the poll that revealed it read no breaker events
}

// Evidence is what decided a cause. Rates and thresholds are percentages; NaN
// (null in JSON) means unknown. The field order is the JSON key order: the
// numbers come last, as run records and watch --json have always written them.
type Evidence struct {
	// ExceededEvents are the FAILURE_RATE_EXCEEDED / SLOW_CALL_RATE_EXCEEDED
	// events published just before CLOSED_TO_OPEN.
	ExceededEvents []string `json:"exceededEvents,omitempty"`
	// SampleTime is the receive time of the first sample in the new state (zero:
	// none); the rates and counts below are that sample's.
	SampleTime time.Time `json:"sampleTime"`
	// ThresholdSource is "actuator", the Threshold.Source of the configuration, or "" (unknown).
	ThresholdSource string `json:"thresholdSource,omitempty"`
	// TimeoutSource says how TimeoutShare was measured: "error-messages",
	// "timelimiter-events" or "timelimiter-metrics".
	TimeoutSource string `json:"timeoutSource,omitempty"`
	// TrialExceeded names what a failed half-open trial exceeded (a Cause* value).
	TrialExceeded string `json:"trialExceeded,omitempty"`
	// Missing lists the evidence that was not available.
	Missing []string `json:"missing,omitempty"`
	// Notes are remarks (disagreements between sources, possible event loss).
	Notes []string `json:"notes,omitempty"`
	// FailureRate and SlowCallRate are the rates of the sample at SampleTime
	// (OPEN keeps the tripping window).
	FailureRate float64 `json:"failureRate"`
	// SlowCallRate is the slow-call rate of that sample.
	SlowCallRate float64 `json:"slowCallRate"`
	// FailureRateThreshold and SlowCallRateThreshold are the thresholds compared against.
	FailureRateThreshold float64 `json:"failureRateThreshold"`
	// SlowCallRateThreshold is the slow-call-rate threshold compared against.
	SlowCallRateThreshold float64 `json:"slowCallRateThreshold"`
	// Buffered, Failed, Slow, SlowFailed are the window counts of that sample.
	Buffered float64 `json:"buffered"`
	// Failed is the failed-call count of that sample's window.
	Failed float64 `json:"failed"`
	// Slow is the slow-call count of that sample's window.
	Slow float64 `json:"slow"`
	// SlowFailed is the slow-and-failed count of that sample's window.
	SlowFailed float64 `json:"slowFailed"`
	// SlowFailedShare is SlowFailed / Failed: failures that were also slow.
	SlowFailedShare float64 `json:"slowFailedShare"`
	// TimeoutShare is the share of the window's failures that were timeouts.
	TimeoutShare float64 `json:"timeoutShare"`
}

func newEvidence() *Evidence {
	n := math.NaN()
	return &Evidence{FailureRate: n, SlowCallRate: n, FailureRateThreshold: n, SlowCallRateThreshold: n,
		Buffered: n, Failed: n, Slow: n, SlowFailed: n, SlowFailedShare: n, TimeoutShare: n}
}

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

// Observe feeds one snapshot and returns the transitions that became final
// (their evidence complete) and the resets it revealed.
func (t *Tracker) Observe(s Snapshot) ([]Transition, []Reset) {
	var out []Transition
	var resets []Reset
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
	events := map[BreakerKey][]Event{}
	samples := map[BreakerKey]*BreakerSample{}
	for _, e := range s.Events {
		if e.Kind == KindCircuitBreaker {
			k := BreakerKey{e.Name, e.Instance}
			events[k] = append(events[k], e)
			t.track(k)
		}
	}
	for i := range s.Breakers {
		k := s.Breakers[i].Key()
		samples[k] = &s.Breakers[i]
		t.track(k)
	}
	lost := map[BreakerKey]bool{}
	for _, l := range s.Lost {
		if l.Kind == KindCircuitBreaker {
			lost[BreakerKey{l.Name, l.Instance}] = true
		}
	}
	restarted := map[BreakerKey]string{}
	for _, r := range s.Restarts {
		for _, k := range t.keys() {
			if r.Breaker.Name == "" || r.Breaker == k {
				restarted[k] = r.Reason
			}
		}
	}
	for _, k := range t.keys() {
		b := t.br[k]
		smp := samples[k]
		if reason := t.resetReason(b, smp, restarted[k]); reason != "" {
			r := Reset{Breaker: k, Received: s.Received, Reason: reason}
			resets = append(resets, r)
			t.resets = append(t.resets, r)
			for _, p := range b.pending {
				out = append(out, t.settle(k, p, nil))
			}
			b.pending, b.outcomes, b.exceeded, b.hasBase = nil, nil, nil, false
			if smp != nil && b.state != "" && smp.State != "" && smp.State != b.state {
				tr := t.pollTransition(k, b, smp, s, b.state, smp.State)
				tr.Note = "service restart: " + reason
				out = append(out, t.settle(k, tr, smp))
				b.state = smp.State
			}
			b.last = smp
			continue
		}
		chain := []string{b.state}
		var created []*Transition
		for _, e := range events[k] {
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
					chain = append(chain, to)
					continue
				}
				tr := &Transition{Breaker: k, From: from, To: to, Time: e.CreationTime, Earliest: e.CreationTime, Latest: e.CreationTime,
					TimeSource: TimeFromEvent, DetectedAt: s.Received, Evidence: newEvidence(), outcomes: b.outcomes, lost: lost[k], windowStart: b.prevTime}
				tr.Evidence.ExceededEvents = b.exceeded
				if b.state != "" && b.state != from {
					tr.Evidence.Notes = append(tr.Evidence.Notes, fmt.Sprintf("state was %s before this event: transitions were missed", b.state))
				}
				t.all = append(t.all, tr)
				created = append(created, tr)
				chain = append(chain, to)
				b.state, b.outcomes, b.exceeded, b.prevTime = to, nil, nil, e.CreationTime
			}
		}
		if smp == nil || smp.State == "" {
			b.pending = append(b.pending, created...)
			continue
		}
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
		if p >= 0 {
			// The sample was read at chain position p: after every earlier pending
			// transition and after this poll's transitions up to p.
			cands := append(append([]*Transition(nil), b.pending...), created[:max(p, 0)]...)
			for i, c := range cands {
				if i == len(cands)-1 && c.To == smp.State {
					out = append(out, t.settle(k, c, smp))
				} else {
					out = append(out, t.settle(k, c, nil))
				}
			}
			b.pending = append([]*Transition(nil), created[max(p, 0):]...)
			if b.state == "" {
				b.state = smp.State
			}
		} else {
			// The sample shows a state the events do not explain: poll-based.
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
		}
		if smp.State == "CLOSED" || !b.hasBase {
			if l, ok := t.limLast[k]; ok {
				b.limBase, b.hasBase = l, true
			}
		}
		b.last = smp
	}
	return out, resets
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

// resetReason reports why the breaker's metrics were reset, or "".
func (t *Tracker) resetReason(b *btrack, smp *BreakerSample, restarted string) string {
	if restarted != "" {
		return restarted
	}
	if smp == nil || b.last == nil {
		return ""
	}
	for _, c := range []struct {
		name     string
		old, new float64
	}{
		{"not_permitted_calls", b.last.NotPermittedTotal, smp.NotPermittedTotal},
		{"calls{kind=successful}", b.last.CallsSuccessful, smp.CallsSuccessful},
		{"calls{kind=failed}", b.last.CallsFailed, smp.CallsFailed},
		{"calls{kind=ignored}", b.last.CallsIgnored, smp.CallsIgnored},
	} {
		if c.new < c.old { // NaN compares false
			return fmt.Sprintf("counter %s went down from %v to %v (service restarted)", c.name, c.old, c.new)
		}
	}
	return ""
}

// settle completes a transition's evidence with the first sample in its new
// state (nil: none was seen) and labels it.
func (t *Tracker) settle(k BreakerKey, tr *Transition, smp *BreakerSample) Transition {
	if tr.settled {
		return *tr
	}
	tr.settled = true
	ev := tr.Evidence
	if smp != nil {
		ev.SampleTime = smp.Received
		ev.FailureRate, ev.SlowCallRate = smp.FailureRate, smp.SlowCallRate
		ev.Buffered, ev.Failed, ev.Slow, ev.SlowFailed = smp.Buffered, smp.Failed, smp.Slow, smp.SlowFailed
		if smp.Failed > 0 {
			ev.SlowFailedShare = smp.SlowFailed / smp.Failed
		}
	}
	if tr.lost {
		ev.Notes = append(ev.Notes, "the event ring buffer may have dropped events before this transition")
	}
	t.timeouts(k, tr, smp)
	t.label(tr, smp)
	tr.outcomes = nil
	return *tr
}

// thresholds picks the thresholds for a breaker: the sample's own, else the configuration's.
func (t *Tracker) thresholds(tr *Transition, smp *BreakerSample) {
	ev := tr.Evidence
	if smp != nil && !math.IsNaN(smp.FailureRateThreshold) && !math.IsNaN(smp.SlowCallRateThreshold) {
		ev.FailureRateThreshold, ev.SlowCallRateThreshold, ev.ThresholdSource = smp.FailureRateThreshold, smp.SlowCallRateThreshold, "actuator"
		return
	}
	if th, ok := t.th(tr.Breaker.Name); ok {
		ev.FailureRateThreshold, ev.SlowCallRateThreshold, ev.ThresholdSource = th.FailureRate, th.SlowCallRate, th.Source
		if ev.ThresholdSource == "" {
			ev.ThresholdSource = "config"
		}
	}
}

// exceeds compares like Resilience4j: float32 values, rate >= threshold, -1 never.
func exceeds(rate, threshold float64) (bool, bool) {
	if math.IsNaN(rate) || math.IsNaN(threshold) {
		return false, false
	}
	if rate < 0 {
		return false, true
	}
	return float32(rate) >= float32(threshold), true
}

func causeOf(fail, slow bool) string {
	switch {
	case fail && slow:
		return CauseBoth
	case fail:
		return CauseFailureRate
	case slow:
		return CauseSlowCallRate
	}
	return ""
}

func (t *Tracker) label(tr *Transition, smp *BreakerSample) {
	ev := tr.Evidence
	if math.IsNaN(ev.FailureRateThreshold) {
		t.thresholds(tr, smp)
	}
	f, fok := exceeds(ev.FailureRate, ev.FailureRateThreshold)
	sl, sok := exceeds(ev.SlowCallRate, ev.SlowCallRateThreshold)
	rates := fmt.Sprintf("failure rate %s against %s, slow-call rate %s against %s",
		fmtPct(ev.FailureRate), fmtPct(ev.FailureRateThreshold), fmtPct(ev.SlowCallRate), fmtPct(ev.SlowCallRateThreshold))
	missingRates := func() {
		if ev.SampleTime.IsZero() {
			ev.Missing = appendOnce(ev.Missing, "no sample in the new state (it lasted less than a poll interval)")
		} else if ev.ThresholdSource == "" {
			ev.Missing = appendOnce(ev.Missing, "thresholds unknown (the source does not export them; give the configuration)")
		}
	}
	switch {
	case tr.To == "FORCED_OPEN":
		tr.Cause, tr.Reason = CauseForced, "forced open by an operator (FORCE_OPEN)"
	case tr.To != "OPEN":
		tr.Cause, tr.Reason = "", ""
	case tr.From == "HALF_OPEN":
		tr.Cause = CauseHalfOpenTrial
		if c := causeOf(f, sl); c != "" {
			ev.TrialExceeded = c
			tr.Reason = "the half-open trial calls exceeded the thresholds: " + rates
		} else if ev.FailureRate == -1 {
			tr.Reason = "the half-open trial did not complete (max-wait-duration-in-half-open-state expired?)"
		} else {
			missingRates()
			tr.Reason = "the half-open trial failed; trial rates unavailable"
			if fok && sok {
				tr.Reason = "the half-open trial failed: " + rates
			}
		}
	case tr.From == "FORCED_OPEN" || tr.From == "DISABLED" || tr.From == "METRICS_ONLY":
		tr.Cause, tr.Reason = CauseForced, "manual transition from "+tr.From
	case len(ev.ExceededEvents) > 0:
		ef, es := false, false
		for _, x := range ev.ExceededEvents {
			ef = ef || x == "FAILURE_RATE_EXCEEDED"
			es = es || x == "SLOW_CALL_RATE_EXCEEDED"
		}
		tr.Cause = causeOf(ef, es)
		tr.Reason = strings.Join(ev.ExceededEvents, " and ") + " published before the transition"
		if fok && sok {
			tr.Reason += "; " + rates
			if causeOf(f, sl) != tr.Cause {
				ev.Notes = append(ev.Notes, "the rates of the first OPEN sample point to "+orNone(causeOf(f, sl))+" (late calls or a sliding TIME_BASED window changed them)")
			}
		}
	case fok && sok && causeOf(f, sl) != "":
		tr.Cause = causeOf(f, sl)
		tr.Reason = rates + " in the first OPEN sample"
		ev.Missing = appendOnce(ev.Missing, noThresholdEvents(tr))
	case fok && sok:
		tr.Cause = CauseUnknown
		ev.Missing = appendOnce(ev.Missing, noThresholdEvents(tr))
		tr.Reason = noThresholdEvents(tr) + ", and the first OPEN sample is below both thresholds (" + rates + ")"
	default:
		tr.Cause = CauseUnknown
		missingRates()
		tr.Reason = noThresholdEvents(tr) + "; " + strings.Join(ev.Missing, "; ")
		if tr.lost {
			tr.Reason += "; events were possibly lost"
		}
	}
}

// noThresholdEvents says why no FAILURE_RATE_EXCEEDED / SLOW_CALL_RATE_EXCEEDED
// event backs a transition: none was published, or no event was available.
func noThresholdEvents(tr *Transition) string {
	if tr.noEvents {
		return "breaker events unavailable (the source read none in the poll that found the transition)"
	}
	return "no threshold events"
}

func orNone(s string) string {
	if s == "" {
		return "neither threshold"
	}
	return s
}

func appendOnce(l []string, s string) []string {
	for _, x := range l {
		if x == s {
			return l
		}
	}
	return append(l, s)
}

func fmtPct(v float64) string {
	switch {
	case math.IsNaN(v):
		return "?"
	case v == -1:
		return "-1 (below minimum calls)"
	}
	return fmt.Sprintf("%.1f%%", v)
}

// timeouts measures the share of the window's failures that were timeouts.
func (t *Tracker) timeouts(k BreakerKey, tr *Transition, smp *BreakerSample) {
	ev := tr.Evidence
	if tr.To != "OPEN" {
		return
	}
	// 1. The breaker's own ERROR events, limited to the window size.
	outs := tr.outcomes
	if smp != nil && smp.Buffered > 0 && int(smp.Buffered) < len(outs) {
		outs = outs[len(outs)-int(smp.Buffered):]
	}
	errs, tos := 0, 0
	for _, e := range outs {
		if e.Type == "ERROR" {
			errs++
			if strings.Contains(e.ErrorMessage, "TimeoutException") {
				tos++
			}
		}
	}
	if errs > 0 {
		ev.TimeoutShare, ev.TimeoutSource = float64(tos)/float64(errs), "error-messages"
		return
	}
	// 2. Time limiter events of the same name since the previous transition.
	b := t.br[k]
	var lt, lf int
	for _, e := range t.limEv[k.Name] {
		if e.CreationTime.After(tr.Latest) || (!tr.windowStart.IsZero() && !e.CreationTime.After(tr.windowStart)) {
			continue
		}
		switch e.Type {
		case "TIMEOUT":
			lt++
		case "ERROR":
			lf++
		}
	}
	if lt+lf > 0 {
		ev.TimeoutShare, ev.TimeoutSource = float64(lt)/float64(lt+lf), "timelimiter-events"
		return
	}
	// 3. Time limiter counters: growth since the breaker was last CLOSED.
	if l, ok := t.limLast[k]; ok && b.hasBase {
		dt, df := l.Timeout-b.limBase.Timeout, l.Failed-b.limBase.Failed
		if dt+df > 0 {
			ev.TimeoutShare, ev.TimeoutSource = dt/(dt+df), "timelimiter-metrics"
			return
		}
	}
	if errs == 0 && len(outs) == 0 {
		ev.Missing = appendOnce(ev.Missing, "no call events or time limiter data for the timeout share")
	}
}

// Recording is everything a sampler streamed, for AnalyzeRecording.
type Recording struct {
	// Samples of every poll and breaker.
	Samples []BreakerSample `json:"samples"`
	// Events, each once, as delivered.
	Events []Event `json:"events"`
	// Limiters are time limiter counters (Prometheus sources).
	Limiters []LimiterSample `json:"limiters,omitempty"`
	// Lost are the ring-buffer losses found.
	Lost []LostEvents `json:"lost,omitempty"`
	// Restarts are restarts the sources noticed.
	Restarts []Reset `json:"restarts,omitempty"`
}

// Analyze detects the transitions in recorded samples and events (as the
// Sampler delivered them: samples stamped with their poll's Received time,
// events with Polled) and labels every OPEN with its cause. It is pure: the
// same input gives the same output. th supplies thresholds the samples lack.
func Analyze(samples []BreakerSample, events []Event, th Thresholds) []Transition {
	return AnalyzeRecording(Recording{Samples: samples, Events: events}, th)
}

// AnalyzeRecording is Analyze with time limiter counters, losses and restarts.
func AnalyzeRecording(r Recording, th Thresholds) []Transition {
	polls := map[int64]*Snapshot{}
	get := func(t time.Time) *Snapshot {
		s := polls[t.UnixNano()]
		if s == nil {
			s = &Snapshot{Sent: t, Received: t}
			polls[t.UnixNano()] = s
		}
		return s
	}
	for _, b := range r.Samples {
		s := get(b.Received)
		if s.Sent.Equal(s.Received) || b.Sent.Before(s.Sent) {
			s.Sent = b.Sent
		}
		s.Breakers = append(s.Breakers, b)
	}
	for _, e := range r.Events {
		s := get(e.Polled)
		s.Events = append(s.Events, e)
	}
	for _, l := range r.Limiters {
		s := get(l.Received)
		s.Limiters = append(s.Limiters, l)
	}
	for _, l := range r.Lost {
		s := get(l.Polled)
		s.Lost = append(s.Lost, l)
	}
	for _, x := range r.Restarts {
		s := get(x.Received)
		s.Restarts = append(s.Restarts, x)
	}
	keys := make([]int64, 0, len(polls))
	for k := range polls {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	tk := NewTracker(th)
	for _, k := range keys {
		tk.Observe(*polls[k])
	}
	tk.Flush()
	return tk.Transitions()
}
