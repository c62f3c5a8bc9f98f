// Package conformance loads the circuit-breaker conformance vectors recorded from
// the real Resilience4j (format: shared/conformance/README.md) and replays them
// through the breaker package's model on a virtual clock.
package conformance

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/cbprobe/cbprobe/breaker"
)

// Error is a fault in a vector file. File is the path, Line is 1-based (0 unknown),
// Step is the 1-based step number (0: not inside a step), Field names the JSON
// field at fault.
type Error struct {
	// File is the vector file's path.
	File string
	// Line is the 1-based line of the fault, 0 when unknown.
	Line int
	// Step is the 1-based step number, 0 outside the steps.
	Step int
	// Field is the JSON field at fault, such as "op" or "expect.metrics.slow_calls".
	Field string
	// Msg says what is wrong.
	Msg string
	// Err is the underlying error, if any.
	Err error
}

// Error returns "file:line: step N: field: message".
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	if e.Step > 0 {
		fmt.Fprintf(&b, ": step %d", e.Step)
	}
	if e.Field != "" {
		fmt.Fprintf(&b, ": %s", e.Field)
	}
	b.WriteString(": ")
	b.WriteString(e.Msg)
	return b.String()
}

// Unwrap returns the underlying error, if any.
func (e *Error) Unwrap() error { return e.Err }

// ExitCode is 2: a malformed vector is a usage/configuration error.
func (e *Error) ExitCode() int { return 2 }

// Vector is one conformance scenario.
type Vector struct {
	// File is the path the vector was read from.
	File string `json:"-"`
	// Kind is "" or "circuitbreaker" (the public format); "retry" and
	// "timelimiter" vectors are read by LoadAny into other types.
	Kind string `json:"kind,omitempty"`
	// Name is the scenario's kebab-case name.
	Name string `json:"name"`
	// Description is one line of prose.
	Description string `json:"description"`
	// Quirks lists the library quirks the scenario shows (see README "Quirk tags").
	Quirks []string `json:"quirks,omitempty"`
	// Config holds the Spring kebab-case settings; nil fields take library defaults.
	Config VectorConfig `json:"config"`
	// Steps are the operations in order.
	Steps []Step `json:"steps"`
}

// VectorConfig is a vector's "config" block. A nil field is the library default.
type VectorConfig struct {
	// SlidingWindowType is "COUNT_BASED" or "TIME_BASED".
	SlidingWindowType *string `json:"sliding-window-type,omitempty"`
	// SlidingWindowSize is in calls (COUNT_BASED) or seconds (TIME_BASED).
	SlidingWindowSize *int `json:"sliding-window-size,omitempty"`
	// MinimumNumberOfCalls is the number of calls before rates are computed.
	MinimumNumberOfCalls *int `json:"minimum-number-of-calls,omitempty"`
	// FailureRateThreshold is a percentage.
	FailureRateThreshold *float32 `json:"failure-rate-threshold,omitempty"`
	// SlowCallRateThreshold is a percentage.
	SlowCallRateThreshold *float32 `json:"slow-call-rate-threshold,omitempty"`
	// SlowCallDurationThreshold: a call strictly longer is slow.
	SlowCallDurationThreshold *Duration `json:"slow-call-duration-threshold,omitempty"`
	// WaitDurationInOpenState is the fixed OPEN wait.
	WaitDurationInOpenState *Duration `json:"wait-duration-in-open-state,omitempty"`
	// PermittedNumberOfCallsInHalfOpenState is the number of trial calls.
	PermittedNumberOfCallsInHalfOpenState *int `json:"permitted-number-of-calls-in-half-open-state,omitempty"`
	// MaxWaitDurationInHalfOpenState: 0 means no half-open timer.
	MaxWaitDurationInHalfOpenState *Duration `json:"max-wait-duration-in-half-open-state,omitempty"`
	// AutomaticTransitionFromOpenToHalfOpenEnabled starts the OPEN timer.
	AutomaticTransitionFromOpenToHalfOpenEnabled *bool `json:"automatic-transition-from-open-to-half-open-enabled,omitempty"`
	// TransitionToStateAfterWaitDuration is "OPEN" or "CLOSED".
	TransitionToStateAfterWaitDuration *string `json:"transition-to-state-after-wait-duration,omitempty"`
	// The keys below are cbprobe's extension (docs/conformance.md), mapped as Spring maps them.

	// InitialState is the state the breaker starts in.
	InitialState *string `json:"initial-state,omitempty"`
	// EnableExponentialBackoff grows the OPEN wait by ExponentialBackoffMultiplier per opening in a row.
	EnableExponentialBackoff *bool `json:"enable-exponential-backoff,omitempty"`
	// ExponentialBackoffMultiplier is > 0 (1.5 when unset).
	ExponentialBackoffMultiplier *float64 `json:"exponential-backoff-multiplier,omitempty"`
	// ExponentialMaxWaitDurationInOpenState caps the exponential wait (only with the multiplier set).
	ExponentialMaxWaitDurationInOpenState *Duration `json:"exponential-max-wait-duration-in-open-state,omitempty"`
	// EnableRandomizedWait spreads the OPEN wait by ±RandomizedWaitFactor.
	EnableRandomizedWait *bool `json:"enable-randomized-wait,omitempty"`
	// RandomizedWaitFactor is in [0, 1) (0.5 when unset).
	RandomizedWaitFactor *float64 `json:"randomized-wait-factor,omitempty"`
}

