package experiments

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/cbprobe/cbprobe/breaker"
	"github.com/cbprobe/cbprobe/pgsim"
	"github.com/cbprobe/cbprobe/results"
	"github.com/cbprobe/cbprobe/runner"
	"github.com/cbprobe/cbprobe/sim"
	"github.com/cbprobe/cbprobe/springconf"
)

// ExternalConfigNote starts the arm note that lists the settings an external
// target must run with for the arm to mean what it says.
const ExternalConfigNote = "cbprobe cannot change an external service's configuration: this arm assumes your service runs with "

// armFacts are what the analysis measured for an arm, typed. Findings,
// comparisons and expectations read these; run.json shows the same values as
// parameters and notes for people, and no code reads those back, so rewording a
// note cannot turn a finding off.
type armFacts struct {
	// loadBehind is the load generator's warning when it fell behind the plan ("" on time).
	loadBehind string
	// targetDown says the target stopped answering mid-run ("" when it did not).
	targetDown string
	// unobstructed counts the requests of the attempts measure (see attemptsPerRequest).
	unobstructed int
	// gatewayRefused counts gateway attempts answered 4xx (refused payments).
	gatewayRefused int
	// notPermitted counts the breaker's NOT_PERMITTED events.
	notPermitted int
	// eventsLost lists, per loss, what was lost to the service's event ring buffer.
	eventsLost []string
	// prediction is the simulation of the arm.
	prediction sim.Prediction
}

// analyse turns what an arm recorded into its part of the run record, and its
// typed facts into ar.facts.
func (ar *armRun) analyse(p armPlan, o Options) *results.Arm {
	ar.mu.Lock()
	defer ar.mu.Unlock()
	out := ar.out
	s := p.settings
	arm := &results.Arm{
		Name:        p.arm.Name,
		Description: p.arm.Description,
		Breaker:     out.Breaker,
		Thresholds:  results.Thresholds{FailureRate: float64(s.Breaker.FailureRateThreshold), SlowCallRate: float64(s.Breaker.SlowCallRateThreshold)},
		Parameters:  armParameters(p),
	}
	// Phases in plan order, so a pause with no request still shows.
	if len(p.phases) > 0 {
		for _, ph := range p.phases {
			arm.Phases = append(arm.Phases, results.PhaseStats{Name: ph.Name, Rate: ph.Rate, Duration: ph.Duration, Planned: o.Shard.Planned(ph)})
		}
	} else {
		arm.Phases = append(arm.Phases, results.PhaseStats{Name: "sequential", Planned: o.Shard.Users(p.seq.Users) * p.seq.Requests})
	}
	out.Fill(arm)
	if arm.Breaker == "" {
		arm.Breaker = ar.feign
	}
	arm.Latency = scaleLatency(arm.Latency, o.Speed)
	for i := range arm.Phases {
		arm.Phases[i].Latency = scaleLatency(arm.Phases[i].Latency, o.Speed)
	}
	f := &ar.facts
	if out.Lag.Behind {
		f.loadBehind = "arm " + arm.Name + ": " + out.Lag.Warning
		arm.Parameters["loadBehind"] = f.loadBehind
	}
	if out.TargetDown != "" {
		f.targetDown = out.TargetDown
		arm.Parameters["targetDown"] = f.targetDown
	}
	arm.AttemptsPerRequest, f.unobstructed, ar.unreached = attemptsPerRequest(out.Requests, ar.orders, ar.log, ar.attempts.Total)
	if n := ar.attempts.Outcomes[pgsim.OutcomeRejected]; n > 0 {
		f.gatewayRefused = n
		arm.Parameters["gatewayRefused"] = n
	}
	for _, e := range out.Recording.Events {
		if runner.BreakerKey(e.Name, e.Instance) == arm.Breaker && e.Type == "NOT_PERMITTED" {
			f.notPermitted++
		}
	}
	arm.Parameters["notPermittedEvents"] = f.notPermitted
	if o.Speed != 1 {
		arm.Notes = append(arm.Notes, fmt.Sprintf("Run at --speed %g: rates ×%g and durations ÷%g in real time; latencies below are in service time (real × %g).", o.Speed, o.Speed, o.Speed, o.Speed))
	}
	arm.Notes = append(arm.Notes, fmt.Sprintf("Gateway attempts (the gateway's attempt log: pgsim's, or fault's with --gateway fault): %.3f per request over the %d requests the breaker did not reject; %d in all for %d requests.",
		arm.AttemptsPerRequest, f.unobstructed, ar.attempts.Total, arm.Totals().Sent))
	if ar.unreached > 0 {
		arm.Notes = append(arm.Notes, fmt.Sprintf("%d requests were left out of attempts per request: their payment never reached the gateway (cut by the TimeLimiter or a transport error before pgsim received it), so they say nothing about retries.", ar.unreached))
	}
	for _, l := range out.Recording.Lost {
		n := fmt.Sprintf("Events of %s lost to the service's ring buffer (size %d) between %s and %s (at least %d).",
			l.Name, l.BufferSize, out.ToWall(l.After).Format(time.RFC3339Nano), out.ToWall(l.Before).Format(time.RFC3339Nano), l.AtLeast)
		f.eventsLost = append(f.eventsLost, n)
		arm.Notes = append(arm.Notes, n)
	}
	if o.Target != "" && len(p.props) > 0 {
		var lines []string
		for _, k := range slices.Sorted(maps.Keys(p.props)) {
			lines = append(lines, k+"="+p.props[k])
		}
		arm.Notes = append(arm.Notes, ExternalConfigNote+strings.Join(lines, ", "))
	}
	return arm
}

