package conformance

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/cbprobe/cbprobe/breaker"
)

// Tolerance is the largest difference allowed between two rates.
const Tolerance = 1e-4

// Mismatch is one field of one step where the model differs from the library.
type Mismatch struct {
	// File is the vector file, Line its line, Step the 1-based step number.
	File string
	Line int
	Step int
	// Op describes the step, e.g. "call failure 20ms".
	Op string
	// Field is the expect field, e.g. "state" or "metrics.failed_calls".
	Field string
	// Want is what the library did, Got what the model did.
	Want, Got string
}

// String returns "file:line: step N (op): field: want W, got G".
func (m Mismatch) String() string {
	return fmt.Sprintf("%s:%d: step %d (%s): %s: want %s, got %s", m.File, m.Line, m.Step, m.Op, m.Field, m.Want, m.Got)
}

// StepResult is what the model did at one step.
type StepResult struct {
	// Step is the 1-based step number; AtMS its time after t0 in ms.
	Step int
	AtMS int64
	// Op describes the step.
	Op string
	// State is the state after the step.
	State breaker.State
	// Permitted is the acquire result for call and acquire, nil otherwise.
	Permitted *bool
	// Metrics is the model's metrics after the step.
	Metrics breaker.Metrics
	// Events are the events published during the step ("TYPE" or "STATE_TRANSITION X_TO_Y").
	Events []string
	// Error is "IllegalStateTransitionException" when a transition was refused.
	Error string
}

// Result is the replay of one vector.
type Result struct {
	// Vector is the vector replayed.
	Vector *Vector
	// Steps holds what the model did at each step.
	Steps []StepResult
	// Mismatches lists every field that differs, in step order.
	Mismatches []Mismatch
}

// OK reports whether every step matched.
func (r *Result) OK() bool { return len(r.Mismatches) == 0 }

func (s *Step) describe() string {
	switch s.Op {
	case "call", "record":
		d := fmt.Sprintf("%s %s %dms", s.Op, s.Outcome, *s.DurationMS)
		if s.ID != "" {
			d = fmt.Sprintf("record %s %s %dms", s.ID, s.Outcome, *s.DurationMS)
		}
		return d
	case "acquire":
		return "acquire " + s.ID
	case "transition":
		return "transition " + s.To
	}
	return s.Op
}

// Run replays v on a fresh breaker driven by a virtual clock that starts at
// Epoch(); before each step the clock moves to t0 + at_ms, firing due timers.
func Run(v *Vector) (*Result, error) {
	cfg, err := v.Config.BreakerConfig()
	if err != nil {
		return nil, &Error{File: v.File, Field: "config", Msg: err.Error(), Err: err}
	}
	t0 := Epoch()
	clk := breaker.NewVirtualClock(t0)
	cb, err := breaker.New(v.Name, cfg, breaker.WithClock(clk))
	if err != nil {
		return nil, &Error{File: v.File, Field: "config", Msg: err.Error(), Err: err}
	}
	var events []string
	cb.Subscribe(func(e breaker.Event) {
		if e.Type == breaker.EventStateTransition {
			events = append(events, "STATE_TRANSITION "+e.Transition())
			return
		}
		events = append(events, e.Type.String())
	})
	res := &Result{Vector: v, Steps: make([]StepResult, 0, len(v.Steps))}
	failure := errors.New("RuntimeException")
	record := func(s *Step) {
		d := time.Duration(*s.DurationMS) * time.Millisecond
		switch s.Outcome {
		case "success":
			cb.OnSuccess(d)
		case "failure":
			cb.OnError(d, failure)
		default:
			cb.OnError(d, &IgnoredError{})
		}
	}
	for i := range v.Steps {
		s := &v.Steps[i]
		events = nil
		clk.AdvanceTo(t0.Add(time.Duration(s.AtMS) * time.Millisecond))
		sr := StepResult{Step: i + 1, AtMS: s.AtMS, Op: s.describe()}
		switch s.Op {
		case "call":
			ok := cb.TryAcquirePermission()
			sr.Permitted = &ok
			if ok {
				record(s)
			}
		case "acquire":
			ok := cb.TryAcquirePermission()
			sr.Permitted = &ok
		case "record":
			record(s)
		case "transition":
			to, _ := breaker.ParseState(s.To) // checked by Decode
			if err := cb.TransitionTo(to); err != nil {
				var ie *breaker.IllegalTransitionError
				if !errors.As(err, &ie) {
					return nil, &Error{File: v.File, Line: s.Line, Step: i + 1, Field: "to", Msg: err.Error(), Err: err}
				}
				sr.Error = "IllegalStateTransitionException"
			}
		case "reset":
			cb.Reset()
		}
		sr.State, sr.Metrics = cb.Snapshot()
		sr.Events = events
		res.Mismatches = append(res.Mismatches, compare(v, i, &sr)...)
		res.Steps = append(res.Steps, sr)
	}
	return res, nil
}

