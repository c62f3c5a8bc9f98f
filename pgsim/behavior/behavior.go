// Package behavior is the pure model of the simulated payment gateway: which
// outcome a payment call gets and how long it waits before answering. It does
// no I/O and never sleeps; the HTTP simulator (package pgsim) and the
// virtual-time twin (package sim) run the same code, so with the same seeded
// *rand.Rand they see the same decisions.
package behavior

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"time"
)

// ErrorTiming says when a failing call answers.
type ErrorTiming int

const (
	// Immediate answers a failing call at once (the gateway the field report
	// describes: "40% 확률로 즉시 에러"). This is the default.
	Immediate ErrorTiming = iota
	// AfterLatency sleeps the sampled latency first and then fails, as the
	// original pg-simulator code does (sleep, then decide).
	AfterLatency
)

// String returns "immediate" or "after-latency".
func (t ErrorTiming) String() string {
	switch t {
	case Immediate:
		return "immediate"
	case AfterLatency:
		return "after-latency"
	}
	return fmt.Sprintf("ErrorTiming(%d)", int(t))
}

// ParseErrorTiming reads "immediate" or "after-latency" (case-insensitive;
// "after_latency" and "afterlatency" are accepted too).
func ParseErrorTiming(s string) (ErrorTiming, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "immediate":
		return Immediate, nil
	case "after-latency", "after_latency", "afterlatency":
		return AfterLatency, nil
	}
	return 0, fmt.Errorf("error timing %q: want immediate or after-latency", s)
}

// MarshalText implements encoding.TextMarshaler.
func (t ErrorTiming) MarshalText() ([]byte, error) {
	if t != Immediate && t != AfterLatency {
		return nil, fmt.Errorf("error timing %d is not defined", int(t))
	}
	return []byte(t.String()), nil
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (t *ErrorTiming) UnmarshalText(b []byte) error {
	v, err := ParseErrorTiming(string(b))
	if err != nil {
		return err
	}
	*t = v
	return nil
}

// Outcome is what happens to one payment call.
type Outcome int

const (
	// OutcomeSuccess: the call is accepted (HTTP 200, PENDING transaction).
	OutcomeSuccess Outcome = iota
	// OutcomeError: the call fails with HTTP 500 "현재 서버가 불안정합니다...".
	OutcomeError
	// OutcomeHang: no answer until the client gives up, at most Decision.Delay.
	OutcomeHang
	// OutcomeReset: the connection is closed with a TCP reset, no HTTP answer.
	OutcomeReset
)

// String returns "success", "error", "hang" or "reset".
func (o Outcome) String() string {
	switch o {
	case OutcomeSuccess:
		return "success"
	case OutcomeError:
		return "error"
	case OutcomeHang:
		return "hang"
	case OutcomeReset:
		return "reset"
	}
	return fmt.Sprintf("Outcome(%d)", int(o))
}

// MarshalText implements encoding.TextMarshaler.
func (o Outcome) MarshalText() ([]byte, error) { return []byte(o.String()), nil }

// Decision is the outcome of one payment call and its timing.
type Decision struct {
	// Outcome is how the call ends: success, error, hang or reset.
	Outcome Outcome
	// Delay is how long the gateway waits before it answers (or, for
	// OutcomeHang, the longest it holds the call; for OutcomeReset, before it
	// resets the connection). 0 for an immediate error.
	Delay time.Duration
	// Injected is the latency the gateway adds on purpose; it equals Delay.
	// Kept separate so a caller that scales time can log both.
	Injected time.Duration
}

// Behavior is the configurable behaviour of the simulated gateway. The zero
// value is not valid; start from DefaultBehavior.
type Behavior struct {
	// ErrorRate is the probability, in [0, 1], that a call fails with HTTP 500.
	ErrorRate float64
	// Latency is the distribution of the delay of a succeeding call (and of a
	// failing one when ErrorTiming is AfterLatency).
	Latency Distribution
	// ErrorTiming says whether a failing call answers at once or after the latency.
	ErrorTiming ErrorTiming
	// Slow switches to slow mode: every call takes SlowLatency and ErrorRate is
	// ignored (no 500s). Hang and reset faults still apply when their rates are > 0.
	Slow bool
	// SlowLatency is the latency in slow mode; default 150ms-300ms.
	SlowLatency Distribution
	// HangRate is the probability, in [0, 1], that a call gets no answer until
	// the client gives up, held at most HangMax.
	HangRate float64
	// HangMax bounds a hanging call; it must be > 0 when HangRate > 0.
	HangMax time.Duration
	// ResetRate is the probability, in [0, 1], that the connection is reset
	// instead of answered. The reset comes at once, or after the latency when
	// ErrorTiming is AfterLatency.
	ResetRate float64
}

// DefaultBehavior returns the field report's gateway: 40 % of calls fail at
// once, the others answer after a uniform 100–500 ms; slow mode off (150–300 ms
// when on); no hangs (HangMax 30 s) and no resets.
func DefaultBehavior() Behavior {
	return Behavior{
		ErrorRate:   0.40,
		Latency:     Uniform{Min: 100 * time.Millisecond, Max: 500 * time.Millisecond},
		ErrorTiming: Immediate,
		SlowLatency: DefaultSlowLatency(),
		HangMax:     30 * time.Second,
	}
}

// DefaultSlowLatency returns slow mode's latency, uniform 150–300 ms.
func DefaultSlowLatency() Distribution {
	return Uniform{Min: 150 * time.Millisecond, Max: 300 * time.Millisecond}
}

// FieldError is a validation or decoding error that names the field (by its
// JSON name, for example "errorRate").
type FieldError struct {
	Field string // JSON field name; "" for the document as a whole
	Msg   string // what is wrong with it
}

// Error returns "behavior: FIELD: MSG".
func (e *FieldError) Error() string {
	if e.Field == "" {
		return "behavior: " + e.Msg
	}
	return "behavior: " + e.Field + ": " + e.Msg
}

// ExitCode returns 2: a bad behaviour is a usage or configuration error.
func (e *FieldError) ExitCode() int { return 2 }

func fieldErr(field, format string, args ...any) *FieldError {
	return &FieldError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// Validate checks every field and returns a *FieldError naming the first bad one.
func (b Behavior) Validate() error {
	rates := []struct {
		name string
		v    float64
	}{{"errorRate", b.ErrorRate}, {"hangRate", b.HangRate}, {"resetRate", b.ResetRate}}
	for _, r := range rates {
		if math.IsNaN(r.v) || r.v < 0 || r.v > 1 {
			return fieldErr(r.name, "%v is not a probability in [0, 1]", r.v)
		}
	}
	if err := checkDistribution(b.Latency); err != nil {
		return fieldErr("latency", "%v", err)
	}
	if err := checkDistribution(b.SlowLatency); err != nil {
		return fieldErr("slowLatency", "%v", err)
	}
	if b.ErrorTiming != Immediate && b.ErrorTiming != AfterLatency {
		return fieldErr("errorTiming", "%d is not immediate or after-latency", int(b.ErrorTiming))
	}
	if b.HangMax < 0 || b.HangMax > maxSample {
		return fieldErr("hangMax", "%v is outside [0, 24h]", b.HangMax)
	}
	if b.HangRate > 0 && b.HangMax == 0 {
		return fieldErr("hangMax", "must be > 0 when hangRate is %v", b.HangRate)
	}
	if sum := b.HangRate + b.ResetRate; sum > 1+1e-12 {
		return fieldErr("resetRate", "hangRate + resetRate = %v exceeds 1", sum)
	}
	if sum := b.HangRate + b.ResetRate + b.ErrorRate; !b.Slow && sum > 1+1e-12 {
		return fieldErr("errorRate", "hangRate + resetRate + errorRate = %v exceeds 1", sum)
	}
	return nil
}

// Mix is the probability of each outcome of one call. Each field is a
// probability in [0, 1]; the four sum to 1.
type Mix struct {
	Success, Error, Hang, Reset float64
}

// Mix returns the outcome probabilities Decide realises: hang and reset
// first, then errors (none in slow mode), the rest succeeds.
func (b Behavior) Mix() Mix {
	m := Mix{Hang: b.HangRate, Reset: b.ResetRate}
	if !b.Slow {
		m.Error = b.ErrorRate
	}
	m.Success = math.Max(0, 1-m.Hang-m.Reset-m.Error)
	return m
}

// ActiveLatency returns the distribution in effect: SlowLatency in slow mode
// (DefaultSlowLatency when nil), Latency otherwise (Fixed{0} when nil).
func (b Behavior) ActiveLatency() Distribution {
	if b.Slow {
		if b.SlowLatency == nil {
			return DefaultSlowLatency()
		}
		return b.SlowLatency
	}
	if b.Latency == nil {
		return Fixed{}
	}
	return b.Latency
}

// NewRand returns the random stream pgsim draws its decisions from for seed:
// PCG(seed, 0x5eed0001). A model that wants the same decisions as a pgsim
// server started with the same seed calls Decide on NewRand(seed) in the same
// order as the server received its payment calls.
func NewRand(seed int64) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(seed), 0x5eed_0001))
}