// Duration is a duration written in Spring's simple form: "100ms", "10s", or a
// bare integer (string or JSON number) meaning milliseconds.
type Duration time.Duration

// UnmarshalJSON parses "100ms", "10s", "250" or 250.
func (d *Duration) UnmarshalJSON(b []byte) error {
	s := string(b)
	if len(s) >= 2 && s[0] == '"' {
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
	}
	v, err := parseSimpleDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// MarshalJSON writes the duration as "<n>ms".
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(strconv.FormatInt(time.Duration(d).Milliseconds(), 10) + "ms")
}

func parseSimpleDuration(s string) (time.Duration, error) {
	unit := time.Millisecond
	num := s
	switch {
	case strings.HasSuffix(s, "ms"):
		num = strings.TrimSuffix(s, "ms")
	case strings.HasSuffix(s, "s"):
		num, unit = strings.TrimSuffix(s, "s"), time.Second
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 || n > int64(time.Duration(1<<62)/unit) {
		return 0, fmt.Errorf("duration %q: want a non-negative integer followed by ms or s", s)
	}
	return time.Duration(n) * unit, nil
}

// Step is one operation and what the library did.
type Step struct {
	// Line is the 1-based line of the step in its file.
	Line int `json:"-"`
	// AtMS is the time of the step in ms after t0.
	AtMS int64 `json:"at_ms"`
	// Op is call, acquire, record, read, transition or reset.
	Op string `json:"op"`
	// Outcome is success, failure or ignored (call, record).
	Outcome string `json:"outcome,omitempty"`
	// DurationMS is the call's duration in ms (call, record).
	DurationMS *int64 `json:"duration_ms,omitempty"`
	// ID names an acquire, so that a later record can refer to it.
	ID string `json:"id,omitempty"`
	// To is the target state of a transition.
	To string `json:"to,omitempty"`
	// Expect is what the library returned and published.
	Expect Expect `json:"expect"`
}

// Expect is a step's "expect" block.
type Expect struct {
	// Permitted is the tryAcquirePermission result (call, acquire), nil otherwise.
	Permitted *bool `json:"permitted"`
	// State is getState() after the step.
	State string `json:"state"`
	// Events are the events published during the step, in order.
	Events []ExpectedEvent `json:"events"`
	// Metrics is getMetrics() after the step.
	Metrics *ExpectedMetrics `json:"metrics"`
	// Error is the exception class the op threw, "" when none.
	Error string `json:"error,omitempty"`
}

// ExpectedEvent is one published event.
type ExpectedEvent struct {
	// Type is the CircuitBreakerEvent.Type name.
	Type string `json:"type"`
	// Transition is the StateTransition name for STATE_TRANSITION.
	Transition string `json:"transition,omitempty"`
}

// ExpectedMetrics is getMetrics() after a step. Every field is required.
type ExpectedMetrics struct {
	// FailureRate and SlowCallRate are percentages, -1 below the minimum.
	FailureRate  *float64 `json:"failure_rate"`
	SlowCallRate *float64 `json:"slow_call_rate"`
	// BufferedCalls and the counts after it are the window's calls.
	BufferedCalls       *int `json:"buffered_calls"`
	FailedCalls         *int `json:"failed_calls"`
	SuccessfulCalls     *int `json:"successful_calls"`
	SlowCalls           *int `json:"slow_calls"`
	SlowSuccessfulCalls *int `json:"slow_successful_calls"`
	SlowFailedCalls     *int `json:"slow_failed_calls"`
	// NotPermittedCalls counts refusals on the current metrics object.
	NotPermittedCalls *int64 `json:"not_permitted_calls"`
}

// Epoch is t0 of every vector: 1,700,000,000,000 ms after the Unix epoch.
func Epoch() time.Time { return time.UnixMilli(1_700_000_000_000).UTC() }

// BreakerConfig returns the breaker configuration the vector describes, with a
// classifier that ignores *IgnoredError as ignoreExceptions(IgnoredException) does.
func (c VectorConfig) BreakerConfig() (breaker.Config, error) {
	cfg := breaker.DefaultConfig()
	if c.SlidingWindowType != nil {
		w, err := breaker.ParseWindowType(*c.SlidingWindowType)
		if err != nil {
			return cfg, err
		}
		cfg.SlidingWindowType = w
	}
	setInt(&cfg.SlidingWindowSize, c.SlidingWindowSize)
	setInt(&cfg.MinimumNumberOfCalls, c.MinimumNumberOfCalls)
	setInt(&cfg.PermittedNumberOfCallsInHalfOpenState, c.PermittedNumberOfCallsInHalfOpenState)
	if c.FailureRateThreshold != nil {
		cfg.FailureRateThreshold = *c.FailureRateThreshold
	}
	if c.SlowCallRateThreshold != nil {
		cfg.SlowCallRateThreshold = *c.SlowCallRateThreshold
	}
	setDur(&cfg.SlowCallDurationThreshold, c.SlowCallDurationThreshold)
	setDur(&cfg.WaitDurationInOpenState, c.WaitDurationInOpenState)
	setDur(&cfg.MaxWaitDurationInHalfOpenState, c.MaxWaitDurationInHalfOpenState)
	if c.AutomaticTransitionFromOpenToHalfOpenEnabled != nil {
		cfg.AutomaticTransitionFromOpenToHalfOpenEnabled = *c.AutomaticTransitionFromOpenToHalfOpenEnabled
	}
	if c.TransitionToStateAfterWaitDuration != nil {
		s, err := breaker.ParseState(*c.TransitionToStateAfterWaitDuration)
		if err != nil {
			return cfg, err
		}
		cfg.TransitionToStateAfterWaitDuration = s
	}
	if c.InitialState != nil {
		st, err := breaker.ParseState(*c.InitialState)
		if err != nil {
			return cfg, fmt.Errorf("initial-state: %w", err)
		}
		cfg.InitialState = st
	}
	if err := c.openWait(&cfg); err != nil {
		return cfg, err
	}
	cfg.Classify = breaker.ErrorClassifier(nil, breaker.ErrorOfType[*IgnoredError])
	return cfg, cfg.Validate()
}

// openWait maps the OPEN-wait keys as Spring's CommonCircuitBreakerConfigurationProperties
// does: exponential and randomised together are refused; either applies only with
// wait-duration-in-open-state set above 0 ms; the exponential cap only with the
// multiplier set. Randomised waits draw from a fixed-seed generator.
func (c VectorConfig) openWait(cfg *breaker.Config) error {
	exp := c.EnableExponentialBackoff != nil && *c.EnableExponentialBackoff
	rnd := c.EnableRandomizedWait != nil && *c.EnableRandomizedWait
	switch {
	case exp && rnd:
		return errors.New("enable-exponential-backoff and enable-randomized-wait together: Spring refuses this (IllegalStateException)")
	case c.ExponentialBackoffMultiplier != nil && !(*c.ExponentialBackoffMultiplier > 0):
		return fmt.Errorf("exponential-backoff-multiplier: %v must be > 0", *c.ExponentialBackoffMultiplier)
	case c.ExponentialMaxWaitDurationInOpenState != nil && time.Duration(*c.ExponentialMaxWaitDurationInOpenState) < time.Millisecond:
		return errors.New("exponential-max-wait-duration-in-open-state: must be at least 1ms")
	case c.RandomizedWaitFactor != nil && !(*c.RandomizedWaitFactor >= 0 && *c.RandomizedWaitFactor < 1):
		return fmt.Errorf("randomized-wait-factor: %v is not in [0, 1)", *c.RandomizedWaitFactor)
	case c.WaitDurationInOpenState == nil || time.Duration(*c.WaitDurationInOpenState) < time.Millisecond:
		return nil
	}
	wait := time.Duration(*c.WaitDurationInOpenState)
	switch {
	case exp:
		mult, max := 1.5, time.Duration(0)
		if c.ExponentialBackoffMultiplier != nil {
			mult = *c.ExponentialBackoffMultiplier
			if c.ExponentialMaxWaitDurationInOpenState != nil {
				max = time.Duration(*c.ExponentialMaxWaitDurationInOpenState)
			}
		}
		cfg.WaitIntervalFunctionInOpenState = breaker.ExponentialInterval(wait, mult, max)
	case rnd:
		f := 0.5
		if c.RandomizedWaitFactor != nil {
			f = *c.RandomizedWaitFactor
		}
		cfg.WaitIntervalFunctionInOpenState = breaker.RandomizedInterval(wait, f, rand.New(rand.NewPCG(20240501, 16)))
	}
	return nil
}

func setInt(dst *int, v *int) {
	if v != nil {
		*dst = *v
	}
}

func setDur(dst *time.Duration, v *Duration) {
	if v != nil {
		*dst = time.Duration(*v)
	}
}

// IgnoredError stands for the vectors' IgnoredException (configured as ignored).
type IgnoredError struct{}

// Error names the Java class.
func (*IgnoredError) Error() string { return "IgnoredException" }

func opNames() []string { return []string{"call", "acquire", "record", "read", "transition", "reset"} }

func outcomeNames() []string { return []string{"success", "failure", "ignored"} }

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Decode parses and checks one vector. file names the input in errors.
func Decode(file string, data []byte) (*Vector, error) {
	v := &Vector{File: file}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	fail := func(off int64, step int, field, msg string, err error) error {
		return &Error{File: file, Line: lineAt(data, off), Step: step, Field: field, Msg: msg, Err: err}
	}
	// decodeErr turns a decoding error into an *Error. base is where the value
	// being decoded starts: offsets inside errors from dec.Decode count from it.
	decodeErr := func(base int64, step int, field string, err error) error {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &te):
			if te.Field != "" {
				field = joinField(field, te.Field)
			}
			return fail(base+te.Offset, step, field, fmt.Sprintf("JSON %s is not a %s", te.Value, te.Type), err)
		case errors.As(err, &se) && strings.HasPrefix(se.Error(), "unexpected end"):
			return fail(int64(len(data)), step, field, "unexpected end of file", err)
		case errors.As(err, &se):
			return fail(base+se.Offset, step, field, strings.TrimPrefix(se.Error(), "json: "), err)
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			return fail(skipSpace(data, base), step, field, "unknown field "+strings.TrimPrefix(err.Error(), "json: unknown field "), err)
		case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
			return fail(int64(len(data)), step, field, "unexpected end of file", err)
		}
		return fail(base, step, field, strings.TrimPrefix(err.Error(), "json: "), err)
	}
	// tokenErr reports an error from dec.Token, whose offsets are absolute.
	tokenErr := func(step int, field string, err error) error {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return fail(se.Offset, step, field, strings.TrimPrefix(se.Error(), "json: "), err)
		}
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return fail(int64(len(data)), step, field, "unexpected end of file", err)
		}
		return fail(dec.InputOffset(), step, field, err.Error(), err)
	}
	if err := expectDelim(dec, '{'); err != nil {
		return nil, tokenErr(0, "", err)
	}
	seen := map[string]bool{}
	for dec.More() {
		keyOff := skipSpace(data, dec.InputOffset())
		tok, err := dec.Token()
		if err != nil {
			return nil, tokenErr(0, "", err)
		}
		key, _ := tok.(string)
		if seen[key] {
			return nil, fail(keyOff, 0, key, "appears twice", nil)
		}
		seen[key] = true
		start := valueBase(data, dec.InputOffset())
		switch key {
		case "kind":
			err = dec.Decode(&v.Kind)
			if err == nil && v.Kind != KindCircuitBreaker {
				return nil, fail(start, 0, key, fmt.Sprintf("%q is not a circuit-breaker vector (read it with LoadAny)", v.Kind), nil)
			}
		case "name":
			err = dec.Decode(&v.Name)
		case "description":
			err = dec.Decode(&v.Description)
		case "quirks":
			err = dec.Decode(&v.Quirks)
		case "config":
			err = dec.Decode(&v.Config)
		case "steps":
			err = decodeSteps(dec, data, v, decodeErr, tokenErr)
			if err != nil {
				return nil, err
			}
		default:
			return nil, fail(keyOff, 0, key, "unknown field (want kind, name, description, quirks, config, steps)", nil)
		}
		if err != nil {
			return nil, decodeErr(start, 0, key, err)
		}
	}
	if err := expectDelim(dec, '}'); err != nil {
		return nil, tokenErr(0, "", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fail(dec.InputOffset(), 0, "", "unexpected data after the vector object", nil)
	}
	for _, k := range []string{"name", "config", "steps"} {
		if !seen[k] {
			return nil, fail(0, 0, k, "missing", nil)
		}
	}
	if err := v.check(data); err != nil {
		return nil, err
	}
	return v, nil
}

