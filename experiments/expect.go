package experiments

import (
	"fmt"
	"github.com/cbprobe/cbprobe/breaker"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/cbprobe/cbprobe/results"
)

// The expectation grammar, documented in the README:
//
//	expectation := [ "arm[" NAME "]." ] check
//	check       := metric OP NUMBER | "cause" ( "=" | "!=" ) CAUSE
//	metric      := "first-open-request" | "first-rejected-request" | "opens" | "rejections"
//	             | "success" | "rejected" | "failed" | "sent" | "attempts-per-request"
//	             | latency | "time-to-close" | "time-in-open"
//	             | "half-open-trials" | "half-open-trials-passed"
//	             | "phase[" N "]." ( "success" | "rejected" | "failed" | "sent" | latency )
//	latency     := "latency-p50" | "latency-p90" | "latency-p95" | "latency-p99"
//	OP          := "<=" | ">=" | "==" | "!=" | "<" | ">"
//	NUMBER      := a decimal number, or for latency-* (milliseconds) and time-* (seconds)
//	               also a Go duration such as 1.5s or 250ms
//	CAUSE       := failure-rate | slow-call-rate | both | half-open-trial | forced | unknown | none
//
// Without an arm prefix an expectation must hold for every arm. "success", "rejected"
// and "failed" are shares in [0, 1] of the requests sent; "sent" is a count. Phases are
// numbered from 1. "cause" is the cause of the first CLOSED→OPEN transition ("none" when
// the breaker never opened). first-*-request is the 1-based request number; "never"
// compares as +infinity, so "first-rejected-request<=14" fails for a breaker that never
// rejected and "first-open-request>40" holds. Latency and recovery metrics are
// described in expect_latency.go.

// Expectation is one parsed --expect expression.
type Expectation struct {
	// Expr is the expression as the user wrote it.
	Expr string
	// Arm is the arm it applies to; "" means every arm.
	Arm string
	// Metric is the metric name, e.g. "first-rejected-request" or "cause".
	Metric string
	// Phase is the 1-based phase for phase[N].* metrics, 0 otherwise.
	Phase int
	// Op is the comparison operator.
	Op string
	// Number is the right-hand side of a numeric comparison.
	Number float64
	// Cause is the right-hand side of a cause comparison.
	Cause string
}

// ExpectationError reports a malformed expression; it maps to exit code 2.
type ExpectationError struct {
	Expr   string
	Reason string
}

func (e *ExpectationError) Error() string {
	return fmt.Sprintf("--expect %q: %s", e.Expr, e.Reason)
}

// ExitCode is 2: a bad expression is a usage error.
func (e *ExpectationError) ExitCode() int { return 2 }

// validCauses are the causes an expectation may name: breaker.OpenCauses and
// "none" (the breaker never went from CLOSED to OPEN).
func validCauses() []string {
	var cs []string
	for _, c := range breaker.OpenCauses() {
		cs = append(cs, string(c))
	}
	return append(cs, "none")
}

func numericMetrics() []string {
	return append([]string{"first-open-request", "first-rejected-request", "opens", "rejections",
		"success", "rejected", "failed", "sent", "attempts-per-request"}, append(latencyMetrics(), recoveryMetrics()...)...)
}

func phaseMetrics() []string {
	return append([]string{"success", "rejected", "failed", "sent"}, latencyMetrics()...)
}