// Decide draws the outcome and delay of one call. It always draws exactly one
// Float64 for the outcome and then one latency sample from ActiveLatency, in
// that order, whatever the outcome, so a seeded r gives the same sequence of
// decisions for the same sequence of calls.
//
// The outcome u in [0, 1) is: hang if u < HangRate; reset if u < HangRate +
// ResetRate; error if u < HangRate + ResetRate + ErrorRate (ErrorRate counts
// as 0 in slow mode); success otherwise.
func (b Behavior) Decide(r *rand.Rand) Decision {
	u := r.Float64()
	lat := b.ActiveLatency().Sample(r)
	m := b.Mix()
	timed := func(o Outcome) Decision {
		if b.ErrorTiming == AfterLatency {
			return Decision{Outcome: o, Delay: lat, Injected: lat}
		}
		return Decision{Outcome: o}
	}
	switch {
	case u < m.Hang:
		return Decision{Outcome: OutcomeHang, Delay: b.HangMax, Injected: b.HangMax}
	case u < m.Hang+m.Reset:
		return timed(OutcomeReset)
	case u < m.Hang+m.Reset+m.Error:
		return timed(OutcomeError)
	}
	return Decision{Outcome: OutcomeSuccess, Delay: lat, Injected: lat}
}

// String summarises the behaviour on one line, for example
// "errors 40% (immediate), latency 100ms-500ms".
func (b Behavior) String() string {
	var sb strings.Builder
	if b.Slow {
		fmt.Fprintf(&sb, "slow mode: latency %v, no errors", b.ActiveLatency())
	} else {
		fmt.Fprintf(&sb, "errors %s (%s), latency %v", pct(b.ErrorRate), b.ErrorTiming, b.ActiveLatency())
	}
	if b.HangRate > 0 {
		fmt.Fprintf(&sb, ", hangs %s (max %v)", pct(b.HangRate), b.HangMax)
	}
	if b.ResetRate > 0 {
		fmt.Fprintf(&sb, ", resets %s", pct(b.ResetRate))
	}
	return sb.String()
}

func pct(p float64) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.4f", p*100), "0"), ".") + "%"
}