func joinField(a, b string) string {
	if a == "" {
		return b
	}
	return a + "." + b
}

func decodeSteps(dec *json.Decoder, data []byte, v *Vector,
	decodeErr func(int64, int, string, error) error, tokenErr func(int, string, error) error) error {
	if err := expectDelim(dec, '['); err != nil {
		return tokenErr(0, "steps", err)
	}
	lines := lineCounter{data: data}
	for dec.More() {
		base := valueBase(data, dec.InputOffset())
		var s Step
		if err := dec.Decode(&s); err != nil {
			return decodeErr(base, len(v.Steps)+1, "", err)
		}
		s.Line = lines.at(skipSpace(data, base))
		v.Steps = append(v.Steps, s)
	}
	if err := expectDelim(dec, ']'); err != nil {
		return tokenErr(0, "steps", err)
	}
	return nil
}

// valueBase returns where the decoder starts reading the next value from off:
// past the ',' or ':' that separates it from the previous token, which the
// decoder consumes first; offsets in errors from dec.Decode count from there.
func valueBase(data []byte, off int64) int64 {
	p := off
	for p < int64(len(data)) {
		switch data[p] {
		case ' ', '\t', '\r', '\n':
			p++
			continue
		case ',', ':':
			return p + 1
		}
		break
	}
	return off
}

