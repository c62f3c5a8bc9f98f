// Package results defines cbprobe's run record (run.json, schema "cbprobe.run/v1")
// and writes the run directory: run.json, requests.csv, samples.csv, events.jsonl,
// summary.md, junit.xml and a self-contained report.html. It also renders the
// terminal summary. It knows only the run record: it imports no other cbprobe
// package, so experiments, attack and the commands fill its types.
package results

import (
	"bytes"
	"time"
)

// Schema is the version tag written in every run.json. Fields may be added to
// the record in later versions of the same schema; none is renamed.
const Schema = "cbprobe.run/v1"

// Unknown marks a rate or threshold that was not observed (Resilience4j reports
// -1 for a rate below the minimum number of calls, too).
const Unknown = -1.0

// Run is the whole record of one run: what was asked, what was measured per
// arm, the findings and the verdicts. It is written as run.json.
type Run struct {
	// Schema is always Schema ("cbprobe.run/v1"); Writer sets it when empty.
	Schema string `json:"schema"`
	// Experiment names what ran: "slow-call", "window-type", "retry", "attack", or a spec name.
	Experiment string `json:"experiment"`
	// Description is one line saying what the run checks.
	Description string `json:"description,omitempty"`
	// Tool is the cbprobe version that wrote the record.
	Tool string `json:"tool,omitempty"`
	// Target is the base URL of the service under test ("" for the embedded demo).
	Target string `json:"target,omitempty"`
	// Started and Ended are the wall-clock start and end of the run (UTC).
	Started time.Time `json:"started,omitzero"`
	Ended   time.Time `json:"ended,omitzero"`
	// Complete is true only once the run finished and every file was written.
	Complete bool `json:"complete"`
	// Interrupted is true when the run was cut short (Ctrl-C); the files hold what was measured until then.
	Interrupted bool `json:"interrupted,omitempty"`
	// Reason says why the run is not complete (empty for a complete run).
	Reason string `json:"reason,omitempty"`
	// Parameters are the run-wide settings as given (flags, spec values), for the record.
	Parameters map[string]any `json:"parameters,omitempty"`
	// Arms are the measured variants, in the order they ran or are shown.
	Arms []Arm `json:"arms"`
	// Findings are the named traps and anomalies seen in the run.
	Findings []Finding `json:"findings"`
	// Expectations are the asserted properties with their verdicts.
	Expectations []Expectation `json:"expectations"`
	// Warnings are problems with the measurement itself (lost events, backlog, dropped requests).
	Warnings []string `json:"warnings,omitempty"`
	// FailOn is the lowest finding severity that fails the run ("warning" or
	// "error", from --fail-on); "" when findings never change the verdict.
	// See Run.FailingFindings.
	FailOn string `json:"failOn,omitempty"`
	// Shard says which share of a plan split over several load generators
	// this run sent (--shard i/N); nil for a run that sent the whole plan.
	Shard *Shard `json:"shard,omitempty"`
	// Merged lists the shard runs `cbprobe report merge` built this run from;
	// nil for a run that was not merged.
	Merged *Merged `json:"merged,omitempty"`
	// Verdict is the run's one verdict, the same in every file: VerdictPassed,
	// VerdictFailed, VerdictInconclusive, or VerdictIncomplete for a run that
	// did not finish. Writer sets it (see Run.Decide).
	Verdict string `json:"verdict,omitempty"`
}

// Passed reports whether every expectation held and nothing was inconclusive
// (true when there are no expectations and every arm's evidence agreed).
func (r *Run) Passed() bool { return r.Decide() == VerdictPassed }

// Arm returns the arm named name, or nil.
func (r *Run) Arm(name string) *Arm {
	for i := range r.Arms {
		if r.Arms[i].Name == name {
			return &r.Arms[i]
		}
	}
	return nil
}