// attemptsPerRequest is gateway attempts per request over the requests the breaker
// did not obstruct (none of their attempts was refused, so their outcome is not
// "rejected") and whose payment reached the gateway: the population the closed
// form (1 − p^n)/(1 − p) describes. The attempts come from pgsim's log, matched
// to requests by the service's orderId that the flow captured. A request with an
// orderId but no attempt in the log never reached the gateway (the TimeLimiter
// cut the call before pgsim received it, which happens on a loaded machine at
// --speed; or the payment step failed in transport): it is counted apart
// (unreached), since it says nothing about retries. Without order ids (a custom
// flow) it is every attempt over every request.
func attemptsPerRequest(reqs []results.Request, orders map[int]string, log []pgsim.Attempt, total int) (mean float64, n, unreached int) {
	perOrder := map[string]int{}
	for _, a := range log {
		if a.OrderID != "" {
			perOrder[a.OrderID]++
		}
	}
	attempts := 0
	for _, r := range reqs {
		id, ok := orders[r.Seq]
		if !ok || r.Outcome == results.OutcomeRejected {
			continue
		}
		if perOrder[id] == 0 {
			unreached++
			continue
		}
		attempts += perOrder[id]
		n++
	}
	if len(orders) == 0 {
		if len(reqs) == 0 {
			return 0, 0, 0
		}
		return float64(total) / float64(len(reqs)), len(reqs), 0
	}
	if n == 0 {
		return 0, 0, unreached
	}
	return float64(attempts) / float64(n), n, unreached
}

func armParameters(p armPlan) map[string]any {
	s := p.settings
	c := s.Breaker
	m := map[string]any{
		"breaker":            s.BreakerName,
		"slidingWindow":      fmt.Sprintf("%s %d", c.SlidingWindowType, c.SlidingWindowSize),
		"minimumCalls":       c.MinimumNumberOfCalls,
		"failureThreshold":   c.FailureRateThreshold,
		"slowThreshold":      c.SlowCallRateThreshold,
		"slowCallDuration":   c.SlowCallDurationThreshold.String(),
		"waitInOpen":         c.WaitDurationInOpenState.String(),
		"halfOpenPermits":    c.PermittedNumberOfCallsInHalfOpenState,
		"timeLimiter":        s.TimeLimiter.TimeoutDuration.String(),
		"retryMaxAttempts":   s.Retry.MaxAttempts,
		"retryOnRejection":   s.RetryOnRejection,
		"gateway":            p.behaviors[0].String(),
		"configurationFile":  p.file.Name(),
		"propertiesOverride": p.props,
	}
	if len(p.behaviors) > 1 {
		var per []string
		for i, b := range p.behaviors {
			per = append(per, fmt.Sprintf("%s: %s", p.phases[i].Name, b))
		}
		m["gatewayPerPhase"] = per
	}
	return m
}