func expectDelim(dec *json.Decoder, want json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if d, ok := tok.(json.Delim); !ok || d != want {
		return fmt.Errorf("found %v where %q was expected", tok, string(want))
	}
	return nil
}

// skipSpace moves off past whitespace and commas to the start of the next value.
func skipSpace(data []byte, off int64) int64 {
	for off < int64(len(data)) {
		switch data[off] {
		case ' ', '\t', '\r', '\n', ',':
			off++
			continue
		}
		break
	}
	return off
}

// lineAt returns the 1-based line of byte offset off.
func lineAt(data []byte, off int64) int {
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	if off < 0 {
		off = 0
	}
	return 1 + bytes.Count(data[:off], []byte{'\n'})
}

// check applies the format's rules that JSON types cannot express.
func (v *Vector) check(data []byte) error {
	if v.Name == "" {
		return &Error{File: v.File, Field: "name", Msg: "empty"}
	}
	if f, n := v.Config.tooLarge(); f != "" {
		return &Error{File: v.File, Line: lineAt(data, int64(bytes.Index(data, []byte(`"`+f+`"`)))), Field: "config." + f,
			Msg: fmt.Sprintf("%d is above this loader's limit of %d", n, MaxSize)}
	}
	if _, err := v.Config.BreakerConfig(); err != nil {
		return &Error{File: v.File, Line: lineAt(data, int64(bytes.Index(data, []byte(`"config"`)))), Field: "config", Msg: err.Error(), Err: err}
	}
	if len(v.Steps) == 0 {
		return &Error{File: v.File, Field: "steps", Msg: "no steps"}
	}
	acquired := map[string]bool{} // id -> recorded
	var last int64
	for i := range v.Steps {
		s := &v.Steps[i]
		bad := func(field, format string, a ...any) error {
			return &Error{File: v.File, Line: s.Line, Step: i + 1, Field: field, Msg: fmt.Sprintf(format, a...)}
		}
		if s.AtMS > MaxMillis {
			return bad("at_ms", "%d is above this loader's limit of %d", s.AtMS, int64(MaxMillis))
		}
		if s.DurationMS != nil && *s.DurationMS > MaxMillis {
			return bad("duration_ms", "%d is above this loader's limit of %d", *s.DurationMS, int64(MaxMillis))
		}
		if s.AtMS < 0 {
			return bad("at_ms", "%d is negative", s.AtMS)
		}
		if s.AtMS < last {
			return bad("at_ms", "%d is before the previous step's %d (time never goes back)", s.AtMS, last)
		}
		last = s.AtMS
		if !contains(opNames(), s.Op) {
			return bad("op", "unknown op %q (want one of %s)", s.Op, strings.Join(opNames(), ", "))
		}
		needOutcome := s.Op == "call" || s.Op == "record"
		switch {
		case needOutcome && !contains(outcomeNames(), s.Outcome):
			return bad("outcome", "unknown outcome %q for op %s (want success, failure or ignored)", s.Outcome, s.Op)
		case !needOutcome && s.Outcome != "":
			return bad("outcome", "not allowed for op %s", s.Op)
		case needOutcome && s.DurationMS == nil:
			return bad("duration_ms", "missing for op %s", s.Op)
		case needOutcome && *s.DurationMS < 0:
			return bad("duration_ms", "%d is negative", *s.DurationMS)
		case !needOutcome && s.DurationMS != nil:
			return bad("duration_ms", "not allowed for op %s", s.Op)
		}
		switch s.Op {
		case "acquire":
			if s.ID == "" {
				return bad("id", "missing for op acquire")
			}
			if _, dup := acquired[s.ID]; dup {
				return bad("id", "%q was acquired before", s.ID)
			}
			acquired[s.ID] = false
		case "record":
			recorded, ok := acquired[s.ID]
			switch {
			case s.ID == "":
				return bad("id", "missing for op record")
			case !ok:
				return bad("id", "%q was not acquired by an earlier step", s.ID)
			case recorded:
				return bad("id", "%q was already recorded", s.ID)
			}
			acquired[s.ID] = true
		default:
			if s.ID != "" {
				return bad("id", "not allowed for op %s", s.Op)
			}
		}
		if s.Op == "transition" {
			if _, err := breaker.ParseState(s.To); err != nil {
				return bad("to", "%v", err)
			}
		} else if s.To != "" {
			return bad("to", "not allowed for op %s", s.Op)
		}
		e := &s.Expect
		wantPermitted := s.Op == "call" || s.Op == "acquire"
		if wantPermitted != (e.Permitted != nil) {
			if wantPermitted {
				return bad("expect.permitted", "must be true or false for op %s", s.Op)
			}
			return bad("expect.permitted", "must be null for op %s", s.Op)
		}
		if _, err := breaker.ParseState(e.State); err != nil {
			return bad("expect.state", "%v", err)
		}
		if e.Events == nil {
			return bad("expect.events", "missing")
		}
		for j, ev := range e.Events {
			f := fmt.Sprintf("expect.events[%d]", j)
			t, err := breaker.ParseEventType(ev.Type)
			if err != nil {
				return bad(f+".type", "%v", err)
			}
			if t == breaker.EventStateTransition {
				if !validTransitionName(ev.Transition) {
					return bad(f+".transition", "%q is not a StateTransition name such as CLOSED_TO_OPEN", ev.Transition)
				}
			} else if ev.Transition != "" {
				return bad(f+".transition", "only STATE_TRANSITION carries a transition")
			}
		}
		if e.Metrics == nil {
			return bad("expect.metrics", "missing")
		}
		if f := e.Metrics.missing(); f != "" {
			return bad("expect.metrics."+f, "missing")
		}
		if e.Error != "" && (e.Error != "IllegalStateTransitionException" || s.Op != "transition") {
			return bad("expect.error", "%q is not expected for op %s (only IllegalStateTransitionException from transition)", e.Error, s.Op)
		}
	}
	return nil
}