// Arm is one measured variant of an experiment (for example "COUNT_BASED" and
// "TIME_BASED"), with its traffic, transitions and analysis.
type Arm struct {
	// Name identifies the arm; it is the arm column of requests.csv and samples.csv.
	Name string `json:"name"`
	// Description says what distinguishes this arm.
	Description string `json:"description,omitempty"`
	// Breaker is the circuit breaker instance observed ("" when none was polled).
	Breaker string `json:"breaker,omitempty"`
	// Parameters are the arm's own settings (breaker config, gateway behaviour).
	Parameters map[string]any `json:"parameters,omitempty"`
	// Thresholds are the failure and slow-call rate thresholds in percent the
	// charts draw; Unknown (-1) when not known.
	Thresholds Thresholds `json:"thresholds"`
	// Phases are the traffic phases with their request counts.
	Phases []PhaseStats `json:"phases"`
	// Transitions are the breaker state changes, oldest first.
	Transitions []Transition `json:"transitions"`
	// FirstOpenRequest is the 1-based sequence number of the request in flight
	// when the breaker first went from CLOSED to OPEN (the last one sent at or
	// before the transition; see Arm.MarkRequests); 0 if it never opened.
	FirstOpenRequest int `json:"firstOpenRequest"`
	// FirstRejectedRequest is the 1-based sequence number of the first request
	// rejected by the breaker; 0 if none was.
	FirstRejectedRequest int `json:"firstRejectedRequest"`
	// AttemptsPerRequest is the mean number of gateway calls per request
	// (1 without retries); 0 when not measured.
	AttemptsPerRequest float64 `json:"attemptsPerRequest"`
	// Latency holds whole-arm latency percentiles in milliseconds.
	Latency LatencyStats `json:"latency,omitzero"`
	// Comparisons set theory (prediction) against measurement.
	Comparisons []Comparison `json:"comparisons,omitempty"`
	// Notes are free-form remarks shown under the arm.
	Notes []string `json:"notes,omitempty"`
	// Observation is the reconciliation of the arm's evidence (the service's
	// answers, the breaker's counters, state samples and events, the polling
	// record); nil when the breaker was not polled.
	Observation *Observation `json:"observation,omitempty"`
	// Fleet is the view over every replica when the breaker ran on several
	// instances (each with its own breaker); nil for a single service.
	Fleet *Fleet `json:"fleet,omitempty"`
	// Service records how cbprobe started and stopped the user's service for
	// this arm (--service); nil when it did not start one.
	Service *Service `json:"service,omitempty"`
}

// Totals sums the arm's phases.
func (a *Arm) Totals() PhaseStats {
	t := PhaseStats{Name: "total"}
	for _, p := range a.Phases {
		t.Planned += p.Planned
		t.Sent += p.Sent
		t.Succeeded += p.Succeeded
		t.Rejected += p.Rejected
		t.Failed += p.Failed
		t.Dropped += p.Dropped
		t.Late += p.Late
		t.Duration += p.Duration
	}
	return t
}

// Phase returns the phase named name, or nil.
func (a *Arm) Phase(name string) *PhaseStats {
	for i := range a.Phases {
		if a.Phases[i].Name == name {
			return &a.Phases[i]
		}
	}
	return nil
}

// Add counts one finished request into the phase named r.Phase (appending the
// phase when it is new) and lowers FirstRejectedRequest when r was rejected.
// It is not safe for concurrent use.
func (a *Arm) Add(r Request) {
	p := a.Phase(r.Phase)
	if p == nil {
		a.Phases = append(a.Phases, PhaseStats{Name: r.Phase})
		p = &a.Phases[len(a.Phases)-1]
	}
	p.Sent++
	switch r.Outcome {
	case OutcomeSucceeded:
		p.Succeeded++
	case OutcomeRejected:
		p.Rejected++
		if r.Seq > 0 && (a.FirstRejectedRequest == 0 || r.Seq < a.FirstRejectedRequest) {
			a.FirstRejectedRequest = r.Seq
		}
	default:
		p.Failed++
	}
}

// Thresholds are breaker rate thresholds in percent; Unknown (-1) when not known.
type Thresholds struct {
	// FailureRate is failure-rate-threshold in percent.
	FailureRate float64 `json:"failureRate"`
	// SlowCallRate is slow-call-rate-threshold in percent.
	SlowCallRate float64 `json:"slowCallRate"`
}