// ParseExpectation parses one expression of the grammar above.
func ParseExpectation(expr string) (Expectation, error) {
	e := Expectation{Expr: expr}
	bad := func(format string, a ...any) (Expectation, error) {
		return Expectation{}, &ExpectationError{Expr: expr, Reason: fmt.Sprintf(format, a...)}
	}
	s := strings.TrimSpace(expr)
	if s == "" {
		return bad("empty expression")
	}
	if strings.HasPrefix(s, "arm[") {
		end := strings.Index(s, "]")
		if end < 0 {
			return bad("arm[ without a closing ]")
		}
		e.Arm = strings.TrimSpace(s[len("arm["):end])
		if e.Arm == "" {
			return bad("empty arm name in arm[]")
		}
		rest := s[end+1:]
		if !strings.HasPrefix(rest, ".") {
			return bad("expected '.' after arm[%s]", e.Arm)
		}
		s = rest[1:]
	}
	opAt, op := findOperator(s)
	if opAt < 0 {
		return bad("no comparison operator (one of <=, >=, ==, !=, <, >, =)")
	}
	left := strings.TrimSpace(s[:opAt])
	right := strings.TrimSpace(s[opAt+len(op):])
	if right == "" {
		return bad("nothing after %q", op)
	}
	if left == "cause" {
		switch op {
		case "=", "==":
			e.Op = "=="
		case "!=":
			e.Op = "!="
		default:
			return bad("cause can only be compared with = or !=")
		}
		for _, c := range validCauses() {
			if c == right {
				e.Metric, e.Cause = "cause", right
				return e, nil
			}
		}
		return bad("unknown cause %q (want one of %s)", right, strings.Join(validCauses(), ", "))
	}
	if op == "=" {
		op = "=="
	}
	e.Op = op
	if strings.HasPrefix(left, "phase[") {
		end := strings.Index(left, "]")
		if end < 0 {
			return bad("phase[ without a closing ]")
		}
		p, err := strconv.Atoi(left[len("phase["):end])
		if err != nil || p < 1 {
			return bad("phase index %q is not a whole number >= 1", left[len("phase["):end])
		}
		e.Phase = p
		sub := strings.TrimPrefix(left[end+1:], ".")
		if sub == left[end+1:] {
			return bad("expected '.' after phase[%d]", p)
		}
		if !contains(phaseMetrics(), sub) {
			return bad("unknown phase metric %q (want one of %s)", sub, strings.Join(phaseMetrics(), ", "))
		}
		e.Metric = sub
	} else {
		if !contains(numericMetrics(), left) {
			return bad("unknown metric %q (want one of cause, phase[N].*, %s)", left, strings.Join(numericMetrics(), ", "))
		}
		e.Metric = left
	}
	n, err := parseNumber(e.Metric, right)
	if err != nil {
		return bad("%v", err)
	}
	e.Number = n
	return e, nil
}