// scaleLatency turns latencies measured at --speed into service time.
func scaleLatency(l results.LatencyStats, speed float64) results.LatencyStats {
	return results.LatencyStats{P50: l.P50 * speed, P90: l.P90 * speed, P95: l.P95 * speed, P99: l.P99 * speed, Max: l.Max * speed, Mean: l.Mean * speed}
}

// addComparisons sets the prediction beside each measurement.
func addComparisons(arm *results.Arm, p armPlan, f armFacts) {
	pr, unob := f.prediction, f.unobstructed
	reported := p.arm.Reported
	rep := func(key string) *float64 {
		if v, ok := reported[key]; ok {
			return &v
		}
		return nil
	}
	request := func(metric, key string, measured int, b sim.Band) {
		c := results.Comparison{Metric: metric, Unit: "requests", Measured: float64(measured),
			PredictedP5: b.P5, PredictedP50: b.P50, PredictedP95: b.P95, PredictedMean: b.Mean, Reported: rep(key)}
		switch {
		case measured == 0 && b.Share < 0.05:
			c.Note = fmt.Sprintf("never, as predicted (%.0f%% of simulated runs)", 100*b.Share)
		case measured == 0:
			c.OutsideBand = b.Share > 0.95
			c.Note = fmt.Sprintf("never; %.0f%% of simulated runs did", 100*b.Share)
		default:
			c.OutsideBand = !b.Contains(float64(measured))
			if b.Share < 1 {
				c.Note = fmt.Sprintf("band over the %.0f%% of simulated runs in which it happened", 100*b.Share)
			}
		}
		arm.Comparisons = append(arm.Comparisons, c)
	}
	request("first OPEN request", "first-open-request", arm.FirstOpenRequest, pr.FirstOpenRequest)
	request("first rejected request", "first-rejected-request", arm.FirstRejectedRequest, pr.FirstRejectedRequest)
	tot := arm.Totals()
	rej := results.Comparison{Metric: "rejected share", Unit: "%", Measured: 100 * tot.Share(tot.Rejected),
		PredictedP5: 100 * pr.RejectedBand.P5, PredictedP50: 100 * pr.RejectedBand.P50, PredictedP95: 100 * pr.RejectedBand.P95,
		PredictedMean: 100 * pr.RejectedShare, Reported: percent(rep("rejected"))}
	rej.OutsideBand = outside(rej)
	arm.Comparisons = append(arm.Comparisons, rej)
	for i, ph := range pr.Phases {
		if i >= len(arm.Phases) || arm.Phases[i].Sent == 0 {
			continue
		}
		m := arm.Phases[i]
		for _, x := range []struct {
			what     string
			measured float64
			band     sim.Band
			pooled   float64
		}{
			{"success", m.Share(m.Succeeded), ph.Success, ph.SuccessShare},
			{"rejected", m.Share(m.Rejected), ph.Rejected, ph.RejectedShare},
		} {
			c := results.Comparison{Metric: fmt.Sprintf("phase %d (%s) %s share", i+1, m.Name, x.what), Unit: "%",
				Measured: 100 * x.measured, PredictedP5: 100 * x.band.P5, PredictedP50: 100 * x.band.P50,
				PredictedP95: 100 * x.band.P95, PredictedMean: 100 * x.pooled,
				Reported: percent(rep(fmt.Sprintf("phase[%d].%s", i+1, x.what)))}
			c.OutsideBand = outside(c)
			arm.Comparisons = append(arm.Comparisons, c)
		}
	}
	addFleetComparisons(arm, pr)
	a := pr.AttemptsPerRequest
	ab := a.UnobstructedBand
	att := results.Comparison{Metric: fmt.Sprintf("gateway attempts per request (closed form %.2f)", a.ClosedForm), Measured: arm.AttemptsPerRequest,
		PredictedP5: ab.P5, PredictedP50: ab.P50, PredictedP95: ab.P95, PredictedMean: a.Unobstructed,
		Note: fmt.Sprintf("closed form (1 − p^n)/(1 − p) = %.3f with p = %.3f, n = %d (requests that never met an open breaker); band: 5–95 %% of the simulated runs' own value", a.ClosedForm, a.P, a.MaxAttempts)}
	if unob > 0 && ab.N > 0 {
		att.OutsideBand = !ab.Contains(arm.AttemptsPerRequest)
	}
	arm.Comparisons = append(arm.Comparisons, att)
	if f.loadBehind != "" {
		// Everything but the attempts per request depends on when requests left.
		for i := range arm.Comparisons {
			c := &arm.Comparisons[i]
			if strings.HasPrefix(c.Metric, "gateway attempts") {
				continue
			}
			c.Inconclusive, c.OutsideBand = true, false
			c.Note = strings.TrimPrefix(c.Note+"; inconclusive: the load generator fell behind (see warnings)", "; ")
		}
	}
	var causes []string
	for _, k := range []breaker.OpenCause{breaker.CauseSlowCallRate, breaker.CauseFailureRate, breaker.CauseBoth} {
		if v := pr.OpenCauses[k]; v > 0 {
			causes = append(causes, fmt.Sprintf("%s %.0f%%", k, 100*v))
		}
	}
	if len(causes) > 0 {
		arm.Notes = append(arm.Notes, "Predicted cause of the first OPEN: "+strings.Join(causes, ", ")+".")
	}
	arm.Notes = append(arm.Notes, fmt.Sprintf("Half-open trial pass probability: %.4g: %s.", pr.HalfOpenPassProbability, strings.TrimSuffix(pr.HalfOpenMeaning, ".")))
	arm.Notes = append(arm.Notes, pr.Notes...)
	if arm.Parameters == nil {
		arm.Parameters = map[string]any{}
	}
	arm.Parameters["halfOpenPassProbability"] = pr.HalfOpenPassProbability
	arm.Parameters["predictedRuns"] = pr.Runs
}

