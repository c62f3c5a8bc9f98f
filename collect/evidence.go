package collect

import (
	"math"
	"strings"
)

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

// timeouts measures the share of the window's failures that were timeouts,
// from the first source that has any: the breaker's ERROR events, the time
// limiter's events since the previous transition, the time limiter's counters
// since the breaker was last CLOSED.
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
	errs, tos := countTimeoutErrors(outs)
	if errs > 0 {
		ev.TimeoutShare, ev.TimeoutSource = float64(tos)/float64(errs), "error-messages"
		return
	}
	// 2. Time limiter events of the same name since the previous transition.
	lt, lf := countLimiterEvents(t.limEv[k.Name], tr)
	if lt+lf > 0 {
		ev.TimeoutShare, ev.TimeoutSource = float64(lt)/float64(lt+lf), "timelimiter-events"
		return
	}
	// 3. Time limiter counters: growth since the breaker was last CLOSED.
	b := t.br[k]
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

// countTimeoutErrors counts the ERROR events among outs and those of them
// that were timeouts (a TimeoutException message).
func countTimeoutErrors(outs []Event) (errs, timeouts int) {
	for _, e := range outs {
		if e.Type == "ERROR" {
			errs++
			if strings.Contains(e.ErrorMessage, "TimeoutException") {
				timeouts++
			}
		}
	}
	return errs, timeouts
}

// countLimiterEvents counts the time limiter's TIMEOUT and ERROR events in
// the window before tr: after the previous transition, not after tr.Latest.
func countLimiterEvents(events []Event, tr *Transition) (timeouts, errs int) {
	for _, e := range events {
		if e.CreationTime.After(tr.Latest) || (!tr.windowStart.IsZero() && !e.CreationTime.After(tr.windowStart)) {
			continue
		}
		switch e.Type {
		case "TIMEOUT":
			timeouts++
		case "ERROR":
			errs++
		}
	}
	return timeouts, errs
}
