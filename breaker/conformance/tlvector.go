package conformance

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"time"

	"github.com/cbprobe/cbprobe/breaker"
)

// TimeLimiterVector is a time-limiter vector (docs/conformance.md): calls of a
// planned duration and outcome through a TimeLimiter in its Future form.
type TimeLimiterVector struct {
	// File is the path the vector was read from.
	File string `json:"-"`
	// Kind is "timelimiter".
	Kind string `json:"kind"`
	// Name is the scenario's kebab-case name.
	Name string `json:"name"`
	// Description is one line of prose.
	Description string `json:"description"`
	// Config holds Spring's time-limiter keys; nil fields take library defaults.
	Config TimeLimiterVectorConfig `json:"config"`
	// Steps are the calls in order.
	Steps []TimeLimiterStep `json:"steps"`

	lines []int
}

// TimeLimiterVectorConfig is a time-limiter vector's "config" block.
type TimeLimiterVectorConfig struct {
	// TimeoutDuration is how long a call may run (default 1s).
	TimeoutDuration *Duration `json:"timeout-duration,omitempty"`
	// CancelRunningFuture cancels the call on timeout (default true).
	CancelRunningFuture *bool `json:"cancel-running-future,omitempty"`
}

// TimeLimiterStep is one call: it would end after DurationMS with Outcome.
type TimeLimiterStep struct {
	// Op is "call".
	Op string `json:"op"`
	// DurationMS is how long the call runs if left alone, in ms. It must differ
	// from the timeout: a call ending exactly at the timeout is a race.
	DurationMS *int64 `json:"duration_ms"`
	// Outcome is "success" or the fully qualified exception class the call ends with.
	Outcome string `json:"outcome"`
	// Expect is what the library did.
	Expect TimeLimiterExpect `json:"expect"`
}

// TimeLimiterExpect is a time-limiter step's "expect" block.
type TimeLimiterExpect struct {
	// Outcome is "success" or "throws:CLASS".
	Outcome string `json:"outcome"`
	// Cancelled says whether the running call was cancelled (future.cancel).
	Cancelled *bool `json:"cancelled"`
	// Events are the time-limiter events in order.
	Events []TimeLimiterExpectedEvent `json:"events"`
}

// TimeLimiterExpectedEvent is one time-limiter event.
type TimeLimiterExpectedEvent struct {
	// Type is SUCCESS, ERROR or TIMEOUT.
	Type string `json:"type"`
}

// DecodeTimeLimiter parses and checks a time-limiter vector.
func DecodeTimeLimiter(file string, data []byte) (*TimeLimiterVector, error) {
	v := &TimeLimiterVector{File: file}
	if err := decodeStrict(file, data, v); err != nil {
		return nil, err
	}
	v.lines = stepLines(data, len(v.Steps))
	if v.Name == "" {
		return nil, &Error{File: file, Field: "name", Msg: "missing"}
	}
	if len(v.Steps) == 0 {
		return nil, &Error{File: file, Field: "steps", Msg: "no steps"}
	}
	cfg := v.Config.TimeLimiterConfig()
	for i, s := range v.Steps {
		bad := func(field, format string, a ...any) error {
			return &Error{File: file, Line: v.lines[i], Step: i + 1, Field: field, Msg: fmt.Sprintf(format, a...)}
		}
		switch {
		case s.Op != "call":
			return nil, bad("op", "unknown op %q (want call)", s.Op)
		case s.DurationMS == nil || *s.DurationMS < 0 || *s.DurationMS > MaxMillis:
			return nil, bad("duration_ms", "missing, negative or above %d", int64(MaxMillis))
		case millisOf(*s.DurationMS) == cfg.TimeoutDuration:
			return nil, bad("duration_ms", "equals the timeout: which ends first is a race")
		case s.Expect.Outcome == "" || s.Expect.Cancelled == nil || s.Expect.Events == nil:
			return nil, bad("expect", "needs outcome, cancelled and events")
		}
		if s.Outcome != "success" {
			if err := knownExceptionClass(s.Outcome); err != nil {
				return nil, bad("outcome", "%v (or success)", err)
			}
		}
	}
	return v, nil
}