// PhaseStats counts the requests of one traffic phase of an arm.
type PhaseStats struct {
	// Name is the phase name ("phase1", "burst", ...).
	Name string `json:"name"`
	// Rate is the intended rate in requests per second (0 = pause; 0 also for sequential traffic).
	Rate float64 `json:"rate,omitempty"`
	// Duration is the planned length of the phase (JSON: nanoseconds).
	Duration time.Duration `json:"duration,omitempty"`
	// Planned is how many requests the phase should send (0 when unknown).
	Planned int `json:"planned,omitempty"`
	// Sent is how many requests were sent and finished.
	Sent int `json:"sent"`
	// Succeeded counts 2xx answers.
	Succeeded int `json:"succeeded"`
	// Rejected counts answers refused by the open breaker (CIRCUIT_OPEN).
	Rejected int `json:"rejected"`
	// Failed counts every other answer or transport error.
	Failed int `json:"failed"`
	// Dropped counts planned requests never sent (the load generator could not keep up or the run ended).
	Dropped int `json:"dropped"`
	// Late counts requests sent noticeably after their intended time (see the attack package).
	Late int `json:"late"`
	// Latency holds the phase's latency percentiles in milliseconds, over
	// every request it sent (rejected and failed ones included); zero when
	// none was sent or the record predates it.
	Latency LatencyStats `json:"latency,omitzero"`
}

// Share returns n as a fraction of Sent (0 when nothing was sent).
func (p PhaseStats) Share(n int) float64 {
	if p.Sent == 0 {
		return 0
	}
	return float64(n) / float64(p.Sent)
}

// LatencyStats are latency percentiles in milliseconds (zero when unmeasured).
type LatencyStats struct {
	// P50, P90, P95 and P99 are nearest-rank percentiles in milliseconds
	// (P90 is absent from records written before it was added).
	P50 float64 `json:"p50"`
	P90 float64 `json:"p90,omitempty"`
	P95 float64 `json:"p95"`
	P99 float64 `json:"p99"`
	// Max is the slowest request in milliseconds.
	Max float64 `json:"max"`
	// Mean is the mean latency in milliseconds.
	Mean float64 `json:"mean"`
}

// Transition is one breaker state change with its labelled cause.
type Transition struct {
	// At is when the change was observed (event time when from an event, poll time otherwise).
	At time.Time `json:"at"`
	// Breaker is the breaker instance name.
	Breaker string `json:"breaker,omitempty"`
	// From and To are Resilience4j state names: CLOSED, OPEN, HALF_OPEN, FORCED_OPEN, DISABLED, METRICS_ONLY.
	From string `json:"from"`
	To   string `json:"to"`
	// Cause labels why the breaker went OPEN, a breaker.OpenCause value:
	// "failure-rate", "slow-call-rate", "both", "half-open-trial", "forced",
	// "unknown"; empty for other transitions. (Kept a string so that results
	// imports no other cbprobe package; collect and sim write the typed labels.)
	Cause string `json:"cause,omitempty"`
	// Evidence is what the cause was read from.
	Evidence Evidence `json:"evidence"`
	// Uncertainty says what weakens the label (lost events, no sample in OPEN...); empty when firm.
	Uncertainty string `json:"uncertainty,omitempty"`
	// Request is the 1-based sequence number of the request the transition is
	// attributed to (0 unknown): for the first CLOSED→OPEN it equals
	// Arm.FirstOpenRequest; see Arm.MarkRequests for the one definition.
	Request int `json:"request,omitempty"`
	// Inferred is true when no sample or event showed this transition: it was
	// deduced from the states around it, the breaker's counters or the
	// service's refusals (Uncertainty says from what).
	Inferred bool `json:"inferred,omitempty"`
}

// Evidence backs a transition's cause. Rates and thresholds are percent;
// Unknown (-1) when not observed.
type Evidence struct {
	// Source is where the rates were read: "events", "sample", "config", "none".
	Source string `json:"source,omitempty"`
	// FailureRate and SlowCallRate are the rates at the transition.
	FailureRate  float64 `json:"failureRate"`
	SlowCallRate float64 `json:"slowCallRate"`
	// FailureRateThreshold and SlowCallRateThreshold are the thresholds in force.
	FailureRateThreshold  float64 `json:"failureRateThreshold"`
	SlowCallRateThreshold float64 `json:"slowCallRateThreshold"`
	// Buffered, Failed and Slow are the window's call counts when known (-1 unknown).
	Buffered int `json:"buffered"`
	Failed   int `json:"failed"`
	Slow     int `json:"slow"`
	// Events lists the breaker events that support the label, e.g. "SLOW_CALL_RATE_EXCEEDED 62.5%".
	Events []string `json:"events,omitempty"`
	// TimeoutShare is the share in [0, 1] of the window's failures that were
	// TimeLimiter timeouts; nil when not measured.
	TimeoutShare *float64 `json:"timeoutShare,omitempty"`
	// ThresholdSource is where the thresholds came from: ThresholdFromActuator (the
	// running service), a configuration's name, or "" (unknown).
	ThresholdSource string `json:"thresholdSource,omitempty"`
	// Note is a free-form remark.
	Note string `json:"note,omitempty"`
}