// ParseExpectations parses every expression and stops at the first bad one.
func ParseExpectations(exprs []string) ([]Expectation, error) {
	out := make([]Expectation, 0, len(exprs))
	for _, x := range exprs {
		e, err := ParseExpectation(x)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

func findOperator(s string) (int, string) {
	for i := 0; i < len(s); i++ {
		for _, op := range []string{"<=", ">=", "==", "!="} {
			if strings.HasPrefix(s[i:], op) {
				return i, op
			}
		}
		switch s[i] {
		case '<', '>', '=':
			return i, s[i : i+1]
		}
	}
	return -1, ""
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// PhaseOutcome counts one phase's requests for expectation checks.
type PhaseOutcome struct {
	Sent, Succeeded, Rejected, Failed int
	// Latency holds the phase's latency percentiles in milliseconds of service time.
	Latency results.LatencyStats
}

// ArmOutcome is what expectations are checked against for one arm.
type ArmOutcome struct {
	// Name is the arm's name.
	Name string
	// FirstOpenRequest and FirstRejectedRequest are 1-based request numbers, 0 for never.
	FirstOpenRequest, FirstRejectedRequest int
	// Opens counts CLOSED→OPEN and HALF_OPEN→OPEN transitions.
	Opens int
	// FirstCause is the cause of the first CLOSED→OPEN transition, "none" when it never opened.
	FirstCause string
	// AttemptsPerRequest is gateway attempts divided by payment requests.
	AttemptsPerRequest float64
	// Phases are the per-phase counts, in order.
	Phases []PhaseOutcome
	// Unobserved, when set, says why the breaker's transitions could not be
	// observed: expectations on them (first-open-request, opens, cause) are
	// inconclusive, those on the service's answers still decide.
	Unobserved string
	// Untrusted, when set, says why no measurement of the arm can be trusted
	// (the target stopped answering): every expectation is inconclusive.
	Untrusted string
	// Latency holds the arm's latency percentiles in milliseconds of service time.
	Latency results.LatencyStats
	// Transitions are the breaker's observed state changes, oldest first
	// (wall-clock times), for the recovery metrics.
	Transitions []results.Transition
	// ObservedUntil is the last time the breaker's state was read; zero when
	// unknown. Recovery metrics count time up to it.
	ObservedUntil time.Time
	// Speed is the run's --speed: a wall-clock duration times Speed is service
	// time (0 means 1).
	Speed float64
}

// dependsOnTransitions reports whether metric is read from the breaker's
// observed transitions rather than from the service's answers.
func dependsOnTransitions(metric string) bool {
	switch metric {
	case "first-open-request", "opens", "cause":
		return true
	}
	return contains(recoveryMetrics(), metric)
}

func (a ArmOutcome) total() PhaseOutcome {
	var t PhaseOutcome
	for _, p := range a.Phases {
		t.Sent += p.Sent
		t.Succeeded += p.Succeeded
		t.Rejected += p.Rejected
		t.Failed += p.Failed
	}
	return t
}

func share(n, of int) float64 {
	if of == 0 {
		return 0
	}
	return float64(n) / float64(of)
}

func phaseValue(p PhaseOutcome, metric string) float64 {
	switch metric {
	case "success":
		return share(p.Succeeded, p.Sent)
	case "rejected":
		return share(p.Rejected, p.Sent)
	case "failed":
		return share(p.Failed, p.Sent)
	}
	return float64(p.Sent)
}

// Verdict is the result of checking one expectation against one arm.
type Verdict struct {
	// Expectation is the expression checked.
	Expectation Expectation
	// Arm is the arm it was checked on.
	Arm string
	// OK is true when the expectation held.
	OK bool
	// Got is the measured value as text.
	Got string
	// Reason explains a verdict that could not be computed (missing arm or
	// phase, or evidence not observed).
	Reason string
	// Inconclusive is true when the evidence the expectation depends on was
	// not observed (OK is then false; the expectation neither held nor failed).
	Inconclusive bool
}

// Check evaluates e on every arm it applies to. An expectation naming an arm that does
// not exist, or a phase beyond the arm's phases, fails with a reason.
func Check(e Expectation, arms []ArmOutcome) []Verdict {
	var out []Verdict
	matched := false
	for _, a := range arms {
		if e.Arm != "" && e.Arm != a.Name {
			continue
		}
		matched = true
		out = append(out, checkArm(e, a))
	}
	if !matched {
		names := make([]string, len(arms))
		for i, a := range arms {
			names[i] = a.Name
		}
		out = append(out, Verdict{Expectation: e, Arm: e.Arm, Reason: fmt.Sprintf("no arm named %q (arms: %s)", e.Arm, strings.Join(names, ", "))})
	}
	return out
}

func checkArm(e Expectation, a ArmOutcome) Verdict {
	v := checkValue(e, a)
	switch {
	case a.Untrusted != "":
		v.OK, v.Inconclusive, v.Reason = false, true, "inconclusive: "+a.Untrusted
	case a.Unobserved != "" && dependsOnTransitions(e.Metric):
		v.OK, v.Inconclusive, v.Reason = false, true, "inconclusive: "+a.Unobserved
	case e.Metric == "attempts-per-request" && a.AttemptsPerRequest == 0:
		// 0 is "not measured": no request's attempts reached the gateway's log
		// under its order id (a proxy in front of the gateway keys them by the
		// X-Request-Id or traceparent the service sends).
		v.OK, v.Inconclusive, v.Reason = false, true,
			"inconclusive: gateway attempts were not measured (no attempt reached the gateway's log under its order id; with --gateway fault the service must send X-Request-Id or traceparent)"
	}
	return v
}

func checkValue(e Expectation, a ArmOutcome) Verdict {
	v := Verdict{Expectation: e, Arm: a.Name}
	if isLatencyMetric(e.Metric) {
		return checkLatency(e, a)
	}
	if contains(recoveryMetrics(), e.Metric) {
		return checkRecovery(e, a)
	}
	if e.Metric == "cause" {
		v.Got = a.FirstCause
		v.OK = (a.FirstCause == e.Cause) == (e.Op == "==")
		return v
	}
	var got float64
	switch {
	case e.Phase > 0:
		if e.Phase > len(a.Phases) {
			v.Reason = fmt.Sprintf("arm %s has %d phases, not %d", a.Name, len(a.Phases), e.Phase)
			return v
		}
		got = phaseValue(a.Phases[e.Phase-1], e.Metric)
	case e.Metric == "first-open-request":
		got = requestNumber(a.FirstOpenRequest)
	case e.Metric == "first-rejected-request":
		got = requestNumber(a.FirstRejectedRequest)
	case e.Metric == "opens":
		got = float64(a.Opens)
	case e.Metric == "rejections":
		got = float64(a.total().Rejected)
	case e.Metric == "attempts-per-request":
		got = a.AttemptsPerRequest
	default:
		got = phaseValue(a.total(), e.Metric)
	}
	v.Got = strconv.FormatFloat(got, 'g', 6, 64)
	if math.IsInf(got, 1) {
		v.Got = "never"
	}
	v.OK = compare(got, e.Op, e.Number)
	return v
}

// requestNumber maps "never happened" (0) to +Inf for comparisons.
func requestNumber(n int) float64 {
	if n <= 0 {
		return math.Inf(1)
	}
	return float64(n)
}

func compare(got float64, op string, want float64) bool {
	switch op {
	case "<=":
		return got <= want
	case ">=":
		return got >= want
	case "<":
		return got < want
	case ">":
		return got > want
	case "!=":
		return got != want
	}
	return got == want
}
