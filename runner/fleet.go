package runner

import (
	"cmp"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/cbprobe/cbprobe/collect"
	"github.com/cbprobe/cbprobe/results"
)

// InstanceOutcome is one replica's breaker in a fleet run.
type InstanceOutcome struct {
	// Breaker is the key "name@instance".
	Breaker string
	// Transitions are this replica's transitions, labelled (wall clock).
	Transitions []results.Transition
	// Reconciliation is this replica's evidence checked against itself: its
	// samples, transitions and the polling record. Refusals at the entry point
	// cannot be told apart by replica, so they are checked for the fleet.
	Reconciliation collect.Reconciliation
}

// fleetKeys returns the keys of the followed breaker on every instance the
// metrics showed ("name@instance", sorted), when there are two or more.
func fleetKeys(followed string, seen []string) []string {
	name, _, _ := strings.Cut(followed, "@")
	var keys []string
	for _, k := range seen {
		n, inst, ok := strings.Cut(k, "@")
		if ok && inst != "" && n == name {
			keys = append(keys, k)
		}
	}
	if len(keys) < 2 {
		return nil
	}
	sort.Strings(keys)
	return keys
}

// analyseFleet replaces the single-breaker analysis when the followed breaker
// runs on several replicas: every replica's transitions are labelled and
// reconciled on its own, the arm's transitions are all of them, and the arm's
// reconciliation is the fleet's: a replica's doubt is the arm's doubt, and a
// refusal at the entry point while every replica was seen CLOSED is unexplained
// (st.mu held).
func (o *Outcome) analyseFleet(cfg *Config, st *state, keys []string) {
	start := st.tl.fromWall(o.Started)
	interval := time.Duration(float64(st.scrapeInterval()) * st.tl.speed)
	labelled := collect.AnalyzeRecording(o.Recording, cfg.Thresholds)
	var answers []collect.Answer
	for _, r := range o.Requests {
		// A refusal cannot be attributed to a replica: each replica's own
		// check sees the requests as answered, not refused.
		answers = append(answers, collect.Answer{Sent: st.tl.fromWall(r.Sent), Done: st.tl.fromWall(r.Sent.Add(r.Latency))})
	}
	fleet := collect.Reconciliation{}
	o.Transitions = nil
	o.Instances = nil
	byKey := map[string][]collect.Transition{}
	for _, k := range keys {
		key := parseKey(k)
		var own []collect.Transition
		for _, t := range labelled {
			if t.Breaker != key {
				continue
			}
			if t.Time.Before(start.Add(-interval)) && t.TimeSource == collect.TimeFromEvent {
				continue // history from before this arm
			}
			own = append(own, t)
		}
		rec := collect.Reconcile(collect.ReconcileInput{Breaker: key, Samples: o.Recording.Samples, Transitions: own,
			Gaps: append(instanceGaps(key, o.Recording.Samples, interval), o.Gaps...), Answers: answers, Start: start, Interval: interval})
		own = append(own, rec.Inferred...)
		byKey[k] = own
		io := InstanceOutcome{Breaker: k, Reconciliation: rec}
		for _, t := range own {
			io.Transitions = append(io.Transitions, o.convert(t))
		}
		sortTransitions(io.Transitions)
		o.Transitions = append(o.Transitions, io.Transitions...)
		o.Instances = append(o.Instances, io)
		fleet.Samples += rec.Samples
		if rec.LastSample.After(fleet.LastSample) {
			fleet.LastSample = rec.LastSample
		}
		fleet.LastAnswer = rec.LastAnswer
		fleet.Inconclusive = fleet.Inconclusive || rec.Inconclusive
		for _, r := range rec.Reasons {
			fleet.Reasons = append(fleet.Reasons, "instance "+k+": "+r)
		}
		fleet.Fix = appendNew(fleet.Fix, rec.Fix...)
		for _, n := range rec.Notes {
			fleet.Notes = append(fleet.Notes, "instance "+k+": "+n)
		}
		fleet.Gaps = append(fleet.Gaps, rec.Gaps...)
	}
	sortTransitions(o.Transitions)
	for _, r := range o.Requests {
		if r.Outcome == results.OutcomeRejected {
			fleet.Refusals++
		}
	}
	if n, first := unexplainedRefusals(o.Requests, st.tl, o.Recording.Samples, keys, byKey, interval); n > 0 {
		fleet.Inconclusive = true
		fleet.Reasons = append(fleet.Reasons, fmt.Sprintf("%d refusals at the entry point while every replica's breaker was seen CLOSED (the first at +%.1f s): another breaker refused, or a replica was not read",
			n, first.Sub(o.Started).Seconds()))
		fleet.Fix = appendNew(fleet.Fix, "read every replica (one --actuator per replica, or --prom-api with the instance label) and set --breaker to the breaker the entry point calls through")
	}
	o.Reconciliation = &fleet
}