// Limits of the loader, far above any real vector, so that a hostile file cannot
// make the model allocate or loop without bound.
const (
	// MaxSize bounds sliding-window-size and permitted-number-of-calls-in-half-open-state.
	MaxSize = 100_000
	// MaxMillis bounds at_ms and duration_ms (about 31 years).
	MaxMillis = 1_000_000_000_000
)

func (c VectorConfig) tooLarge() (string, int) {
	if c.SlidingWindowSize != nil && *c.SlidingWindowSize > MaxSize {
		return "sliding-window-size", *c.SlidingWindowSize
	}
	if c.PermittedNumberOfCallsInHalfOpenState != nil && *c.PermittedNumberOfCallsInHalfOpenState > MaxSize {
		return "permitted-number-of-calls-in-half-open-state", *c.PermittedNumberOfCallsInHalfOpenState
	}
	return "", 0
}

func (m *ExpectedMetrics) missing() string {
	switch {
	case m.FailureRate == nil:
		return "failure_rate"
	case m.SlowCallRate == nil:
		return "slow_call_rate"
	case m.BufferedCalls == nil:
		return "buffered_calls"
	case m.FailedCalls == nil:
		return "failed_calls"
	case m.SuccessfulCalls == nil:
		return "successful_calls"
	case m.SlowCalls == nil:
		return "slow_calls"
	case m.SlowSuccessfulCalls == nil:
		return "slow_successful_calls"
	case m.SlowFailedCalls == nil:
		return "slow_failed_calls"
	case m.NotPermittedCalls == nil:
		return "not_permitted_calls"
	}
	return ""
}

func validTransitionName(s string) bool {
	for _, from := range breaker.AllStates() {
		for _, to := range breaker.AllStates() {
			if from.String()+"_TO_"+to.String() == s {
				return true
			}
		}
	}
	return false
}

// LoadFile reads and decodes one vector file.
func LoadFile(path string) (*Vector, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &Error{File: path, Msg: "cannot read: " + err.Error(), Err: err}
	}
	return Decode(path, data)
}

// Expand turns files and folders into the list of vector files: a folder gives
// its *.json files (not recursive), sorted by name; a file is taken as given.
func Expand(paths []string) ([]string, error) {
	var out []string
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return nil, &Error{File: p, Msg: "cannot read: " + err.Error(), Err: err}
		}
		if !fi.IsDir() {
			out = append(out, p)
			continue
		}
		matches, err := filepath.Glob(filepath.Join(p, "*.json"))
		if err != nil {
			return nil, &Error{File: p, Msg: err.Error(), Err: err}
		}
		if len(matches) == 0 {
			return nil, &Error{File: p, Msg: "folder holds no *.json vector files"}
		}
		sort.Strings(matches)
		out = append(out, matches...)
	}
	return out, nil
}