// TimeLimiterConfig maps the config block (Spring's keys, library defaults).
func (c TimeLimiterVectorConfig) TimeLimiterConfig() breaker.TimeLimiterConfig {
	cfg := breaker.DefaultTimeLimiterConfig()
	if c.TimeoutDuration != nil {
		cfg.TimeoutDuration = time.Duration(*c.TimeoutDuration)
	}
	if c.CancelRunningFuture != nil {
		cfg.CancelRunningFuture = *c.CancelRunningFuture
	}
	return cfg
}

// replayWait bounds how long the replay waits for the model's goroutines to
// reach a point that needs no clock movement (they never wait on the clock there).
const replayWait = 30 * time.Second

// RunTimeLimiter replays a time-limiter vector on breaker.TimeLimiter with a
// virtual clock. Each call runs in its own goroutine and waits on the clock;
// once the limiter and the call have both scheduled their timers, the clock moves
// to whichever ends first, then to the later one. A call is "cancelled" when its
// context was cancelled before it ended on its own.
func RunTimeLimiter(v *TimeLimiterVector) (*AnyResult, error) {
	cfg := v.Config.TimeLimiterConfig()
	clk := breaker.NewVirtualClock(Epoch())
	tl := breaker.NewTimeLimiter(v.Name, cfg, clk)
	var events []TimeLimiterExpectedEvent
	tl.Subscribe(func(e breaker.TimeLimiterEvent) { events = append(events, TimeLimiterExpectedEvent{Type: e.Type}) })
	res := &AnyResult{Steps: len(v.Steps)}
	for i := range v.Steps {
		s := &v.Steps[i]
		fail := func(msg string) error {
			return &Error{File: v.File, Line: v.lines[i], Step: i + 1, Msg: msg}
		}
		d := millisOf(*s.DurationMS)
		start := clk.Now()
		events = []TimeLimiterExpectedEvent{}
		cancelled := false
		fnDone := make(chan struct{})
		fn := func(ctx context.Context) error {
			defer close(fnDone)
			ended := make(chan struct{})
			clk.AfterFunc(d, func() { close(ended) })
			select {
			case <-ended:
			case <-ctx.Done():
			}
			if ctx.Err() != nil {
				cancelled = true
				return ctx.Err()
			}
			if s.Outcome != "success" {
				return &JavaError{Class: s.Outcome}
			}
			return nil
		}
		result := make(chan error, 1)
		go func() { result <- tl.Execute(context.Background(), fn) }()
		if !waitFor(func() bool { return clk.Pending() >= 2 }) {
			return nil, fail("the time limiter and the call did not both schedule their timers")
		}
		clk.AdvanceTo(start.Add(min(d, cfg.TimeoutDuration)))
		var err error
		select {
		case err = <-result:
		case <-time.After(replayWait):
			return nil, fail("the time limiter did not return after the first timer")
		}
		clk.AdvanceTo(start.Add(max(d, cfg.TimeoutDuration)))
		select {
		case <-fnDone:
		case <-time.After(replayWait):
			return nil, fail("the call did not end after its own timer")
		}
		outcome := "success"
		if err != nil {
			outcome = "throws:" + javaClassName(err)
		}
		add := func(field, want, got string) {
			res.Mismatches = append(res.Mismatches, Mismatch{File: v.File, Line: v.lines[i], Step: i + 1,
				Op: fmt.Sprintf("call %s %dms", s.Outcome, *s.DurationMS), Field: field, Want: want, Got: got})
		}
		e := &s.Expect
		if outcome != e.Outcome {
			add("outcome", e.Outcome, outcome)
		}
		if cancelled != *e.Cancelled {
			add("cancelled", strconv.FormatBool(*e.Cancelled), strconv.FormatBool(cancelled))
		}
		if !sameJSON(e.Events, events) {
			add("events", showJSON(e.Events), showJSON(events))
		}
	}
	return res, nil
}

// waitFor polls cond until it holds or replayWait passes; cond depends only on
// goroutines that are runnable, so it holds at once on an idle machine.
func waitFor(cond func() bool) bool {
	deadline := time.Now().Add(replayWait)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		runtime.Gosched()
		time.Sleep(20 * time.Microsecond)
	}
	return true
}
