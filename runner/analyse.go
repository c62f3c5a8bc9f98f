package runner

import (
	"fmt"
	"github.com/cbprobe/cbprobe/breaker"
	"math"
	"strings"
	"time"

	"github.com/cbprobe/cbprobe/collect"
	"github.com/cbprobe/cbprobe/results"
)

// analyse labels the followed breaker's transitions and reconciles the
// evidence (st.mu held).
func (o *Outcome) analyse(cfg *Config, st *state) {
	start := st.tl.fromWall(o.Started)
	var own []collect.Transition
	for _, t := range collect.AnalyzeRecording(o.Recording, cfg.Thresholds) {
		if t.Breaker.String() != o.Breaker {
			continue
		}
		if t.Time.Before(start.Add(-time.Duration(float64(cfg.Interval)*st.tl.speed))) && t.TimeSource == collect.TimeFromEvent {
			continue // history: the service's event buffer holds transitions from before this arm
		}
		own = append(own, t)
	}
	key := collect.BreakerKey{Name: o.Breaker}
	if name, inst, ok := strings.Cut(o.Breaker, "@"); ok {
		key = collect.BreakerKey{Name: name, Instance: inst}
	}
	answers := make([]collect.Answer, 0, len(o.Requests))
	for _, r := range o.Requests {
		answers = append(answers, collect.Answer{Sent: st.tl.fromWall(r.Sent), Done: st.tl.fromWall(r.Sent.Add(r.Latency)),
			Refused: r.Outcome == results.OutcomeRejected})
	}
	interval := st.scrapeInterval()
	rec := collect.Reconcile(collect.ReconcileInput{Breaker: key, Samples: o.Recording.Samples, Transitions: own,
		Gaps: o.Gaps, Answers: answers, Start: start, Interval: time.Duration(float64(interval) * st.tl.speed)})
	o.Reconciliation = &rec
	for _, t := range own {
		o.Transitions = append(o.Transitions, o.convert(t))
	}
	for _, t := range rec.Inferred {
		o.Transitions = append(o.Transitions, o.convert(t))
	}
	sortTransitions(o.Transitions)
}

func sortTransitions(ts []results.Transition) {
	for i := 1; i < len(ts); i++ {
		for j := i; j > 0 && ts[j].At.Before(ts[j-1].At); j-- {
			ts[j], ts[j-1] = ts[j-1], ts[j]
		}
	}
}

// convert copies collect's labelled transition into the run record (wall clock).
func (o *Outcome) convert(t collect.Transition) results.Transition {
	out := results.Transition{At: o.tl.toWall(t.Time).UTC(), Breaker: t.Breaker.String(), From: t.From, To: t.To,
		Cause: string(t.Cause), Evidence: evidence(t), Inferred: t.Inferred}
	var unc []string
	if t.TimeSource != collect.TimeFromEvent && !t.Latest.IsZero() {
		unc = append(unc, fmt.Sprintf("time from polling, ±%s", (o.tl.toWall(t.Latest).Sub(o.tl.toWall(t.Earliest))/2).Round(time.Millisecond)))
	}
	if t.Inferred {
		why := "no sample or event showed it"
		if t.Reason != "" && t.Cause != breaker.CauseHalfOpenTrial {
			why = t.Reason
		}
		unc = append(unc, "inferred: "+why)
	}
	if t.Evidence != nil && len(t.Evidence.Missing) > 0 {
		unc = append(unc, "missing: "+strings.Join(t.Evidence.Missing, ", "))
	}
	if t.Note != "" {
		unc = append(unc, t.Note)
	}
	out.Uncertainty = strings.Join(unc, "; ")
	return out
}

func evidence(t collect.Transition) results.Evidence {
	e := results.UnknownEvidence()
	if t.Evidence == nil {
		if t.Reason != "" {
			e.Note = t.Reason
		}
		return e
	}
	ev := t.Evidence
	e.Source = "sample"
	if len(ev.ExceededEvents) > 0 {
		e.Source = "events"
	}
	count := func(x float64) int {
		if math.IsNaN(x) {
			return -1
		}
		return int(x)
	}
	e.FailureRate, e.SlowCallRate = known(ev.FailureRate), known(ev.SlowCallRate)
	e.FailureRateThreshold, e.SlowCallRateThreshold = known(ev.FailureRateThreshold), known(ev.SlowCallRateThreshold)
	e.Buffered, e.Failed, e.Slow = count(ev.Buffered), count(ev.Failed), count(ev.Slow)
	e.Events = ev.ExceededEvents
	var notes []string
	if t.Reason != "" {
		notes = append(notes, t.Reason)
	}
	if !math.IsNaN(ev.SlowFailedShare) && ev.Failed > 0 {
		notes = append(notes, fmt.Sprintf("%.0f%% of the failures were also slow", 100*ev.SlowFailedShare))
	}
	if !math.IsNaN(ev.TimeoutShare) && ev.TimeoutSource != "" {
		share := ev.TimeoutShare
		e.TimeoutShare = &share
		notes = append(notes, fmt.Sprintf("%.0f%% of the failures were timeouts (%s)", 100*ev.TimeoutShare, ev.TimeoutSource))
	}
	e.ThresholdSource = ev.ThresholdSource
	if ev.ThresholdSource != "" {
		notes = append(notes, "thresholds from "+ev.ThresholdSource)
	}
	notes = append(notes, ev.Notes...)
	e.Note = strings.Join(notes, "; ")
	return e
}