// parseKey reads "name@instance".
func parseKey(k string) collect.BreakerKey {
	name, inst, _ := strings.Cut(k, "@")
	return collect.BreakerKey{Name: name, Instance: inst}
}

// instanceGaps are the stretches in which one replica was not read while the
// poll as a whole worked (a FleetSource or a Prometheus server keeps answering
// for the others): consecutive samples of key more than SlowPoll intervals
// apart.
func instanceGaps(key collect.BreakerKey, samples []collect.BreakerSample, interval time.Duration) []collect.Gap {
	var gaps []collect.Gap
	var prev time.Time
	for _, s := range samples {
		if s.Key() != key {
			continue
		}
		at := s.Received
		if !prev.IsZero() && at.Sub(prev) > collect.SlowPoll*interval {
			gaps = append(gaps, collect.Gap{From: prev, To: s.Sent, Polls: int(at.Sub(prev) / interval),
				Reasons: []string{"replica " + key.Instance + " not in the metrics"}})
		}
		prev = at
	}
	return gaps
}

// unexplainedRefusals counts refused requests answered while no replica could
// have refused: each replica's last sample before the answer said CLOSED, its
// first sample after it too, and no transition of it into OPEN lies before the
// answer without one back to CLOSED. first is the earliest such answer (wall).
func unexplainedRefusals(reqs []results.Request, tl timeline, samples []collect.BreakerSample, keys []string,
	byKey map[string][]collect.Transition, interval time.Duration) (n int, first time.Time) {
	// observed is when a sample's values were read at the service (a Prometheus
	// server's scrape time, which can precede the poll by a scrape interval).
	observed := func(s *collect.BreakerSample) time.Time {
		if !s.ObservedAt.IsZero() {
			return s.ObservedAt
		}
		return s.Received
	}
	closedAround := func(k collect.BreakerKey, at time.Time) bool {
		var before, after *collect.BreakerSample
		for i := range samples {
			s := &samples[i]
			if s.Key() != k {
				continue
			}
			switch o := observed(s); {
			case !o.After(at):
				before = s
			case after == nil || o.Before(observed(after)):
				after = s
			}
		}
		return before != nil && after != nil && before.State == "CLOSED" && after.State == "CLOSED" &&
			observed(after).Sub(observed(before)) <= collect.SlowPoll*interval
	}
	for _, r := range reqs {
		if r.Outcome != results.OutcomeRejected {
			continue
		}
		done := tl.fromWall(r.Sent.Add(r.Latency))
		explained := false
		for _, k := range keys {
			key := parseKey(k)
			if !closedAround(key, done) || openedBefore(byKey[k], done) {
				explained = true
				break
			}
		}
		if !explained {
			n++
			if w := r.Sent.Add(r.Latency); first.IsZero() || w.Before(first) {
				first = w
			}
		}
	}
	return n, first
}

// openedBefore reports whether the last of ts that may have happened at or
// before at went into a state that refuses calls.
func openedBefore(ts []collect.Transition, at time.Time) bool {
	state := "CLOSED"
	for _, t := range ts {
		// A change seen only by polling may have happened as early as Earliest.
		if first := cmp.Or(t.Earliest, t.Time); first.After(at) {
			break
		}
		state = t.To
	}
	return state == "OPEN" || state == "HALF_OPEN" || state == "FORCED_OPEN"
}

func appendNew(list []string, xs ...string) []string {
	for _, x := range xs {
		found := false
		for _, y := range list {
			found = found || x == y
		}
		if !found {
			list = append(list, x)
		}
	}
	return list
}
