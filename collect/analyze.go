package collect

import (
	"github.com/cbprobe/cbprobe/breaker"
	"math"
	"sort"
	"time"
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
	// Cause is set for transitions into OPEN and FORCED_OPEN.
	Cause breaker.OpenCause `json:"cause,omitempty"`
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
	// TrialExceeded names what a failed half-open trial exceeded (a rate cause).
	TrialExceeded breaker.OpenCause `json:"trialExceeded,omitempty"`
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
	tk := NewTracker(th)
	for _, s := range r.polls() {
		tk.Observe(s)
	}
	tk.Flush()
	return tk.Transitions()
}

// polls rebuilds the recording's snapshots, one per poll (receive time), in
// time order.
func (r Recording) polls() []Snapshot {
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
	out := make([]Snapshot, 0, len(keys))
	for _, k := range keys {
		out = append(out, *polls[k])
	}
	return out
}