// Fill writes the outcome into arm: requests counted into its phases (phases
// the arm lacks are added; dropped and late from the load engine), the
// breaker, transitions with their request numbers (results.Arm.MarkRequests),
// latency, the reconciled observation and the notes. Callers fill the rest
// (parameters, comparisons).
func (o *Outcome) Fill(arm *results.Arm) {
	for _, r := range o.Requests {
		arm.Add(r)
	}
	for i, ps := range o.Summary.Phases {
		ph := arm.Phase(ps.Name)
		if ph == nil && i < len(arm.Phases) && len(arm.Phases) == len(o.Summary.Phases) {
			ph = &arm.Phases[i]
		}
		if ph == nil {
			arm.Phases = append(arm.Phases, results.PhaseStats{Name: ps.Name, Rate: ps.Rate, Duration: ps.Duration, Planned: ps.Planned})
			ph = &arm.Phases[len(arm.Phases)-1]
		}
		ph.Dropped, ph.Late = ps.Dropped, ps.Late
		if ph.Planned == 0 {
			ph.Planned = ps.Planned
		}
	}
	if o.Breaker != "" {
		arm.Breaker = o.Breaker
	}
	arm.Transitions = append(arm.Transitions[:0], o.Transitions...)
	arm.MarkRequests(o.Requests)
	if len(o.Instances) > 1 {
		keys := make([]string, len(o.Instances))
		obs := map[string]*results.Observation{}
		for i, in := range o.Instances {
			keys[i] = in.Breaker
			obs[in.Breaker] = o.observation(&in.Reconciliation)
		}
		arm.SetFleet(keys, obs)
	}
	arm.SetLatency(o.Requests)
	arm.Notes = append(arm.Notes, o.Notes...)
	if o.Reconciliation == nil && o.TargetDown == "" {
		return
	}
	obs := &results.Observation{Verdict: results.ObservationConsistent}
	if rc := o.Reconciliation; rc != nil {
		obs = o.observation(rc)
	}
	obs.PollErrors = o.PollErrors
	if o.TargetDown != "" {
		obs.Verdict = results.VerdictInconclusive
		obs.Reasons = append(obs.Reasons, o.TargetDown)
		obs.Fix = append(obs.Fix, "keep the service running for the whole run (look at its log for why it stopped)")
	}
	arm.Observation = obs
}

// observation turns a reconciliation into the run record's form (wall clock).
func (o *Outcome) observation(rc *collect.Reconciliation) *results.Observation {
	obs := &results.Observation{Verdict: results.ObservationConsistent, PollErrors: o.PollErrors}
	obs.Reasons = append(obs.Reasons, rc.Reasons...)
	obs.Fix = append(obs.Fix, rc.Fix...)
	obs.Notes = append(obs.Notes, rc.Notes...)
	obs.Refusals, obs.Samples = rc.Refusals, rc.Samples
	obs.LastSample, obs.LastRequest = o.tl.toWall(rc.LastSample).UTC(), o.tl.toWall(rc.LastAnswer).UTC()
	for _, g := range rc.Gaps {
		og := results.ObservedGap{From: o.tl.toWall(g.From).UTC(), Polls: g.Polls, Reason: g.Reason, Refusals: g.Refusals, Decisive: g.Decisive}
		if !g.To.IsZero() {
			og.To = o.tl.toWall(g.To).UTC()
		}
		obs.Gaps = append(obs.Gaps, og)
	}
	if rc.Inconclusive {
		obs.Verdict = results.VerdictInconclusive
	}
	return obs
}

// Warnings are the run-level warnings of this outcome: the load generator
// falling behind, the target not answering.
func (o *Outcome) Warnings(arm string) []string {
	var w []string
	if o.Lag.Behind {
		w = append(w, "arm "+arm+": "+o.Lag.Warning)
	}
	if o.TargetDown != "" {
		w = append(w, "arm "+arm+": "+o.TargetDown)
	}
	return w
}
