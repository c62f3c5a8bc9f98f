package conformance

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/cbprobe/cbprobe/breaker"
	"github.com/cbprobe/cbprobe/springconf"
)

// RetryVector is a retry vector (docs/conformance.md): executions of a Retry
// whose attempts end as listed, and what the library did.
type RetryVector struct {
	// File is the path the vector was read from.
	File string `json:"-"`
	// Kind is "retry".
	Kind string `json:"kind"`
	// Name is the scenario's kebab-case name.
	Name string `json:"name"`
	// Description is one line of prose.
	Description string `json:"description"`
	// Config holds Spring's retry keys; nil fields take library defaults.
	Config RetryVectorConfig `json:"config"`
	// Steps are the operations in order.
	Steps []RetryStep `json:"steps"`

	lines []int
}

// RetryVectorConfig is a retry vector's "config" block (Spring kebab-case keys).
type RetryVectorConfig struct {
	// MaxAttempts counts the first call (0 means the default, 3).
	MaxAttempts *int `json:"max-attempts,omitempty"`
	// WaitDuration is the base wait between attempts; the interval keys apply only when it is set.
	WaitDuration *Duration `json:"wait-duration,omitempty"`
	// EnableExponentialBackoff multiplies the wait per retry.
	EnableExponentialBackoff *bool `json:"enable-exponential-backoff,omitempty"`
	// ExponentialBackoffMultiplier is > 0 (1.5 when unset).
	ExponentialBackoffMultiplier *float64 `json:"exponential-backoff-multiplier,omitempty"`
	// ExponentialMaxWaitDuration caps the wait (Spring applies it only with the multiplier set,
	// and with randomisation only when the factor is set too).
	ExponentialMaxWaitDuration *Duration `json:"exponential-max-wait-duration,omitempty"`
	// EnableRandomizedWait spreads each wait by ±RandomizedWaitFactor.
	EnableRandomizedWait *bool `json:"enable-randomized-wait,omitempty"`
	// RandomizedWaitFactor is in [0, 1) (0.5 when unset).
	RandomizedWaitFactor *float64 `json:"randomized-wait-factor,omitempty"`
	// RetryExceptions, when set, are the only exception classes retried (subclasses included).
	RetryExceptions []string `json:"retry-exceptions,omitempty"`
	// IgnoreExceptions are never retried.
	IgnoreExceptions []string `json:"ignore-exceptions,omitempty"`
	// FailAfterMaxAttempts throws MaxRetriesExceededException when results exhaust the attempts.
	FailAfterMaxAttempts *bool `json:"fail-after-max-attempts,omitempty"`
	// RetryOnResults stands for a result predicate that is true for these results.
	RetryOnResults []string `json:"retry-on-results,omitempty"`
}

// RetryStep is one retry operation: "execute" (one call through the retry, its
// attempts ending as Attempts lists) or "wait-range" (Samples draws of the wait
// before retry number Attempt, all within the expected bounds).
type RetryStep struct {
	// Op is "execute" or "wait-range".
	Op string `json:"op"`
	// Attempts lists how each attempt ends: "success", "result:X" (returns X) or a
	// fully qualified exception class. The retry must stop within the list.
	Attempts []string `json:"attempts,omitempty"`
	// Attempt is the 1-based retry number of wait-range.
	Attempt int `json:"attempt,omitempty"`
	// Samples is the number of draws of wait-range.
	Samples int `json:"samples,omitempty"`
	// Expect is what the library did.
	Expect RetryExpect `json:"expect"`
}

// RetryExpect is a retry step's "expect" block.
type RetryExpect struct {
	// Calls is the number of attempts made (execute).
	Calls *int `json:"calls,omitempty"`
	// Outcome is "success", "result:X" or "throws:CLASS" (execute).
	Outcome string `json:"outcome,omitempty"`
	// Events are the retry events in order (execute).
	Events []RetryExpectedEvent `json:"events,omitempty"`
	// Metrics are the retry's counters after the step (execute).
	Metrics *RetryExpectedMetrics `json:"metrics,omitempty"`
	// MinMS and MaxMS bound the waits of wait-range, in ms.
	MinMS *int64 `json:"min_ms,omitempty"`
	MaxMS *int64 `json:"max_ms,omitempty"`
}

// RetryExpectedEvent is one retry event.
type RetryExpectedEvent struct {
	// Type is RETRY, SUCCESS, ERROR or IGNORED_ERROR.
	Type string `json:"type"`
	// NumberOfAttempts is getNumberOfRetryAttempts().
	NumberOfAttempts int `json:"number_of_attempts"`
	// WaitMS is the wait before the next attempt (RETRY only).
	WaitMS *int64 `json:"wait_ms,omitempty"`
	// Exception is the class of getLastThrowable(), "" when null.
	Exception string `json:"exception,omitempty"`
}

// RetryExpectedMetrics are Retry.Metrics counters.
type RetryExpectedMetrics struct {
	SuccessfulWithoutRetry int64 `json:"successful_without_retry"`
	SuccessfulWithRetry    int64 `json:"successful_with_retry"`
	FailedWithoutRetry     int64 `json:"failed_without_retry"`
	FailedWithRetry        int64 `json:"failed_with_retry"`
}