func percent(v *float64) *float64 {
	if v == nil {
		return nil
	}
	x := 100 * *v
	return &x
}

// outside flags a share outside the predicted band, allowing one request's worth of
// rounding at the band edges.
func outside(c results.Comparison) bool {
	return c.Measured < c.PredictedP5-1e-9 || c.Measured > c.PredictedP95+1e-9
}

// armOutcome extracts what expectations are checked against.
func armOutcome(a *results.Arm, f armFacts) ArmOutcome {
	o := ArmOutcome{Name: a.Name, FirstOpenRequest: a.FirstOpenRequest, FirstRejectedRequest: a.FirstRejectedRequest,
		AttemptsPerRequest: a.AttemptsPerRequest, FirstCause: "none"}
	if a.Inconclusive() {
		o.Unobserved = strings.Join(a.Observation.Reasons, "; ")
	}
	o.Untrusted = f.targetDown
	for _, t := range a.Transitions {
		if t.To == "OPEN" {
			o.Opens++
		}
	}
	if c := a.FirstOpenCause(); c != "" {
		o.FirstCause = c
	}
	for _, p := range a.Phases {
		o.Phases = append(o.Phases, PhaseOutcome{Sent: p.Sent, Succeeded: p.Succeeded, Rejected: p.Rejected, Failed: p.Failed})
	}
	return o
}