// ThresholdFromActuator is Evidence.ThresholdSource for thresholds the running
// service reported.
const ThresholdFromActuator = "actuator"

// UnknownEvidence returns Evidence with every number Unknown.
func UnknownEvidence() Evidence {
	return Evidence{Source: "none", FailureRate: Unknown, SlowCallRate: Unknown,
		FailureRateThreshold: Unknown, SlowCallRateThreshold: Unknown, Buffered: -1, Failed: -1, Slow: -1}
}

// Finding is a named trap or anomaly seen in a run, with the setting that fixes it.
type Finding struct {
	// ID is a stable kebab-case identifier, e.g. "timeout-counted-as-slow".
	ID string `json:"id"`
	// Severity is "error", "warning" or "info".
	Severity string `json:"severity"`
	// Arm is the arm the finding is about ("" for the whole run).
	Arm string `json:"arm,omitempty"`
	// Title is one line.
	Title string `json:"title"`
	// Detail explains the finding in a few sentences.
	Detail string `json:"detail,omitempty"`
	// Evidence lists the measurements that show it.
	Evidence []string `json:"evidence,omitempty"`
	// Fix names the setting and value that fix it.
	Fix string `json:"fix,omitempty"`
	// Setting is the configuration key the fix is about, e.g. "resilience4j.circuitbreaker.configs.default.slow-call-duration-threshold".
	Setting string `json:"setting,omitempty"`
}

// Expectation is one asserted property and its verdict.
type Expectation struct {
	// Expr is the expectation as written, e.g. "arm[1000ms].firstOpen.cause == slow-call-rate".
	Expr string `json:"expr"`
	// OK is the verdict.
	OK bool `json:"ok"`
	// Arm is the arm it applies to ("" for the whole run).
	Arm string `json:"arm,omitempty"`
	// Got is the measured value as text.
	Got string `json:"got,omitempty"`
	// Want is the expected value or range as text.
	Want string `json:"want,omitempty"`
	// Message explains a failure (or why the value could not be measured).
	Message string `json:"message,omitempty"`
	// Inconclusive is true when the evidence the expectation depends on was
	// not observed (OK is then false, and the expectation is neither passed
	// nor failed); Message says what was missing.
	Inconclusive bool `json:"inconclusive,omitempty"`
}

// Comparison sets one metric's measured value against its prediction band.
type Comparison struct {
	// Metric names the quantity, e.g. "first OPEN request" or "phase3 rejected share".
	Metric string `json:"metric"`
	// Unit of every number in the row: "requests", "%", "ms", "s", "" (a count).
	Unit string `json:"unit,omitempty"`
	// Measured is what this run saw.
	Measured float64 `json:"measured"`
	// PredictedP5, PredictedP50, PredictedP95 and PredictedMean describe the
	// predicted distribution (for example over simulated seeds).
	PredictedP5   float64 `json:"predictedP5"`
	PredictedP50  float64 `json:"predictedP50"`
	PredictedP95  float64 `json:"predictedP95"`
	PredictedMean float64 `json:"predictedMean"`
	// Reported is the field report's number when it has one.
	Reported *float64 `json:"reported,omitempty"`
	// OutsideBand is true when Measured lies outside [PredictedP5, PredictedP95].
	OutsideBand bool `json:"outsideBand"`
	// Inconclusive is true when the measured value cannot be compared (for
	// example the load generator fell behind and the value depends on timing);
	// OutsideBand is then false and Note says why.
	Inconclusive bool `json:"inconclusive,omitempty"`
	// Note explains a difference.
	Note string `json:"note,omitempty"`
}

// Outcome classifies a finished request.
type Outcome string

// Request outcomes.
const (
	// OutcomeSucceeded is a 2xx answer.
	OutcomeSucceeded Outcome = "succeeded"
	// OutcomeRejected is an answer refused by an open breaker (body carries "CIRCUIT_OPEN").
	OutcomeRejected Outcome = "rejected"
	// OutcomeFailed is every other answer and every transport error.
	OutcomeFailed Outcome = "failed"
)

// RejectionCode is the error code the reference service returns when its breaker refuses a call.
const RejectionCode = "CIRCUIT_OPEN"