func compare(v *Vector, i int, got *StepResult) []Mismatch {
	s := &v.Steps[i]
	e := &s.Expect
	var out []Mismatch
	add := func(field, want, have string) {
		out = append(out, Mismatch{File: v.File, Line: s.Line, Step: i + 1, Op: got.Op, Field: field, Want: want, Got: have})
	}
	if w, g := fmtBool(e.Permitted), fmtBool(got.Permitted); w != g {
		add("permitted", w, g)
	}
	if got.State.String() != e.State {
		add("state", e.State, got.State.String())
	}
	want := make([]string, len(e.Events))
	for j, ev := range e.Events {
		want[j] = ev.Type
		if ev.Transition != "" {
			want[j] += " " + ev.Transition
		}
	}
	if w, g := fmtList(want), fmtList(got.Events); w != g {
		add("events", w, g)
	}
	m, wm := got.Metrics, e.Metrics
	rate := func(field string, want float64, have float32) {
		if math.Abs(want-float64(have)) > Tolerance {
			add(field, fmtRate(float32(want)), fmtRate(have))
		}
	}
	rate("metrics.failure_rate", *wm.FailureRate, m.FailureRate)
	rate("metrics.slow_call_rate", *wm.SlowCallRate, m.SlowCallRate)
	ints := []struct {
		field     string
		want, got int64
	}{
		{"metrics.buffered_calls", int64(*wm.BufferedCalls), int64(m.BufferedCalls)},
		{"metrics.failed_calls", int64(*wm.FailedCalls), int64(m.FailedCalls)},
		{"metrics.successful_calls", int64(*wm.SuccessfulCalls), int64(m.SuccessfulCalls)},
		{"metrics.slow_calls", int64(*wm.SlowCalls), int64(m.SlowCalls)},
		{"metrics.slow_successful_calls", int64(*wm.SlowSuccessfulCalls), int64(m.SlowSuccessfulCalls)},
		{"metrics.slow_failed_calls", int64(*wm.SlowFailedCalls), int64(m.SlowFailedCalls)},
		{"metrics.not_permitted_calls", *wm.NotPermittedCalls, m.NotPermittedCalls},
	}
	for _, c := range ints {
		if c.want != c.got {
			add(c.field, strconv.FormatInt(c.want, 10), strconv.FormatInt(c.got, 10))
		}
	}
	if e.Error != got.Error {
		add("error", fmtStr(e.Error), fmtStr(got.Error))
	}
	return out
}

func fmtBool(b *bool) string {
	if b == nil {
		return "null"
	}
	return strconv.FormatBool(*b)
}

func fmtList(l []string) string { return "[" + strings.Join(l, ", ") + "]" }

func fmtStr(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// fmtRate prints a float32 rate as Java's Float.toString does for these values.
func fmtRate(f float32) string {
	s := strconv.FormatFloat(float64(f), 'f', -1, 32)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return s
}

// WriteExplain writes r as a step table: time, op, state, permitted, rates, counts
// and events; a step that differs from the vector is marked with "!" and its
// mismatches follow it.
func WriteExplain(w io.Writer, r *Result) error {
	v := r.Vector
	fmt.Fprintf(w, "%s: %s\n", v.File, v.Name)
	if v.Description != "" {
		fmt.Fprintf(w, "  %s\n", v.Description)
	}
	if len(v.Quirks) > 0 {
		fmt.Fprintf(w, "  quirks: %s\n", strings.Join(v.Quirks, ", "))
	}
	byStep := map[int][]Mismatch{}
	for _, m := range r.Mismatches {
		byStep[m.Step] = append(byStep[m.Step], m)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "\tSTEP\tAT_MS\tOP\tSTATE\tPERMITTED\tFAIL%\tSLOW%\tBUF\tFAILED\tSLOW\tNOT_PERM\tEVENTS")
	for _, s := range r.Steps {
		mark := " "
		if len(byStep[s.Step]) > 0 {
			mark = "!"
		}
		perm := "-"
		if s.Permitted != nil {
			perm = strconv.FormatBool(*s.Permitted)
		}
		ev := strings.Join(s.Events, ", ")
		if s.Error != "" {
			ev = strings.TrimSpace(ev + " threw " + s.Error)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%s\n", mark, s.Step, s.AtMS, s.Op, s.State, perm,
			fmtRate(s.Metrics.FailureRate), fmtRate(s.Metrics.SlowCallRate), s.Metrics.BufferedCalls,
			s.Metrics.FailedCalls, s.Metrics.SlowCalls, s.Metrics.NotPermittedCalls, ev)
		for _, m := range byStep[s.Step] {
			fmt.Fprintf(tw, "!\t\t\t%s: want %s, got %s\n", m.Field, m.Want, m.Got)
		}
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write step table: %w", err)
	}
	status := "matches"
	if !r.OK() {
		status = fmt.Sprintf("%d mismatches", len(r.Mismatches))
	}
	_, err := fmt.Fprintf(w, "%d steps, %s\n", len(r.Steps), status)
	return err
}