// findings names the traps the run showed, with evidence and the setting that
// fixes each, and adds the static configuration findings of springconf.Lint.
func findings(run *results.Run, plans []armPlan, facts []armFacts) []results.Finding {
	var out []results.Finding
	seen := map[string]bool{}
	add := func(f results.Finding) {
		key := f.ID + "/" + f.Arm
		if seen[key] {
			return
		}
		seen[key] = true
		out = append(out, f)
	}
	for i := range run.Arms {
		a := &run.Arms[i]
		var p armPlan
		for _, q := range plans {
			if q.arm.Name == a.Name {
				p = q
			}
		}
		if p.file == nil {
			continue
		}
		for _, f := range measuredFindings(a, p, facts[i]) {
			add(f)
		}
		// The demo calls the gateway through Retry(CircuitBreaker(TimeLimiter(...))): both wrap the breaker.
		lo := springconf.LintOptions{BreakerName: p.settings.BreakerName, Rate: maxRate(p), RetryOnRejection: &p.settings.RetryOnRejection,
			AssumeRetry: true, AssumeTimeLimiter: true}
		call, _ := bestHalfOpenGateway(p)
		lo.Gateway = &call
		for _, f := range springconf.Lint(p.file, lo) {
			add(results.Finding{ID: f.ID, Severity: f.Severity, Arm: a.Name, Title: f.Message, Fix: f.Fix, Setting: f.Key,
				Evidence: []string{"configuration " + p.file.Name()}})
		}
	}
	return out
}

// addFleetComparisons compares each measured replica's first OPEN request with
// the prediction for a fleet. Which real replica got the balancer's first
// request is unknown, so a replica's first OPEN is held against the band that
// spans every simulated replica's (the lowest P5 to the highest P95); with
// round robin the replicas differ only by that offset. The fleet's refused share
// is the arm's "rejected share" comparison (the prediction's is the fleet's).
func addFleetComparisons(arm *results.Arm, pr sim.Prediction) {
	if arm.Fleet == nil || len(pr.Instances) == 0 {
		return
	}
	lo, hi, mean, share := math.Inf(1), math.Inf(-1), 0.0, 1.0
	for _, in := range pr.Instances {
		b := in.FirstOpenRequest
		lo, hi = min(lo, b.P5), max(hi, b.P95)
		mean += b.Mean / float64(len(pr.Instances))
		share = min(share, b.Share)
	}
	if math.IsInf(lo, 1) {
		return
	}
	for _, in := range arm.Fleet.Instances {
		c := results.Comparison{Metric: "replica " + in.Breaker + " first OPEN request", Unit: "requests",
			Measured: float64(in.FirstOpenRequest), PredictedP5: lo, PredictedP95: hi, PredictedP50: (lo + hi) / 2, PredictedMean: mean,
			Note: "band: every simulated replica's 5–95 % (which replica took the first request is not known)"}
		switch {
		case in.Observation != nil && in.Observation.Verdict == results.VerdictInconclusive:
			// A replica cbprobe could not observe well enough is no evidence either way.
			c.Inconclusive = true
			c.Note = "inconclusive: " + strings.Join(in.Observation.Reasons, "; ")
		case in.FirstOpenRequest == 0:
			c.OutsideBand = share > 0.95
			c.Note = fmt.Sprintf("never; %.0f%% of simulated runs opened every replica", 100*share)
		default:
			c.OutsideBand = c.Measured < lo-1e-9 || c.Measured > hi+1e-9
		}
		arm.Comparisons = append(arm.Comparisons, c)
	}
}

// bestHalfOpenGateway is the per-attempt outcome mix of the arm's gateway phase
// in which a half-open trial passes most often, and that pass probability: a
// trial "cannot pass" only when it cannot in any phase (an outage phase followed
// by a healthy one lets the breaker close).
func bestHalfOpenGateway(p armPlan) (breaker.CallOutcomeProbabilities, float64) {
	var best breaker.CallOutcomeProbabilities
	bestP := -1.0
	for _, b := range p.behaviors {
		probs := sim.OutcomeProbabilities(b, p.settings.Breaker, p.settings.Retry, p.settings.TimeLimiter.TimeoutDuration, p.sim.CallOverhead)
		if pp := breaker.HalfOpenPassProbability(p.settings.Breaker, probs.Call); pp > bestP {
			best, bestP = probs.Call, pp
		}
	}
	return best, bestP
}

func maxRate(p armPlan) float64 {
	r := 0.0
	for _, ph := range p.phases {
		r = max(r, ph.Rate)
	}
	return r
}