// Classify labels a request by its HTTP status and answer body: 2xx succeeded;
// a non-2xx answer whose body contains RejectionCode ("CIRCUIT_OPEN") rejected;
// everything else, including status 0 (no answer), failed.
func Classify(status int, body []byte) Outcome {
	switch {
	case status >= 200 && status < 300:
		return OutcomeSucceeded
	case status != 0 && bytes.Contains(body, []byte(RejectionCode)):
		return OutcomeRejected
	default:
		return OutcomeFailed
	}
}

// Request is one row of requests.csv: one request (flow run) of an arm.
type Request struct {
	// Arm is the arm the request belongs to.
	Arm string `json:"arm"`
	// Seq is the 1-based request number in intended-send order.
	Seq int `json:"seq"`
	// Phase is the traffic phase's name.
	Phase string `json:"phase"`
	// User is the sequential user (1-based), 0 in open-model traffic.
	User int `json:"user"`
	// Intended is when the request should have been sent.
	Intended time.Time `json:"intended"`
	// Sent is when it was sent.
	Sent time.Time `json:"sent"`
	// Latency is the whole request (every step of its flow); CSV column latency_ms.
	Latency time.Duration `json:"latency"`
	// Status is the HTTP status of the last step, 0 without an answer.
	Status int `json:"status"`
	// Outcome is succeeded, rejected or failed (see Classify).
	Outcome Outcome `json:"outcome"`
	// Error is the failing step's error, empty on success.
	Error string `json:"error,omitempty"`
}

// Sample is one row of samples.csv: one breaker as read by one poll. Rates and
// thresholds are percent; every value the source did not report is Unknown
// (-1), never NaN (a breaker below its minimum number of calls reports -1
// rates itself, which reads the same: not judged). Time is when the values
// were read at the service (the scrape time for a Prometheus server).
type Sample struct {
	// Arm is the arm the poll belongs to.
	Arm string `json:"arm"`
	// Time is when the values were read.
	Time time.Time `json:"time"`
	// Source names the metric source, e.g. "actuator http://127.0.0.1:8080/actuator".
	Source string `json:"source,omitempty"`
	// Breaker is the breaker name ("name@instance" for replicas).
	Breaker string `json:"breaker"`
	// State is the Resilience4j state name.
	State string `json:"state"`
	// FailureRate and SlowCallRate are the window's rates in percent.
	FailureRate  float64 `json:"failureRate"`
	SlowCallRate float64 `json:"slowCallRate"`
	// FailureRateThreshold and SlowCallRateThreshold are the configured thresholds in percent.
	FailureRateThreshold  float64 `json:"failureRateThreshold"`
	SlowCallRateThreshold float64 `json:"slowCallRateThreshold"`
	// Buffered, Failed, Slow and SlowFailed count the calls in the window.
	Buffered   float64 `json:"buffered"`
	Failed     float64 `json:"failed"`
	Slow       float64 `json:"slow"`
	SlowFailed float64 `json:"slowFailed"`
	// NotPermitted is the actuator's notPermittedCalls (calls refused).
	NotPermitted float64 `json:"notPermitted"`
}

// Event is one line of events.jsonl: a breaker event, a phase change, a poll
// error or any other timestamped note about the run.
type Event struct {
	// Time is when it happened (the service's clock for breaker events).
	Time time.Time `json:"time"`
	// Arm is the arm it belongs to ("" for the run).
	Arm string `json:"arm,omitempty"`
	// Kind groups events: "circuitbreaker", "timelimiter", "retry" (the service's
	// own events, per-call ones included), "phase", "poll-error", "poll-gap",
	// "lost-events", "target", "note". Older runs wrote "breaker" for every
	// service event.
	Kind string `json:"kind"`
	// Breaker is the breaker (or limiter, retry) name.
	Breaker string `json:"breaker,omitempty"`
	// Type is the Resilience4j event type for service events ("STATE_TRANSITION", "ERROR", ...).
	Type string `json:"type,omitempty"`
	// From and To are the states of a STATE_TRANSITION.
	From string `json:"from,omitempty"`
	To   string `json:"to,omitempty"`
	// FailureRate and SlowCallRate are percent, for *_RATE_EXCEEDED events.
	FailureRate  float64 `json:"failureRate,omitempty"`
	SlowCallRate float64 `json:"slowCallRate,omitempty"`
	// Message is free text: the error message of an ERROR event, a note.
	Message string `json:"message,omitempty"`
}