// DecodeRetry parses and checks a retry vector.
func DecodeRetry(file string, data []byte) (*RetryVector, error) {
	v := &RetryVector{File: file}
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
	if _, err := v.Config.RetryConfig(); err != nil {
		return nil, &Error{File: file, Field: "config", Msg: err.Error(), Err: err}
	}
	for i, s := range v.Steps {
		bad := func(field, format string, a ...any) error {
			return &Error{File: file, Line: v.lines[i], Step: i + 1, Field: field, Msg: fmt.Sprintf(format, a...)}
		}
		e := s.Expect
		switch s.Op {
		case "execute":
			if len(s.Attempts) == 0 || len(s.Attempts) > 1000 {
				return nil, bad("attempts", "want 1 to 1000 attempts")
			}
			for _, a := range s.Attempts {
				if a == "success" || strings.HasPrefix(a, "result:") {
					continue
				}
				if err := knownExceptionClass(a); err != nil {
					return nil, bad("attempts", "%v (or success, result:X)", err)
				}
			}
			switch {
			case e.Calls == nil:
				return nil, bad("expect.calls", "missing")
			case e.Outcome == "":
				return nil, bad("expect.outcome", "missing")
			case e.Events == nil:
				return nil, bad("expect.events", "missing")
			case e.Metrics == nil:
				return nil, bad("expect.metrics", "missing")
			}
		case "wait-range":
			switch {
			case s.Attempt < 1:
				return nil, bad("attempt", "must be at least 1")
			case s.Samples < 1 || s.Samples > 1_000_000:
				return nil, bad("samples", "want 1 to 1000000")
			case e.MinMS == nil || e.MaxMS == nil || *e.MinMS > *e.MaxMS:
				return nil, bad("expect", "wait-range needs min_ms <= max_ms")
			}
		default:
			return nil, bad("op", "unknown op %q (want execute or wait-range)", s.Op)
		}
	}
	return v, nil
}

// RetryConfig maps the config block as Spring's CommonRetryConfigurationProperties
// does: the interval keys apply only with wait-duration set; the exponential cap
// only with the multiplier set (and, when randomised too, the factor);
// max-attempts 0 keeps the default.
func (c RetryVectorConfig) RetryConfig() (breaker.RetryConfig, error) {
	cfg := breaker.DefaultRetryConfig()
	if c.WaitDuration != nil {
		cfg.WaitDuration = time.Duration(*c.WaitDuration)
		exp := c.EnableExponentialBackoff != nil && *c.EnableExponentialBackoff
		rnd := c.EnableRandomizedWait != nil && *c.EnableRandomizedWait
		cfg.EnableExponentialBackoff, cfg.EnableRandomizedWait = exp, rnd
		if c.ExponentialBackoffMultiplier != nil {
			cfg.ExponentialBackoffMultiplier = *c.ExponentialBackoffMultiplier
		}
		if c.RandomizedWaitFactor != nil {
			cfg.RandomizedWaitFactor = *c.RandomizedWaitFactor
		}
		if exp && c.ExponentialMaxWaitDuration != nil && c.ExponentialBackoffMultiplier != nil && (!rnd || c.RandomizedWaitFactor != nil) {
			cfg.ExponentialMaxWaitDuration = time.Duration(*c.ExponentialMaxWaitDuration)
		}
	}
	if c.MaxAttempts != nil && *c.MaxAttempts != 0 {
		cfg.MaxAttempts = *c.MaxAttempts
	}
	for _, list := range [][]string{c.RetryExceptions, c.IgnoreExceptions} {
		for _, cl := range list {
			if err := knownExceptionClass(cl); err != nil {
				return cfg, err
			}
		}
	}
	cfg.Retryable = springconf.NewRetryPredicate(c.RetryExceptions, c.IgnoreExceptions)
	if len(c.RetryOnResults) > 0 {
		set := map[string]bool{}
		for _, r := range c.RetryOnResults {
			set[r] = true
		}
		cfg.RetryOnResult = func(r any) bool {
			s, ok := r.(string)
			return ok && set[s]
		}
	}
	if c.FailAfterMaxAttempts != nil {
		cfg.FailAfterMaxAttempts = *c.FailAfterMaxAttempts
	}
	return cfg, cfg.Validate()
}

// sleepClock is the retry's clock in a replay: each wait is recorded and passes at once.
type sleepClock struct {
	now    time.Time
	sleeps []time.Duration
}

func (c *sleepClock) Now() time.Time { return c.now }

func (c *sleepClock) AfterFunc(d time.Duration, f func()) breaker.Timer {
	c.sleeps = append(c.sleeps, d)
	c.now = c.now.Add(d)
	f()
	return firedTimer{}
}

type firedTimer struct{}

func (firedTimer) Stop() bool { return false }