func measuredFindings(a *results.Arm, p armPlan, f armFacts) []results.Finding {
	var out []results.Finding
	s := p.settings
	c := s.Breaker
	tot := a.Totals()
	if a.AttemptsPerRequest > 1.05 {
		out = append(out, results.Finding{ID: "retry-amplification", Severity: "warning", Arm: a.Name,
			Title:    fmt.Sprintf("Each request made %.2f gateway calls: the breaker's window fills per attempt, not per request", a.AttemptsPerRequest),
			Detail:   fmt.Sprintf("With %d attempts the %d-call window holds about %.0f requests.", s.Retry.MaxAttempts, c.SlidingWindowSize, float64(c.SlidingWindowSize)/a.AttemptsPerRequest),
			Evidence: []string{fmt.Sprintf("%.3f attempts per request over %d requests", a.AttemptsPerRequest, tot.Sent)},
			Fix:      "size the window for attempts (sliding-window-size × attempts per request), or put the breaker outside the retry (circuit-breaker-aspect-order < retry-aspect-order)",
			Setting:  "resilience4j.circuitbreaker.configs.default.sliding-window-size"})
	}
	for _, t := range a.Transitions {
		if t.From != "CLOSED" || t.To != "OPEN" {
			continue
		}
		if ts := t.Evidence.TimeoutShare; ts != nil && *ts > 0 {
			out = append(out, results.Finding{ID: "timeouts-count-as-slow-failures", Severity: "warning", Arm: a.Name,
				Title:    "Calls cut by the TimeLimiter were recorded as failures and, being longer than the slow threshold, as slow calls",
				Detail:   fmt.Sprintf("A timeout after %s counts in both the failure rate and the slow-call rate (slow threshold %s), so the breaker's cause mixes the two.", s.TimeLimiter.TimeoutDuration, c.SlowCallDurationThreshold),
				Evidence: []string{t.Evidence.Note, fmt.Sprintf("failure rate %.1f%%, slow-call rate %.1f%% at the transition", t.Evidence.FailureRate, t.Evidence.SlowCallRate)},
				Fix:      "add java.util.concurrent.TimeoutException to ignore-exceptions to judge slowness alone, or raise timeout-duration above the slowest expected answer",
				Setting:  "resilience4j.timelimiter.configs.default.timeout-duration"})
		}
		break
	}
	hadPause := false
	for i, ph := range a.Phases {
		if ph.Rate == 0 && ph.Duration > 0 && i > 0 {
			hadPause = true
			continue
		}
		if hadPause && ph.Sent > 0 && c.SlidingWindowType == breaker.CountBased && ph.Share(ph.Rejected) > 0.5 {
			out = append(out, results.Finding{ID: "window-memory-after-pause", Severity: "warning", Arm: a.Name,
				Title:    fmt.Sprintf("After the pause, %.0f%% of phase %q was rejected: a COUNT_BASED window remembers its last %d outcomes through any pause", 100*ph.Share(ph.Rejected), ph.Name, c.SlidingWindowSize),
				Evidence: []string{fmt.Sprintf("phase %s: %d sent, %d rejected", ph.Name, ph.Sent, ph.Rejected)},
				Fix:      "use sliding-window-type: TIME_BASED when traffic pauses, or a wait-duration-in-open-state and half-open trial the gateway can pass",
				Setting:  "resilience4j.circuitbreaker.configs.default.sliding-window-type"})
			break
		}
	}
	if c.SlidingWindowType == breaker.TimeBased {
		maxBuffered := -1
		for _, t := range a.Transitions {
			maxBuffered = max(maxBuffered, t.Evidence.Buffered)
		}
		opened := false
		for _, t := range a.Transitions {
			opened = opened || t.To == "OPEN"
		}
		if !opened {
			out = append(out, results.Finding{ID: "time-based-min-calls-unreachable", Severity: "warning", Arm: a.Name,
				Title:    fmt.Sprintf("The TIME_BASED window never reached its minimum of %d calls in %d s, so it never judged the gateway", c.MinimumNumberOfCalls, c.SlidingWindowSize),
				Evidence: []string{fmt.Sprintf("peak rate %.1f req/s × %.2f attempts × %d s", maxRate(p), a.AttemptsPerRequest, c.SlidingWindowSize)},
				Fix:      "set minimum-number-of-calls to what the window can hold at your load (it is not capped by a TIME_BASED window's size)",
				Setting:  "resilience4j.circuitbreaker.configs.default.minimum-number-of-calls"})
		}
	}
	if n := f.gatewayRefused; n > 0 {
		out = append(out, runner.GatewayRefused(a.Name, n, fmt.Sprintf("pgsim attempt log: %d attempts with outcome rejected-4xx", n)))
	}
	if np := f.notPermitted; s.RetryOnRejection && tot.Rejected > 0 && np > tot.Rejected {
		out = append(out, results.Finding{ID: "retry-retries-rejections", Severity: "warning", Arm: a.Name,
			Title:    fmt.Sprintf("The retry retried calls the open breaker rejected: %d NOT_PERMITTED events for %d rejected requests", np, tot.Rejected),
			Detail:   "Each retried rejection is another NOT_PERMITTED call and, after the wait, can spend one of the half-open trial's permits, so the breaker recovers later.",
			Evidence: []string{fmt.Sprintf("%d NOT_PERMITTED events, %d requests answered CIRCUIT_OPEN", np, tot.Rejected)},
			Fix:      "add io.github.resilience4j.circuitbreaker.CallNotPermittedException to the retry's ignore-exceptions",
			Setting:  "resilience4j.retry.configs.default.ignore-exceptions"})
	}
	halfOpenFailed := 0
	for _, t := range a.Transitions {
		if t.From == "HALF_OPEN" && t.To == "OPEN" {
			halfOpenFailed++
		}
	}
	if _, pp := bestHalfOpenGateway(p); pp < springconf.NegligiblePassProbability && halfOpenFailed > 0 {
		out = append(out, results.Finding{ID: "half-open-trial-cannot-pass", Severity: "error", Arm: a.Name,
			Title:    fmt.Sprintf("No half-open trial of %d calls can pass while the gateway behaves so: the breaker cannot close", c.PermittedNumberOfCallsInHalfOpenState),
			Evidence: []string{fmt.Sprintf("%d HALF_OPEN→OPEN transitions; pass probability %.3g (below %g)", halfOpenFailed, pp, springconf.NegligiblePassProbability)},
			Fix:      "raise slow-call-duration-threshold above the gateway's normal latency, or the thresholds the trial must stay under",
			Setting:  "resilience4j.circuitbreaker.configs.default.slow-call-duration-threshold"})
	}
	for _, t := range a.Transitions {
		ev := t.Evidence
		if ev.ThresholdSource == results.ThresholdFromActuator && ev.FailureRateThreshold >= 0 && ev.FailureRateThreshold != float64(c.FailureRateThreshold) {
			out = append(out, results.Finding{ID: "live-threshold-differs", Severity: "error", Arm: a.Name,
				Title:    fmt.Sprintf("The live failure-rate threshold is %.0f%%, the configuration says %.0f%%: the settings did not apply to breaker %s", ev.FailureRateThreshold, c.FailureRateThreshold, a.Breaker),
				Evidence: []string{"actuator /actuator/circuitbreakers"},
				Fix:      "bracket Feign names in instance keys ([PgPaymentClient#requestPayment(String,PaymentRequest)]) or use configs.default",
				Setting:  "resilience4j.circuitbreaker.instances"})
			break
		}
	}
	if len(f.eventsLost) > 0 {
		out = append(out, results.Finding{ID: "events-lost", Severity: "warning", Arm: a.Name,
			Title: "Breaker events were lost to the service's event ring buffer between polls", Evidence: f.eventsLost[:1],
			Fix: "raise event-consumer-buffer-size or poll more often (--interval)", Setting: "resilience4j.circuitbreaker.configs.default.event-consumer-buffer-size"})
	}
	return out
}