// RunRetry replays a retry vector on breaker.Retry.
func RunRetry(v *RetryVector) (*AnyResult, error) {
	cfg, err := v.Config.RetryConfig()
	if err != nil {
		return nil, &Error{File: v.File, Field: "config", Msg: err.Error(), Err: err}
	}
	clk := &sleepClock{now: Epoch()}
	rng := rand.New(rand.NewPCG(20240501, 1))
	r := breaker.NewRetry(v.Name, cfg, clk, rng)
	var events []RetryExpectedEvent
	r.Subscribe(func(e breaker.RetryEvent) {
		ev := RetryExpectedEvent{Type: e.Type, NumberOfAttempts: e.NumberOfAttempts}
		if e.Type == "RETRY" {
			ms := e.WaitInterval.Milliseconds()
			ev.WaitMS = &ms
		}
		if e.Err != nil {
			ev.Exception = javaClassName(e.Err)
		}
		events = append(events, ev)
	})
	res := &AnyResult{Steps: len(v.Steps)}
	for i := range v.Steps {
		s := &v.Steps[i]
		add := func(field, want, got string) {
			res.Mismatches = append(res.Mismatches, Mismatch{File: v.File, Line: v.lines[i], Step: i + 1,
				Op: s.describe(), Field: field, Want: want, Got: got})
		}
		if s.Op == "wait-range" {
			lo, hi := *s.Expect.MinMS, *s.Expect.MaxMS
			gotLo, gotHi, ok := sampleRange(func() int64 { return cfg.Interval(s.Attempt, rng.Float64).Milliseconds() }, s.Samples, lo, hi)
			if !ok {
				add("range", fmt.Sprintf("[%d, %d] ms reached at both ends", lo, hi), fmt.Sprintf("[%d, %d] ms", gotLo, gotHi))
			}
			continue
		}
		events, clk.sleeps = []RetryExpectedEvent{}, nil
		calls, ranOut := 0, false
		result, err := r.ExecuteResult(context.Background(), func(_ context.Context, _ int) (any, error) {
			if calls >= len(s.Attempts) {
				ranOut = true
				return nil, nil
			}
			a := s.Attempts[calls]
			calls++
			switch {
			case a == "success":
				return nil, nil
			case strings.HasPrefix(a, "result:"):
				return strings.TrimPrefix(a, "result:"), nil
			}
			return nil, &JavaError{Class: a}
		})
		if ranOut {
			return nil, &Error{File: v.File, Line: v.lines[i], Step: i + 1, Field: "attempts",
				Msg: fmt.Sprintf("the model asked for attempt %d of a list of %d", calls+1, len(s.Attempts))}
		}
		outcome := "success"
		switch {
		case err != nil:
			outcome = "throws:" + javaClassName(err)
		case result != nil:
			outcome = fmt.Sprintf("result:%v", result)
		}
		e := &s.Expect
		if calls != *e.Calls {
			add("calls", strconv.Itoa(*e.Calls), strconv.Itoa(calls))
		}
		if outcome != e.Outcome {
			add("outcome", e.Outcome, outcome)
		}
		if !sameJSON(e.Events, events) {
			add("events", showJSON(e.Events), showJSON(events))
		}
		m := r.Metrics()
		got := RetryExpectedMetrics{SuccessfulWithoutRetry: m.SuccessfulWithoutRetry, SuccessfulWithRetry: m.SuccessfulWithRetry,
			FailedWithoutRetry: m.FailedWithoutRetry, FailedWithRetry: m.FailedWithRetry}
		if got != *e.Metrics {
			add("metrics", showJSON(*e.Metrics), showJSON(got))
		}
		// The model must also have waited each announced wait on its clock.
		var announced []time.Duration
		for _, ev := range events {
			if ev.WaitMS != nil && *ev.WaitMS > 0 {
				announced = append(announced, millisOf(*ev.WaitMS))
			}
		}
		if !sameJSON(announced, clk.sleeps) {
			add("sleeps", showJSON(announced), showJSON(clk.sleeps))
		}
	}
	return res, nil
}

// sampleRange draws n values and reports whether all lie in [lo, hi] and the
// smallest and largest come within 2 % of the width (at least 1) of the ends.
// For a uniform draw the chance that n draws all miss one end's 2 % is 0.98^n
// (2.8e-18 for n = 2000); the Java verifier applies the same rule.
func sampleRange(draw func() int64, n int, lo, hi int64) (gotLo, gotHi int64, ok bool) {
	gotLo, gotHi = draw(), 0
	gotHi = gotLo
	for i := 1; i < n; i++ {
		x := draw()
		gotLo, gotHi = min(gotLo, x), max(gotHi, x)
	}
	slack := max(1, (hi-lo)/50)
	return gotLo, gotHi, gotLo >= lo && gotHi <= hi && gotLo <= lo+slack && gotHi >= hi-slack
}

func (s *RetryStep) describe() string {
	if s.Op == "wait-range" {
		return fmt.Sprintf("wait-range attempt %d samples %d", s.Attempt, s.Samples)
	}
	return "execute [" + strings.Join(s.Attempts, ", ") + "]"
}
